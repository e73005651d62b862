"""What the ops return: small dataclasses built from the server's replies."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .errors import ProtocolError


def parse_time(text: str | None) -> datetime | None:
    """The contract's RFC 3339 UTC time ("2026-11-30T03:55:33.123Z") as an aware datetime."""
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ProtocolError(f"tenured sent a time this client cannot read: {text!r}") from None


def _build(cls, message: dict, **overrides: Any):
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in overrides:
            values[f.name] = overrides[f.name]
        elif f.name in message:
            value = message[f.name]
            values[f.name] = parse_time(value) if f.name.endswith(("_at", "_until", "since")) \
                else value
    try:
        return cls(**values)
    except TypeError as e:
        raise ProtocolError(f"tenured sent a reply this client cannot read ({e}): {message}") \
            from None


@dataclass(frozen=True)
class LeaseInfo:
    key: str
    owner: str
    token: int
    acquired_at: datetime | None
    expires_at: datetime | None  # None: open-ended
    ttl_ms: int | None

    @classmethod
    def parse(cls, message: dict) -> "LeaseInfo":
        return _build(cls, message)


@dataclass(frozen=True)
class Acquired(LeaseInfo):
    fresh: bool = True  # False: the owner already held it (idempotent acquire)
    revision: int = 0

    @classmethod
    def parse(cls, message: dict) -> "Acquired":
        return _build(cls, message)


@dataclass(frozen=True)
class Renewed(LeaseInfo):
    revision: int = 0

    @classmethod
    def parse(cls, message: dict) -> "Renewed":
        return _build(cls, message)


@dataclass(frozen=True)
class Released:
    key: str
    token: int | None  # None: nothing was live (idempotent success)
    revision: int | None = None


@dataclass(frozen=True)
class KeepAlive:
    count: int
    revision: int


@dataclass(frozen=True)
class Check:
    """The fencing check. True when the tenure is live; else `reason` says why not."""
    valid: bool
    expires_at: datetime | None = None
    reason: str | None = None
    holder: str | None = None
    token: int | None = None

    def __bool__(self) -> bool:
        return self.valid


@dataclass(frozen=True)
class Waiter:
    owner: str
    since: datetime | None


@dataclass(frozen=True)
class KeyState:
    key: str
    lease: LeaseInfo | None
    last_token: int
    waiters: int
    waiting: list[Waiter] = field(default_factory=list)
    lock_delay_until: datetime | None = None

    @classmethod
    def parse(cls, message: dict) -> "KeyState":
        lease = message.get("lease")
        waiting = [_build(Waiter, w) for w in message.get("waiting") or []]
        return _build(cls, message, lease=LeaseInfo.parse(lease) if lease else None,
                      waiting=waiting)


@dataclass(frozen=True)
class LeasePage:
    leases: list[LeaseInfo]
    next: str | None  # pass as `after` for the following page


@dataclass(frozen=True)
class TenureRecord:
    token: int
    owner: str
    acquired_at: datetime | None
    ended_at: datetime | None
    end: str | None  # released, expired, revoked; None for the live tenure
    revoked_by: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class HistoryPage:
    tenures: list[TenureRecord]
    next: int | None  # pass as `before_token` for the following page


@dataclass(frozen=True)
class Revoked:
    key: str
    token: int
    revision: int


@dataclass(frozen=True)
class Stats:
    version: str
    uptime_ms: int
    revision: int
    live_leases: int
    keys: int
    connections: int
    watchers: int
    ops: dict[str, int]


@dataclass(frozen=True)
class Event:
    """A watch event: type is acquired, renewed, released, expired or revoked."""
    type: str
    revision: int
    key: str
    owner: str | None
    token: int | None
    at: datetime | None
    expires_at: datetime | None
    watch_id: int | None = None
    by: str | None = None
    reason: str | None = None

    @classmethod
    def parse(cls, message: dict) -> "Event":
        return _build(cls, message, type=message.get("event"))


def build(cls, message: dict, **overrides: Any):
    return _build(cls, message, **overrides)
