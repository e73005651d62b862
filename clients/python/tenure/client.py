"""The blocking client: one connection, read by a background thread that hands replies to their
callers by id, watch events to their watches and `lost` notices to their leases."""

from __future__ import annotations

import itertools
import math
import queue
import threading
import time
from datetime import timedelta
from typing import Any, Callable, Iterator, Sequence

from . import types as t
from . import wire
from .defaults import choose_socket, new_owner
from .durations import Duration, to_ms
from .errors import (Compacted, Held, NotHolder, ProtocolError, TenureError, Timeout, Unavailable,
                     from_error_reply)
from .resubscribe import Resubscribe
from .transport import UnixTransport, WebSocketTransport


def _ms(value: Duration | None) -> int | None:
    return None if value is None else to_ms(value)


def _opener(endpoint: str, token: str | None, timeout: float) -> Callable[[], Any]:
    """Opens a transport to a ws:// URL or a socket path."""
    if endpoint.startswith("ws://"):
        return lambda: WebSocketTransport(endpoint, token, timeout)
    return lambda: UnixTransport(endpoint, timeout)


class _Slot:
    __slots__ = ("done", "reply", "error", "on_reply")

    def __init__(self, on_reply: Callable[[dict], None] | None) -> None:
        self.done = threading.Event()
        self.reply: dict | None = None
        self.error: TenureError | None = None
        self.on_reply = on_reply


_CLOSED = object()  # put on a watch's queue when its connection ends


class _Connection:
    """One transport and its reader thread. Once closed it stays closed; the client opens a new
    one on its next call."""

    def __init__(self, transport) -> None:
        self.transport = transport
        self.closed = threading.Event()
        self.close_reason = ""
        self._lock = threading.Lock()
        self._pending: dict[int, _Slot] = {}
        self._watches: dict[int, queue.SimpleQueue] = {}
        self._leases: dict[tuple[str, int], "Lease"] = {}
        threading.Thread(target=self._read, name="tenure-reader", daemon=True).start()

    def call(self, body: dict, timeout: float, on_reply=None) -> dict:
        slot = _Slot(on_reply)
        with self._lock:
            if self.closed.is_set():
                raise Unavailable(self.close_reason)
            self._pending[body["id"]] = slot
        try:
            self.transport.send(wire.encode(body))
        except Unavailable:
            with self._lock:
                self._pending.pop(body["id"], None)
            raise
        if not slot.done.wait(timeout):
            with self._lock:
                self._pending.pop(body["id"], None)
            raise Timeout(f"no reply from tenured at {self.transport.name} within {timeout:g} s")
        if slot.error is not None:
            raise slot.error
        return slot.reply

    def add_watch(self, watch_id: int, inbox: queue.SimpleQueue) -> None:
        with self._lock:
            self._watches[watch_id] = inbox

    def drop_watch(self, watch_id: int) -> None:
        with self._lock:
            self._watches.pop(watch_id, None)

    def add_lease(self, lease: "Lease", token: int) -> None:
        with self._lock:
            self._leases[(lease.key, token)] = lease
        if self.closed.is_set():
            lease._on_disconnect(self)

    def drop_lease(self, key: str, token: int) -> None:
        with self._lock:
            self._leases.pop((key, token), None)

    def close(self) -> None:
        self.transport.close()

    def abandon(self, reason: str) -> None:
        """Ends the connection now (not when the reader notices): the next call opens another."""
        self._fail(reason)

    def _read(self) -> None:
        reason = f"lost the connection to tenured at {self.transport.name}"
        try:
            while (line := self.transport.receive()) is not None:
                try:
                    message = wire.decode(line)
                except ProtocolError:
                    continue
                if "event" in message:
                    self._dispatch_event(message)
                elif message.get("id") is None:
                    # Every request has an id: an error without one is about the connection.
                    if message.get("status") == "error":
                        reason = f"{self.transport.name}: {from_error_reply(message)}"
                else:
                    with self._lock:
                        slot = self._pending.pop(message["id"], None)
                    if slot is not None:
                        if slot.on_reply is not None:
                            slot.on_reply(message)
                        slot.reply = message
                        slot.done.set()
        finally:
            self._fail(reason)

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
            if kind in ("lagged", "compacted"):
                self._watches.pop(message.get("watch_id"), None)
        if inbox is not None:
            inbox.put(message)

    def _fail(self, reason: str) -> None:
        with self._lock:
            if self.closed.is_set():
                return  # abandoned before the reader saw the end
            self.close_reason = reason
            self.closed.set()
            pending, self._pending = self._pending, {}
            watches, self._watches = self._watches, {}
            leases, self._leases = self._leases, {}
        for slot in pending.values():
            slot.error = Unavailable(reason)
            slot.done.set()
        for inbox in watches.values():
            inbox.put(_CLOSED)
        for lease in leases.values():
            lease._on_disconnect(self)
        self.transport.close()


class Client:
    """A connection to tenured: over its Unix socket (`socket`, else $TENURE_SOCKET, else the
    per-user default socket, else the system service's, as the CLI resolves it), or over
    WebSocket (`url`, with the bearer `token` for mutations), or to the first of several
    `endpoints` that answers (socket paths and ws:// URLs: the nodes of a cluster; a broken
    connection, or a call without a reply in time, sends the next call to the next one).
    Thread-safe; a lost connection is reopened by the next call."""

    def __init__(self, socket: str | None = None, *, url: str | None = None,
                 token: str | None = None, timeout: float = 10.0,
                 owner: str | None = None, endpoints: Sequence[str] | None = None) -> None:
        if endpoints:
            if socket is not None or url is not None:
                raise ValueError("tenure.Client takes endpoints, or a socket or url, not both")
            self._endpoints = [(e, _opener(e, token, timeout)) for e in endpoints]
        elif url is not None:
            self._endpoints = [(url, _opener(url, token, timeout))]
        else:
            path, also = choose_socket(socket)
            self._endpoints = [(path, lambda: UnixTransport(path, timeout, also))]
        self._current = 0
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
        return self._endpoints[self._current][0]

    # -- connection --------------------------------------------------------------------------

    def _connection(self) -> _Connection:
        with self._lock:
            if self._closed:
                raise TenureError("this tenure.Client is closed")
            if self._conn is not None and self._conn.closed.is_set():
                self._conn = None
                self._move_on()  # it broke: the next endpoint first (once, not per retry)
            if self._conn is None:
                self._conn = _Connection(self._open())
            return self._conn

    def _move_on(self) -> None:
        self._current = (self._current + 1) % len(self._endpoints)

    def _open(self):
        problems = []
        for _ in self._endpoints:
            try:
                return self._endpoints[self._current][1]()
            except Unavailable as e:
                problems.append(str(e))
                self._move_on()
        raise Unavailable("; ".join(problems))

    def _call(self, op: str, *, conn: _Connection | None = None, extra_timeout: float = 0.0,
              on_reply=None, **fields: Any) -> Any:
        conn = conn or self._connection()
        body = wire.request(op, next(self._ids), **fields)
        try:
            reply = conn.call(body, self.timeout + extra_timeout, on_reply)
        except Timeout as e:
            if len(self._endpoints) > 1:
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

    # -- ops ---------------------------------------------------------------------------------

    def acquire(self, key: str, *, owner: str | None = None, ttl: Duration | None = None,
                wait: Duration | None = None, open_ended: bool = False,
                release_on_disconnect: bool = False,
                lock_delay: Duration | None = None) -> t.Acquired:
        """Take `key` (waiting up to `wait` if held). Raises Held if another owner keeps it."""
        wait_ms = _ms(wait)
        return self._call("acquire", extra_timeout=(wait_ms or 0) / 1000, key=key,
                          owner=owner or self.owner, ttl_ms=_ms(ttl), open_ended=open_ended,
                          wait_ms=wait_ms, release_on_disconnect=release_on_disconnect,
                          lock_delay_ms=_ms(lock_delay))

    def renew(self, key: str, *, owner: str | None = None, ttl: Duration | None = None,
              token: int | None = None) -> t.Renewed:
        """Extend the owner's lease (that tenure, if `token`). Raises NotHolder."""
        return self._call("renew", key=key, owner=owner or self.owner, ttl_ms=_ms(ttl),
                          token=token)

    def release(self, key: str, *, owner: str | None = None,
                token: int | None = None) -> t.Released:
        """End the owner's lease; nothing live is success. Raises NotHolder."""
        return self._call("release", key=key, owner=owner or self.owner, token=token)

    def keepalive(self, *, owner: str | None = None, ttl: Duration | None = None) -> t.KeepAlive:
        """Renew every lease of `owner` this principal acquired."""
        return self._call("keepalive", owner=owner or self.owner, ttl_ms=_ms(ttl))

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
        self._call("ping")

    def watch(self, prefix: str | None = None, *, key: str | None = None,
              from_revision: int | None = None) -> "Watch":
        """Events of `key` or of keys under `prefix` (all keys if neither), replayed from
        `from_revision` if given, resumed across reconnects."""
        return Watch(self, prefix, key, from_revision)

    def lease(self, key: str, *, ttl: Duration | None = None, wait: Duration | None = None,
              owner: str | None = None, release_on_disconnect: bool = False,
              lock_delay: Duration | None = None,
              on_lost: Callable[["Lease"], None] | None = None) -> "Lease":
        """A lease held while the `with` block runs, renewed in the background. Without `owner`
        it gets a fresh one, so two leases never share a tenure."""
        return Lease(self, key, ttl=ttl, wait=wait, owner=owner,
                     release_on_disconnect=release_on_disconnect, lock_delay=lock_delay,
                     on_lost=on_lost)


class Lease:
    """A tenure of one key, renewed at ttl/3 on a background thread. `lost` is set when the lease
    ends without our release: the server's `lost` notice (expired, revoked), a renew refused,
    or no renew getting through before the deadline (connection down). After a reconnect the
    lease is renewed with its token and re-attached to the new connection for `lost` notices;
    a lease that was lost is never acquired again under the same handle."""

    def __init__(self, client: Client, key: str, *, ttl, wait, owner, release_on_disconnect,
                 lock_delay, on_lost) -> None:
        self.client, self.key = client, key
        self.owner = owner or new_owner()
        self.token: int | None = None
        self.expires_at = None
        self.lost = threading.Event()
        self.lost_reason: str | None = None
        self._ttl_ms, self._wait, self._lock_delay = _ms(ttl), wait, lock_delay
        self._release_on_disconnect = release_on_disconnect
        self._on_lost = on_lost
        self._lock = threading.RLock()  # one of acquire/renew/release at a time
        self._stop, self._wake = threading.Event(), threading.Event()
        self._conn: _Connection | None = None
        self._deadline = 0.0  # monotonic: the lease lasts at least until then
        self._thread: threading.Thread | None = None

    def _acquire_on(self, conn: _Connection, wait: Duration | None) -> t.Acquired:
        token = self.token

        def attach(reply: dict) -> None:
            # On the reader thread, before any later line: no `lost` notice can slip past.
            if reply.get("status") == "acquired" and token in (None, reply.get("token")):
                conn.add_lease(self, reply["token"])

        sent = time.monotonic()
        wait_ms = _ms(wait)
        acquired = self.client._call(
            "acquire", conn=conn, extra_timeout=(wait_ms or 0) / 1000, on_reply=attach,
            key=self.key, owner=self.owner, ttl_ms=self._ttl_ms, wait_ms=wait_ms,
            release_on_disconnect=self._release_on_disconnect,
            lock_delay_ms=_ms(self._lock_delay))
        self._ttl_ms = acquired.ttl_ms
        self._set_deadline(sent, acquired)
        return acquired

    def _set_deadline(self, sent: float, lease: t.LeaseInfo) -> None:
        self.expires_at = lease.expires_at
        self._deadline = math.inf if lease.ttl_ms is None else sent + lease.ttl_ms / 1000

    def acquire(self) -> "Lease":
        """Take the key (waiting up to `wait`) and start renewing. Raises Held."""
        with self._lock:
            if self.token is not None:
                raise TenureError(f"this lease of {self.key} was already acquired")
            conn = self.client._connection()
            acquired = self._acquire_on(conn, self._wait)
            self.token, self._conn = acquired.token, conn
        self._thread = threading.Thread(target=self._run, name=f"tenure-lease {self.key}",
                                        daemon=True)
        self._thread.start()
        return self

    def renew(self) -> t.Renewed:
        """Renew now (the background thread does it by itself). Raises NotHolder once lost."""
        with self._lock:
            if self.lost.is_set():
                raise NotHolder(self.key, self.lost_reason or "lost", None, None)
            conn = self.client._connection()
            sent = time.monotonic()
            try:
                renewed = self.client._call("renew", conn=conn, key=self.key, owner=self.owner,
                                            ttl_ms=self._ttl_ms, token=self.token)
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
            self._mark_lost("expired")
            raise NotHolder(self.key, "expired", None, None) from None
        if acquired.token != self.token:
            # Our tenure ended between the renew and this acquire; this one is not ours to keep.
            try:
                self.client._call("release", conn=conn, key=self.key, owner=self.owner,
                                  token=acquired.token)
            finally:
                self._mark_lost("expired")
            raise NotHolder(self.key, "expired", None, None)
        self._conn = conn

    def _run(self) -> None:
        backoff = 0.05
        while True:
            if self._ttl_ms is None:
                delay = None  # open-ended: only a reconnect needs us
            else:
                delay = self._ttl_ms / 3000
            self._wake.wait(delay)
            self._wake.clear()
            while not self._stop.is_set() and not self.lost.is_set():
                try:
                    self.renew()
                    backoff = 0.05
                    break
                except (NotHolder, Held):
                    return
                except TenureError as e:
                    left = self._deadline - time.monotonic()
                    if left <= 0 or self.client.closed:
                        self._mark_lost(f"unreachable: {e}")
                        return
                    self._stop.wait(min(backoff, left))
                    backoff = min(backoff * 2, 1.0)
            if self._stop.is_set() or self.lost.is_set():
                return

    def _on_disconnect(self, conn: _Connection) -> None:
        if conn is not self._conn:
            return
        if self._release_on_disconnect:
            self._mark_lost("disconnected")
        else:
            self._wake.set()

    def _mark_lost(self, reason: str) -> None:
        if self.lost.is_set() or self._stop.is_set():
            return
        self.lost_reason = reason
        self.lost.set()
        self._wake.set()
        if self._on_lost is not None:
            threading.Thread(target=self._on_lost, args=(self,), daemon=True).start()

    def release(self) -> t.Released | None:
        """Stop renewing and release with our token (a no-op if never acquired; best effort once
        lost). Raises Unavailable if a held lease could not be released."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self.token is None:
                return None
            if self._conn is not None:
                self._conn.drop_lease(self.key, self.token)
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

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else "held" if self.token else "not acquired"
        return f"<tenure.Lease {self.key} owner={self.owner} token={self.token} {state}>"


class Watch:
    """An iterator of Events. On a dropped connection it reconnects (with backoff) and resumes
    from the revision after the last event it gave; `lagged` resumes the same way. A resume
    older than the ledger keeps raises Compacted."""

    def __init__(self, client: Client, prefix: str | None, key: str | None,
                 from_revision: int | None) -> None:
        self.client = client
        self._prefix, self._key = prefix, key
        self.next_revision = from_revision  # where a resume starts; None: live only
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._conn: _Connection | None = None
        self.watch_id: int | None = None
        # Waited on by the caller: given up after the client's timeout, as a resume never is.
        self._subscribe(client.timeout)

    def _start(self) -> None:
        conn = self.client._connection()
        inbox = self._inbox

        def register(reply: dict) -> None:
            if reply.get("status") == "watching":
                conn.add_watch(reply["watch_id"], inbox)

        reply = self.client._call("watch", conn=conn, on_reply=register, prefix=self._prefix,
                                  key=self._key, from_revision=self.next_revision)
        self._conn, self.watch_id = conn, reply["watch_id"]
        if self.next_revision is None:
            self.next_revision = reply["revision"] + 1

    def _subscribe(self, budget: float | None) -> None:
        """Subscribes from next_revision. Unavailable (no reply, the connection lost,
        `unavailable`) is tried again with backoff, on the next endpoint with several, until
        `budget` seconds after the first failure (None: no limit)."""
        retry = Resubscribe(budget)
        while True:
            try:
                return self._start()
            except Unavailable as e:
                delay = None if self._closed or self.client.closed else retry.delay(e)
                if delay is None:
                    raise
                time.sleep(delay)

    def _resume(self) -> None:
        if not self._closed:
            try:
                return self._subscribe(None)
            except TenureError:
                if not (self._closed or self.client.closed):
                    raise
        raise StopIteration

    def __iter__(self) -> Iterator[t.Event]:
        return self

    def __next__(self) -> t.Event:
        return self.next()

    def next(self, timeout: Duration | None = None) -> t.Event:
        """The next event; raises Timeout after `timeout` without one."""
        deadline = None if timeout is None else time.monotonic() + to_ms(timeout) / 1000
        while True:
            if self._closed:
                raise StopIteration
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                item = self._inbox.get(timeout=left)
            except queue.Empty:
                raise Timeout("no watch event within the timeout") from None
            if item is _CLOSED:
                self._resume()
                continue
            if item.get("watch_id") != self.watch_id:
                continue  # from a watch this one replaced
            kind = item["event"]
            if kind == "lagged":
                self.next_revision = item["resume_from"]
                self._resume()
            elif kind == "compacted":
                self._closed = True
                raise Compacted(self.next_revision, item["oldest_revision"])
            else:
                event = t.Event.parse(item)
                if event.revision < self.next_revision:
                    continue
                self.next_revision = event.revision + 1
                return event

    def close(self) -> None:
        """Stop the watch (unwatch) and end the iteration."""
        if self._closed:
            return
        self._closed = True
        conn = self._conn
        if conn is not None and not conn.closed.is_set():
            conn.drop_watch(self.watch_id)
            try:
                self.client._call("unwatch", conn=conn, watch_id=self.watch_id)
            except TenureError:
                pass
        self._inbox.put(_CLOSED)

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
