"""The wire vocabulary: each op with the fields it defines (v1.1 refuses any other), request
formatting, and the reading of replies into results or exceptions."""

from __future__ import annotations

import json
from typing import Any

from . import types as t
from .errors import Held, NotHolder, ProtocolError, from_error_reply

# op -> the fields it may carry besides id and op. Never send another (contract §2).
OPS: dict[str, tuple[str, ...]] = {
    "acquire": ("key", "owner", "ttl_ms", "open_ended", "wait_ms", "release_on_disconnect",
                "lock_delay_ms"),
    "renew": ("key", "owner", "ttl_ms", "token"),
    "keepalive": ("owner", "ttl_ms"),
    "release": ("key", "owner", "token"),
    "check": ("key", "token", "owner"),
    "get": ("key",),
    "list": ("prefix", "limit", "after"),
    "history": ("key", "limit", "before_token"),
    "watch": ("prefix", "key", "from_revision"),
    "unwatch": ("watch_id",),
    "revoke": ("key", "reason"),
    "stats": (),
    "ping": (),
}


def request(op: str, request_id: int, **fields: Any) -> dict:
    """The request object. Absent options (None, and False for flags) are left out."""
    allowed = OPS[op]
    body: dict[str, Any] = {"id": request_id, "op": op}
    for name, value in fields.items():
        if name not in allowed:
            raise TypeError(f"{op} takes no field {name!r}")
        if value is None or value is False:
            continue
        body[name] = value
    return body


def encode(body: dict) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def decode(line: str | bytes) -> dict:
    try:
        message = json.loads(line)
    except ValueError:
        raise ProtocolError(f"tenured sent a line that is not JSON: {line[:200]!r}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"tenured sent a line that is not a JSON object: {line[:200]!r}")
    return message


def _expect(reply: dict, *statuses: str) -> str:
    status = reply.get("status")
    if status == "error":
        raise from_error_reply(reply)
    if status == "held":
        raise Held(reply.get("key", ""), reply.get("holder"), reply.get("token"),
                   t.parse_time(reply.get("expires_at")), reply.get("reason"),
                   reply.get("retry_after_ms"))
    if status == "not_holder" and "not_holder" not in statuses:
        raise NotHolder(reply.get("key", ""), reply.get("reason", ""), reply.get("holder"),
                        reply.get("token"))
    if status not in statuses:
        raise ProtocolError(f"unexpected reply from tenured: {reply}")
    return status


def result(op: str, reply: dict) -> Any:
    """The reply of `op` as its dataclass; statuses that mean failure raise."""
    if op == "acquire":
        _expect(reply, "acquired")
        return t.Acquired.parse(reply)
    if op == "renew":
        _expect(reply, "renewed")
        return t.Renewed.parse(reply)
    if op == "keepalive":
        _expect(reply, "renewed")
        return t.build(t.KeepAlive, reply)
    if op == "release":
        _expect(reply, "released")
        return t.build(t.Released, reply)
    if op == "check":
        if _expect(reply, "valid", "not_holder") == "valid":
            return t.Check(True, t.parse_time(reply.get("expires_at")))
        return t.build(t.Check, reply, valid=False)
    if op == "get":
        _expect(reply, "ok")
        return t.KeyState.parse(reply)
    if op == "list":
        _expect(reply, "ok")
        return t.LeasePage([t.LeaseInfo.parse(x) for x in reply.get("leases", [])],
                           reply.get("next"))
    if op == "history":
        _expect(reply, "ok")
        return t.HistoryPage([t.build(t.TenureRecord, x) for x in reply.get("tenures", [])],
                             reply.get("next"))
    if op == "revoke":
        _expect(reply, "revoked")
        return t.build(t.Revoked, reply)
    if op == "stats":
        _expect(reply, "ok")
        return t.build(t.Stats, reply)
    if op == "ping":
        _expect(reply, "pong")
        return None
    if op == "watch":
        _expect(reply, "watching")
        return reply
    if op == "unwatch":
        _expect(reply, "unwatched")
        return None
    raise ValueError(f"unknown op {op}")
