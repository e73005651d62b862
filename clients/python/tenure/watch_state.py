"""A watch's position and rules, shared by tenure.Watch and tenure.aio.Watch: each adds how it
waits for its inbox and calls the daemon."""

from __future__ import annotations

import time
from typing import Any

from . import types as t
from .dispatch import CLOSED
from .errors import Compacted, TenureError, Timeout, Unavailable, from_error_reply
from .resubscribe import Resubscribe

RESUME = object()  # what `_take` says when the watch must subscribe again


class WatchClosed(TenureError):
    """next() on a watch that was closed, or whose client was: iterating just ends."""


class WatchState:
    """A subclass provides `_inbox` (a queue of its kind, fed by the connection)."""

    _inbox: Any

    def __init__(self, client: Any, prefix: str | None, key: str | None,
                 from_revision: int | None) -> None:
        self.client = client
        self._prefix, self._key = prefix, key
        self.next_revision = from_revision  # where a resume starts; None: live only
        self._closed = False
        self._ended: TenureError | None = None  # what ended the watch: every next() raises it
        self._conn: Any = None
        self.watch_id: int | None = None
        # A resume due: its backoff and when it tries next, kept across next() calls so that
        # one given up at its timeout goes on where it was.
        self._resuming: Resubscribe | None = None
        self._resume_at = 0.0
        # Replays the daemon could not read its event log for, one after another.
        self._replay_failures: Resubscribe | None = None
        self._replay_failed_at = 0.0

    def _watch_call(self, conn: Any) -> dict:
        """The arguments of the client's `_call` for subscribing on `conn`."""
        inbox = self._inbox

        def register(reply: dict) -> None:
            if reply.get("status") == "watching":
                conn.add_watch(reply["watch_id"], inbox)

        return dict(conn=conn, on_reply=register, prefix=self._prefix, key=self._key,
                    from_revision=self.next_revision)

    def _started(self, conn: Any, reply: dict) -> None:
        self._conn, self.watch_id = conn, reply["watch_id"]
        self._resuming = None
        if self.next_revision is None:
            self.next_revision = reply["revision"] + 1

    def _resubscribe_after(self, retry: Resubscribe, error: Unavailable) -> float | None:
        """Seconds to wait before subscribing again after `error` (Unavailable: no reply, the
        connection lost, `unavailable`; the next call goes to the next endpoint, with several),
        or None to give up with it."""
        return None if self._closed or self.client.closed else retry.delay(error)

    def _end(self, error: TenureError) -> TenureError:
        """Ends the watch with `error`, which the caller raises (and every later next())."""
        self._closed, self._ended = True, error
        return error

    def _check_open(self) -> None:
        if self._ended is not None:
            raise self._ended

    def _resume_due(self, after: float = 0.0) -> object:
        """The server ended our subscription (or its connection ended): subscribe again from
        next_revision, `after` seconds from now."""
        self._resuming = Resubscribe(None)
        self._resume_at = time.monotonic() + after
        return RESUME

    def _resume_wait(self, deadline: float | None) -> float:
        """Seconds to wait before the resume's next try (0: now). Raises Timeout when the
        caller's `deadline` comes first: a later next() goes on from there, so no event is
        lost or given twice."""
        self._check_open()
        now = time.monotonic()
        if self._resume_at <= now:
            return 0.0
        if deadline is not None and deadline <= now:
            raise Timeout("no watch event within the timeout")
        return self._resume_at - now if deadline is None else min(self._resume_at, deadline) - now

    def _resume_failed(self, error: TenureError) -> None:
        """After a resume's subscription failed: Unavailable is tried again (backoff from 50 ms
        to 2 s, as long as it takes); any other error ends the watch, which a closed watch or
        client ends quietly. Raises what ends it."""
        self._check_open()  # closed meanwhile
        if self.client.closed:
            raise self._end(WatchClosed("the client of this watch is closed"))
        if not isinstance(error, Unavailable):
            raise self._end(error)
        self._resume_at = time.monotonic() + self._resuming.delay(error)

    def _replay_failed(self, item: dict) -> float:
        """Seconds to wait before resuming after the daemon could not read its event log for
        our replay (an `error` event). One that keeps failing, with no event and no quiet
        `timeout` between, ends the watch after the client's timeout with that Unavailable:
        resubscribing would get nowhere, and the caller is told rather than left waiting."""
        error = from_error_reply(item)
        now, budget = time.monotonic(), self.client.timeout
        if self._replay_failures is None or now - self._replay_failed_at > budget:
            self._replay_failures = Resubscribe(budget)
        self._replay_failed_at = now
        if (delay := self._replay_failures.delay(error)) is None:
            raise self._end(error)
        return delay

    def _take(self, item: Any) -> t.Event | object | None:
        """What an inbox item means: an Event to give, RESUME, or None (nothing to give).
        Raises Compacted when the daemon no longer keeps where the watch was."""
        if item is CLOSED:
            return self._resume_due()
        if item.get("watch_id") != self.watch_id:
            return None  # from a watch this one replaced
        kind = item["event"]
        if kind == "lagged":
            self.next_revision = item["resume_from"]
            return self._resume_due()
        if kind == "error":
            # Like `lagged`: every event before resume_from was sent, none from it on.
            self.next_revision = item["resume_from"]
            return self._resume_due(self._replay_failed(item))
        if kind == "compacted":
            raise self._end(Compacted(self.next_revision, item["oldest_revision"]))
        event = t.Event.parse(item)
        if event.revision < self.next_revision:
            return None
        self.next_revision = event.revision + 1
        self._replay_failures = None  # getting on: a later failure starts afresh
        return event

    def _stop(self) -> Any:
        """Marks the watch closed; the connection to send `unwatch` on, if any."""
        subscribed = not self._closed and self._resuming is None
        self._end(WatchClosed("the watch is closed"))
        conn = self._conn
        if not subscribed or conn is None or conn.closed:
            return None
        conn.drop_watch(self.watch_id)
        return conn
