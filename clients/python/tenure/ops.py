"""Every op of the protocol, declared once for both clients. Each method builds its request and
hands it to the client's `_call`: tenure.Client's returns the result, tenure.aio.Client's an
awaitable of it, so `await client.acquire(...)` there is `client.acquire(...)` here."""

from __future__ import annotations

from typing import Any, Callable

from . import types as t
from .durations import Duration, to_ms


def ms(value: Duration | None) -> int | None:
    return None if value is None else to_ms(value)


class Ops:
    """The ops of a client whose default owner is `self.owner`. A subclass defines `_call(op, *,
    extra_timeout, **fields)` and names its `_Lease` and `_Watch` classes."""

    owner: str
    _Lease: type
    _Watch: type

    def _call(self, op: str, *, extra_timeout: float = 0.0, **fields: Any) -> Any:
        raise NotImplementedError

    def acquire(self, key: str, *, owner: str | None = None, ttl: Duration | None = None,
                wait: Duration | None = None, open_ended: bool = False,
                release_on_disconnect: bool = False,
                lock_delay: Duration | None = None) -> t.Acquired:
        """Take `key` (waiting up to `wait` if held). Raises Held if another owner keeps it."""
        wait_ms = ms(wait)
        return self._call("acquire", extra_timeout=(wait_ms or 0) / 1000, key=key,
                          owner=owner or self.owner, ttl_ms=ms(ttl), open_ended=open_ended,
                          wait_ms=wait_ms, release_on_disconnect=release_on_disconnect,
                          lock_delay_ms=ms(lock_delay))

    def renew(self, key: str, *, owner: str | None = None, ttl: Duration | None = None,
              token: int | None = None) -> t.Renewed:
        """Extend the owner's lease (that tenure, if `token`). Raises NotHolder."""
        return self._call("renew", key=key, owner=owner or self.owner, ttl_ms=ms(ttl),
                          token=token)

    def release(self, key: str, *, owner: str | None = None,
                token: int | None = None) -> t.Released:
        """End the owner's lease; nothing live is success. Raises NotHolder."""
        return self._call("release", key=key, owner=owner or self.owner, token=token)

    def keepalive(self, *, owner: str | None = None, ttl: Duration | None = None) -> t.KeepAlive:
        """Renew every lease of `owner` this principal acquired."""
        return self._call("keepalive", owner=owner or self.owner, ttl_ms=ms(ttl))

    def check(self, key: str, token: int, *, owner: str | None = None) -> t.Check:
        """The fencing check: is tenure `token` the live tenure of `key`? (a falsy Check if not)"""
        return self._call("check", key=key, token=token, owner=owner)

    def get(self, key: str) -> t.KeyState:
        return self._call("get", key=key)

    def list(self, prefix: str | None = None, *, limit: int | None = None,
             after: str | None = None) -> t.LeasePage:
        return self._call("list", prefix=prefix, limit=limit, after=after)

    def history(self, key: str, *, limit: int | None = None,
                before_token: int | None = None) -> t.HistoryPage:
        return self._call("history", key=key, limit=limit, before_token=before_token)

    def revoke(self, key: str, *, reason: str | None = None) -> t.Revoked:
        """End whoever's tenure of `key` (admin only: Forbidden otherwise)."""
        return self._call("revoke", key=key, reason=reason)

    def stats(self) -> t.Stats:
        return self._call("stats")

    def ping(self) -> None:
        return self._call("ping")

    def watch(self, prefix: str | None = None, *, key: str | None = None,
              from_revision: int | None = None):
        """Events of `key` or of keys under `prefix` (all keys if neither), replayed from
        `from_revision` if given, resumed across reconnects."""
        return self._Watch(self, prefix, key, from_revision)

    def lease(self, key: str, *, ttl: Duration | None = None, wait: Duration | None = None,
              owner: str | None = None, release_on_disconnect: bool = False,
              lock_delay: Duration | None = None, on_lost: Callable[[Any], None] | None = None):
        """A lease held while the `with` block runs, renewed in the background. Without `owner`
        it gets a fresh one, so two leases never share a tenure."""
        return self._Lease(self, key, ttl=ttl, wait=wait, owner=owner,
                           release_on_disconnect=release_on_disconnect, lock_delay=lock_delay,
                           on_lost=on_lost)
