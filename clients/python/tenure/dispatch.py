"""What one connection routes the lines it reads to, shared by both clients: callers waiting for
a reply by id, watches' inboxes by watch id, and leases told of `lost` by key and token."""

from __future__ import annotations

import threading
from typing import Any, Callable

from . import wire
from .errors import ProtocolError, Unavailable, from_error_reply

CLOSED = object()  # put on a watch's inbox when its connection ends


class Dispatch:
    """A subclass says how a waiting caller is answered (`_answer`) or refused (`_refuse`).
    Inboxes take `put_nowait`; leases have `_mark_lost(reason)` and `_on_disconnect(conn)`. The
    lock matters to the blocking client (a reader thread and its callers); it is never held
    across I/O, so asyncio loses nothing by it. Once failed, a connection stays failed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.close_reason = ""
        # Why the connection ended, if the daemon said so before it did.
        self.end_reason = f"lost the connection to tenured at {name}"
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[Any, Callable[[dict], None] | None]] = {}
        self._watches: dict[int, Any] = {}
        self._leases: dict[tuple[str, int], Any] = {}

    def _answer(self, waiter: Any, reply: dict) -> None:
        raise NotImplementedError

    def _refuse(self, waiter: Any, error: Unavailable) -> None:
        raise NotImplementedError

    def expect(self, request_id: int, waiter: Any, on_reply: Callable[[dict], None] | None) -> None:
        """`on_reply` runs on the reading side before any later line is routed."""
        with self._lock:
            if self.closed:
                raise Unavailable(self.close_reason)
            self._pending[request_id] = (waiter, on_reply)

    def forget(self, request_id: int) -> None:
        with self._lock:
            self._pending.pop(request_id, None)

    def add_watch(self, watch_id: int, inbox: Any) -> None:
        with self._lock:
            self._watches[watch_id] = inbox

    def drop_watch(self, watch_id: int) -> None:
        with self._lock:
            self._watches.pop(watch_id, None)

    def add_lease(self, lease: Any, token: int) -> None:
        with self._lock:
            self._leases[(lease.key, token)] = lease
            closed = self.closed
        if closed:
            lease._on_disconnect(self)

    def drop_lease(self, key: str, token: int) -> None:
        with self._lock:
            self._leases.pop((key, token), None)

    def route(self, line: str) -> None:
        try:
            message = wire.decode(line)
        except ProtocolError:
            return
        if "event" in message:
            self._dispatch_event(message)
        elif message.get("id") is None:
            # Every request has an id: an error without one is about the connection.
            if message.get("status") == "error":
                self.end_reason = f"{self.name}: {from_error_reply(message)}"
        else:
            with self._lock:
                waiter, on_reply = self._pending.pop(message["id"], (None, None))
            if waiter is not None:
                if on_reply is not None:
                    on_reply(message)
                self._answer(waiter, message)

    def _dispatch_event(self, message: dict) -> None:
        kind = message["event"]
        if kind == "lost":
            with self._lock:
                lease = self._leases.pop((message.get("key"), message.get("token")), None)
            if lease is not None:
                lease._mark_lost(message.get("reason") or "lost")
            return
        with self._lock:
            inbox = self._watches.get(message.get("watch_id"))
            if kind in ("lagged", "compacted", "error"):  # the server cancelled the watch
                self._watches.pop(message.get("watch_id"), None)
        if inbox is not None:
            inbox.put_nowait(message)

    def fail(self, reason: str) -> bool:
        """Ends the connection's books: callers refused, watches told, leases told. False if it
        had ended already."""
        with self._lock:
            if self.closed:
                return False
            self.closed, self.close_reason = True, reason
            pending, self._pending = self._pending, {}
            watches, self._watches = self._watches, {}
            leases, self._leases = self._leases, {}
        for waiter, _ in pending.values():
            self._refuse(waiter, Unavailable(reason))
        for inbox in watches.values():
            inbox.put_nowait(CLOSED)
        for lease in leases.values():
            lease._on_disconnect(self)
        return True
