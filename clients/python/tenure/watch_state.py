"""A watch's position and rules, shared by tenure.Watch and tenure.aio.Watch: each adds how it
waits for its inbox and calls the daemon."""

from __future__ import annotations

from typing import Any

from . import types as t
from .dispatch import CLOSED
from .errors import Compacted, Unavailable
from .resubscribe import Resubscribe

RESUME = object()  # what `_take` says when the watch must subscribe again


class WatchState:
    """A subclass provides `_inbox` (a queue of its kind, fed by the connection)."""

    _inbox: Any

    def __init__(self, client: Any, prefix: str | None, key: str | None,
                 from_revision: int | None) -> None:
        self.client = client
        self._prefix, self._key = prefix, key
        self.next_revision = from_revision  # where a resume starts; None: live only
        self._closed = False
        self._conn: Any = None
        self.watch_id: int | None = None

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
        if self.next_revision is None:
            self.next_revision = reply["revision"] + 1

    def _resubscribe_after(self, retry: Resubscribe, error: Unavailable) -> float | None:
        """Seconds to wait before subscribing again after `error` (Unavailable: no reply, the
        connection lost, `unavailable`; the next call goes to the next endpoint, with several),
        or None to give up with it."""
        return None if self._closed or self.client.closed else retry.delay(error)

    def _resume_given_up(self) -> bool:
        """After a resume failed: True when the watch or its client was closed meanwhile (the
        iteration just ends), False when the failure is the caller's to see."""
        return self._closed or self.client.closed

    def _take(self, item: Any) -> t.Event | object | None:
        """What an inbox item means: an Event to give, RESUME, or None (nothing to give).
        Raises Compacted when the daemon no longer keeps where the watch was."""
        if item is CLOSED:
            return RESUME
        if item.get("watch_id") != self.watch_id:
            return None  # from a watch this one replaced
        kind = item["event"]
        if kind == "lagged":
            self.next_revision = item["resume_from"]
            return RESUME
        if kind == "compacted":
            self._closed = True
            raise Compacted(self.next_revision, item["oldest_revision"])
        event = t.Event.parse(item)
        if event.revision < self.next_revision:
            return None
        self.next_revision = event.revision + 1
        return event

    def _stop(self) -> Any:
        """Marks the watch closed; the connection to send `unwatch` on, if any."""
        self._closed = True
        conn = self._conn
        if conn is None or conn.closed:
            return None
        conn.drop_watch(self.watch_id)
        return conn
