"""A lease handle's state and rules, shared by tenure.Lease and tenure.aio.Lease: each adds how
it waits (a thread or a task) and calls the daemon."""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any, Callable

from . import types as t
from .defaults import new_owner
from .durations import Duration
from .errors import NotHolder, TenureError
from .ops import ms

log = logging.getLogger("tenure")


class RenewRetry:
    """After failed renews: how long to wait before the next, from 50 ms doubling up to 1 s,
    until the lease's deadline passes (then it is lost)."""

    def __init__(self, lease: "LeaseState") -> None:
        self._lease, self._backoff = lease, 0.05

    def after(self, error: TenureError) -> float | None:
        """Seconds to wait after `error`, or None when the lease is lost (its deadline passed
        without a renew getting through, or the client closed)."""
        left = self._lease._deadline - time.monotonic()
        if left <= 0 or self._lease.client.closed:
            self._lease._mark_lost(f"unreachable: {error}")
            return None
        delay, self._backoff = min(self._backoff, left), min(self._backoff * 2, 1.0)
        return delay


class LeaseState:
    """A subclass provides `lost` and `_wake` (Events of its kind), `_stopping()`, and
    `_tell_lost()`, which runs the `on_lost` callback its way."""

    lost: Any
    _wake: Any
    _shown_as = "tenure.Lease"

    def __init__(self, client: Any, key: str, *, ttl: Duration | None, wait: Duration | None,
                 owner: str | None, release_on_disconnect: bool, lock_delay: Duration | None,
                 on_lost: Callable[[Any], None] | None) -> None:
        self.client, self.key = client, key
        self.owner = owner or new_owner()
        self.token: int | None = None
        self.expires_at = None
        self.lost_reason: str | None = None
        self._ttl_ms, self._wait, self._lock_delay = ms(ttl), wait, lock_delay
        self._release_on_disconnect = release_on_disconnect
        self._on_lost = on_lost
        self._conn: Any = None  # the connection that tells us of `lost`
        self._deadline = 0.0  # monotonic: the lease lasts at least until then
        # Makes the first of two losses (a `lost` notice on the reading side, a renew refused)
        # the one reported. Not `_lock`: a renew holds that while the reader answers it.
        self._marking = threading.Lock()

    def _stopping(self) -> bool:
        raise NotImplementedError

    def _renew_extra_timeout(self) -> float:
        """How much sooner than the client's timeout a renew gives up waiting for its reply: not
        after the lease's deadline, past which the lease is lost whatever the reply says."""
        left = max(self._deadline - time.monotonic(), 0.001)
        return min(0.0, left - self.client.timeout)

    def _tell_lost(self) -> None:
        raise NotImplementedError

    def _acquire_call(self, conn: Any, wait: Duration | None) -> dict:
        """The arguments of the client's `_call` for an acquire of this lease on `conn`."""
        token = self.token

        def attach(reply: dict) -> None:
            # On the reading side, before any later line: no `lost` notice can slip past.
            if reply.get("status") == "acquired" and token in (None, reply.get("token")):
                conn.add_lease(self, reply["token"])

        wait_ms = ms(wait)
        return dict(conn=conn, extra_timeout=(wait_ms or 0) / 1000, on_reply=attach,
                    key=self.key, owner=self.owner, ttl_ms=self._ttl_ms, wait_ms=wait_ms,
                    release_on_disconnect=self._release_on_disconnect,
                    lock_delay_ms=ms(self._lock_delay))

    def _acquired(self, sent: float, acquired: t.Acquired) -> None:
        self._ttl_ms = acquired.ttl_ms
        self._set_deadline(sent, acquired)

    def _set_deadline(self, sent: float, lease: t.LeaseInfo) -> None:
        self.expires_at = lease.expires_at
        self._deadline = math.inf if lease.ttl_ms is None else sent + lease.ttl_ms / 1000

    def _check_first_acquire(self) -> None:
        if self.token is not None:
            raise TenureError(f"this lease of {self.key} was already acquired")

    def _check_not_lost(self) -> None:
        if self.lost.is_set():
            raise NotHolder(self.key, self.lost_reason or "lost", None, None)

    def _expired(self) -> NotHolder:
        """Our tenure ended while we were away: marks it lost, for the caller to raise."""
        self._mark_lost("expired")
        return NotHolder(self.key, "expired", None, None)

    def _renew_every(self) -> float | None:
        """Seconds between renewals: a third of the ttl; None when open-ended."""
        return None if self._ttl_ms is None else self._ttl_ms / 3000

    def _on_disconnect(self, conn: Any) -> None:
        if conn is not self._conn:
            return
        if self._release_on_disconnect:
            self._mark_lost("disconnected")
        else:
            self._wake.set()

    def _mark_lost(self, reason: str) -> None:
        with self._marking:
            if self.lost.is_set() or self._stopping():
                return
            self.lost_reason = reason
            self.lost.set()
        self._wake.set()
        if self._on_lost is not None:
            self._tell_lost()

    def _call_on_lost(self) -> Any:
        """Runs the `on_lost` callback; what it raised is logged, not passed on to whoever
        noticed the loss (a reader, a renew)."""
        try:
            return self._on_lost(self)
        except Exception:
            log.exception("the on_lost callback of %r raised", self)
            return None

    def _forget_connection(self) -> None:
        """Before a release: a `lost` notice of our own release is not a loss."""
        if self._conn is not None:
            self._conn.drop_lease(self.key, self.token)

    def __repr__(self) -> str:
        state = ("lost" if self.lost.is_set() else "not acquired" if self.token is None
                 else "released" if self._stopping() else "held")
        return f"<{self._shown_as} {self.key} owner={self.owner} token={self.token} {state}>"
