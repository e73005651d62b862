"""The blocking client: one connection, read by a background thread that hands replies to their
callers by id, watch events to their watches and `lost` notices to their leases."""

from __future__ import annotations

import itertools
import queue
import threading
import time
from typing import Any, Iterator, Sequence

from . import types as t
from . import wire
from .defaults import new_owner
from .dispatch import CLOSED, Dispatch
from .durations import Duration, to_ms
from .endpoints import Endpoints
from .errors import Held, NotHolder, TenureError, Timeout, Unavailable
from .lease_state import LeaseState, RenewRetry
from .ops import Ops
from .resubscribe import Resubscribe
from .transport import UnixTransport, WebSocketTransport
from .watch_state import RESUME, WatchClosed, WatchState


class _Slot:
    __slots__ = ("done", "reply", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: dict | None = None
        self.error: TenureError | None = None


class _Connection(Dispatch):
    """One transport and its reader thread. Once closed it stays closed; the client opens a new
    one on its next call."""

    def __init__(self, transport) -> None:
        super().__init__(transport.name)
        self.transport = transport
        threading.Thread(target=self._read, name="tenure-reader", daemon=True).start()

    def call(self, body: dict, timeout: float, on_reply=None) -> dict:
        slot = _Slot()
        self.expect(body["id"], slot, on_reply)
        try:
            self.transport.send(wire.encode(body))
        except Unavailable:
            self.forget(body["id"])
            raise
        if not slot.done.wait(timeout):
            self.forget(body["id"])
            raise Timeout(f"no reply from tenured at {self.name} within {timeout:g} s")
        if slot.error is not None:
            raise slot.error
        return slot.reply

    def _answer(self, slot: _Slot, reply: dict) -> None:
        slot.reply = reply
        slot.done.set()

    def _refuse(self, slot: _Slot, error: Unavailable) -> None:
        slot.error = error
        slot.done.set()

    def close(self) -> None:
        self.transport.close()

    def abandon(self, reason: str) -> None:
        """Ends the connection now (not when the reader notices): the next call opens another."""
        self._end(reason)

    def _read(self) -> None:
        try:
            while (line := self.transport.receive()) is not None:
                self.route(line)
        finally:
            self._end(self.end_reason)

    def _end(self, reason: str) -> None:
        if self.fail(reason):  # abandoned before the reader saw the end, if not
            self.transport.close()


class Client(Ops):
    """A connection to tenured: over its Unix socket (`socket`, else $TENURE_SOCKET, else the
    per-user default socket, else the system service's, as the CLI resolves it), or over
    WebSocket (`url`, with the bearer `token` for mutations), or to the first of several
    `endpoints` that answers (socket paths and ws:// URLs: the nodes of a cluster; a broken
    connection, or a call without a reply in time, sends the next call to the next one).
    Thread-safe; a lost connection is reopened by the next call."""

    def __init__(self, socket: str | None = None, *, url: str | None = None,
                 token: str | None = None, timeout: float = 10.0,
                 owner: str | None = None, endpoints: Sequence[str] | None = None) -> None:
        self._endpoints = Endpoints("tenure.Client", socket, url, endpoints, token, timeout,
                                    UnixTransport, WebSocketTransport)
        self.timeout = timeout
        self.owner = owner or new_owner()  # this client's default owner
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._conn: _Connection | None = None
        self._closed = False
        self._connection()

    @property
    def address(self) -> str:
        """The endpoint in use (or tried next)."""
        return self._endpoints.current

    # -- connection --------------------------------------------------------------------------

    def _connection(self) -> _Connection:
        with self._lock:
            if self._closed:
                raise TenureError("this tenure.Client is closed")
            if self._conn is not None and self._conn.closed:
                self._conn = None
                self._endpoints.move_on()  # it broke: the next endpoint first (once, not per retry)
            if self._conn is None:
                self._conn = _Connection(self._open())
            return self._conn

    def _open(self):
        tries = self._endpoints.tries()
        for open_one in tries:
            try:
                return open_one()
            except Unavailable as e:
                tries.failed(e)

    def _call(self, op: str, *, conn: _Connection | None = None, extra_timeout: float = 0.0,
              on_reply=None, **fields: Any) -> Any:
        conn = conn or self._connection()
        body = wire.request(op, next(self._ids), **fields)
        try:
            reply = conn.call(body, self.timeout + extra_timeout, on_reply)
        except Timeout as e:
            if self._endpoints.several:
                conn.abandon(str(e))  # a daemon that stalls is as good as gone when another answers
            raise
        return wire.result(op, reply)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Lease(LeaseState):
    """A tenure of one key, renewed at ttl/3 on a background thread. `lost` is set when the lease
    ends without our release: the server's `lost` notice (expired, revoked), a renew refused,
    or no renew getting through before the deadline (connection down). After a reconnect the
    lease is renewed with its token and re-attached to the new connection for `lost` notices;
    a lease that was lost is never acquired again under the same handle."""

    def __init__(self, client: Client, key: str, **options: Any) -> None:
        super().__init__(client, key, **options)
        self.lost = threading.Event()
        self._lock = threading.RLock()  # one of acquire/renew/release at a time
        self._stop, self._wake = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None

    def _stopping(self) -> bool:
        return self._stop.is_set()

    def _tell_lost(self) -> None:
        threading.Thread(target=self._call_on_lost, daemon=True).start()

    def _acquire_on(self, conn: _Connection, wait: Duration | None) -> t.Acquired:
        sent = time.monotonic()
        acquired = self.client._call("acquire", **self._acquire_call(conn, wait))
        self._acquired(sent, acquired)
        return acquired

    def acquire(self) -> "Lease":
        """Take the key (waiting up to `wait`) and start renewing. Raises Held."""
        with self._lock:
            self._check_first_acquire()
            conn = self.client._connection()
            self.token, self._conn = self._acquire_on(conn, self._wait).token, conn
        self._thread = threading.Thread(target=self._run, name=f"tenure-lease {self.key}",
                                        daemon=True)
        self._thread.start()
        return self

    def renew(self) -> t.Renewed:
        """Renew now (the background thread does it by itself). Raises NotHolder once lost."""
        with self._lock:
            self._check_not_lost()
            conn = self.client._connection()
            sent = time.monotonic()
            try:
                renewed = self.client._call(
                    "renew", conn=conn, extra_timeout=self._renew_extra_timeout(), key=self.key,
                    owner=self.owner, ttl_ms=self._ttl_ms, token=self.token)
            except NotHolder as e:
                self._mark_lost(e.reason)
                raise
            self._set_deadline(sent, renewed)
            if conn is not self._conn:
                self._reattach(conn)
            return renewed

    def _reattach(self, conn: _Connection) -> None:
        """Make `conn` the connection told of this lease's loss: an idempotent acquire."""
        try:
            acquired = self._acquire_on(conn, None)
        except Held:
            raise self._expired() from None
        if acquired.token != self.token:
            # Our tenure ended between the renew and this acquire; this one is not ours to keep.
            try:
                self.client._call("release", conn=conn, key=self.key, owner=self.owner,
                                  token=acquired.token)
            finally:
                error = self._expired()
            raise error
        self._conn = conn

    def _run(self) -> None:
        while not self._stop.is_set() and not self.lost.is_set():
            self._wake.wait(self._renew_every())  # None (open-ended): only a reconnect wakes us
            self._wake.clear()
            retry = RenewRetry(self)
            while not self._stop.is_set() and not self.lost.is_set():
                try:
                    self.renew()
                    break
                except (NotHolder, Held):
                    return
                except TenureError as e:
                    if (delay := retry.after(e)) is None:
                        return
                    self._stop.wait(delay)

    def release(self) -> t.Released | None:
        """Stop renewing and release with our token (a no-op if never acquired or once lost: the
        tenure is over). Raises Unavailable if a held lease could not be released."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self.token is None or self.lost.is_set():
                return None
            self._forget_connection()
            try:
                return self.client._call("release", key=self.key, owner=self.owner,
                                         token=self.token)
            except NotHolder:
                return None  # it is somebody else's now: nothing of ours to release
            except TenureError:
                if self.lost.is_set():
                    return None  # the tenure already ended: the release was only a courtesy
                raise

    def check(self) -> t.Check:
        """The fencing check of this tenure."""
        return self.client.check(self.key, self.token, owner=self.owner)

    def __enter__(self) -> "Lease":
        return self.acquire()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.release()
        except TenureError:
            if exc_type is None:
                raise  # else the block's own exception is the one to see


class Watch(WatchState):
    """An iterator of Events. On a dropped connection it reconnects (with backoff) and resumes
    from the revision after the last event it gave; `lagged` and a replay the daemon could not
    read (an `error` event) resume the same way. A resume older than the ledger keeps raises
    Compacted. next() on a closed watch raises TenureError; iterating just ends."""

    def __init__(self, client: Client, prefix: str | None, key: str | None,
                 from_revision: int | None) -> None:
        super().__init__(client, prefix, key, from_revision)
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        # Waited on by the caller: given up after the client's timeout, as a resume never is.
        self._subscribe(client.timeout)

    def _subscribe(self, budget: float) -> None:
        """Subscribes from next_revision, trying again until `budget` seconds after the first
        failure."""
        retry = Resubscribe(budget)
        while True:
            try:
                conn = self.client._connection()
                return self._started(conn, self.client._call("watch", **self._watch_call(conn)))
            except Unavailable as e:
                if (delay := self._resubscribe_after(retry, e)) is None:
                    raise
                time.sleep(delay)

    def _resume(self, deadline: float | None) -> None:
        """Subscribes again from next_revision, with the backoff where the last try left it;
        raises Timeout at `deadline` (the next call goes on)."""
        while True:
            while (wait := self._resume_wait(deadline)) > 0:
                time.sleep(wait)
            try:
                conn = self.client._connection()
                return self._started(conn, self.client._call("watch", **self._watch_call(conn)))
            except TenureError as e:
                self._resume_failed(e)

    def __iter__(self) -> Iterator[t.Event]:
        return self

    def __next__(self) -> t.Event:
        try:
            return self.next()
        except WatchClosed:
            raise StopIteration from None

    def next(self, timeout: Duration | None = None) -> t.Event:
        """The next event; raises Timeout after `timeout` without one (the watch goes on, also
        when it was resubscribing), TenureError once the watch is closed."""
        deadline = None if timeout is None else time.monotonic() + to_ms(timeout) / 1000
        while True:
            self._check_open()
            if self._resuming is not None:
                self._resume(deadline)
                continue
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                item = self._inbox.get(timeout=left)
            except queue.Empty:
                raise Timeout("no watch event within the timeout") from None
            taken = self._take(item)
            if taken is not None and taken is not RESUME:
                return taken

    def close(self) -> None:
        """Stop the watch (unwatch) and end the iteration."""
        if isinstance(self._ended, WatchClosed):
            return
        conn = self._stop()
        if conn is not None:
            try:
                self.client._call("unwatch", conn=conn, watch_id=self.watch_id)
            except TenureError:
                pass
        self._inbox.put(CLOSED)  # wakes a next() waiting in another thread

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


Client._Lease, Client._Watch = Lease, Watch
