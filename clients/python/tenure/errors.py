"""The exceptions of the client: every one is a TenureError."""

from __future__ import annotations


class TenureError(Exception):
    """Base of every error this package raises. `code` is the server's error code, if any."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Held(TenureError):
    """acquire found the key held by another owner (or in lock-delay)."""

    def __init__(self, key: str, holder: str | None, token: int | None, expires_at,
                 reason: str | None = None, retry_after_ms: int | None = None) -> None:
        what = f"{key} is held by {holder}, token {token}" if holder else f"{key} is held"
        if reason == "lock_delay":
            what = f"{key} is in lock-delay for {retry_after_ms} ms more (last token {token})"
        super().__init__(what)
        self.key, self.holder, self.token, self.expires_at = key, holder, token, expires_at
        self.reason, self.retry_after_ms = reason, retry_after_ms


class NotHolder(TenureError):
    """renew, release or revoke: the caller does not hold that tenure. `reason` is the server's:
    expired, held_by_other, free or token_mismatch."""

    def __init__(self, key: str, reason: str, holder: str | None, token: int | None) -> None:
        super().__init__(f"not the holder of {key}: {reason}"
                         + (f" (held by {holder}, token {token})" if holder else ""))
        self.key, self.reason, self.holder, self.token = key, reason, holder, token


class Forbidden(TenureError):
    """forbidden (another principal's lease, revoke by a non-admin) or unauthenticated (a
    mutation over a WebSocket opened without the bearer token)."""


class Unavailable(TenureError):
    """The server cannot answer now: not running, unreachable, shutting down, its ledger does not
    accept writes, too many connections, or no reply in time."""


class Timeout(Unavailable, TimeoutError):
    """No reply within the call's timeout."""


class ProtocolError(TenureError):
    """A request the server refused as malformed (bad_request, frame_too_large), an internal
    error, or a reply this client cannot understand."""


class Compacted(TenureError):
    """A watch asked to resume from a revision the ledger no longer keeps."""

    def __init__(self, from_revision: int, oldest_revision: int) -> None:
        super().__init__(f"cannot resume the watch from revision {from_revision}: the ledger keeps "
                         f"events from revision {oldest_revision} on", "compacted")
        self.from_revision, self.oldest_revision = from_revision, oldest_revision


_BY_CODE = {
    "forbidden": Forbidden,
    "unauthenticated": Forbidden,
    "unavailable": Unavailable,
    "too_many_requests": Unavailable,
}


def from_error_reply(reply: dict) -> TenureError:
    """The exception for a {"status":"error"} reply."""
    code = reply.get("error")
    message = reply.get("message") or code or "error"
    return _BY_CODE.get(code, ProtocolError)(f"{code}: {message}", code)
