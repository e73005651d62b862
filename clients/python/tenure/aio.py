"""The asyncio client: the same ops, leases and watches as tenure.Client, on one connection read
by a task.

    async with tenure.aio.Client() as client:
        async with client.lease("pr/1051", ttl="15m", wait="30s") as lease:
            ...
        async for event in client.watch(prefix="pr/"):
            ...
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from typing import Any, Callable, Sequence

from . import types as t
from . import websocket as ws
from . import wire
from .defaults import choose_socket, new_owner
from .durations import Duration, to_ms
from .errors import (Compacted, Held, NotHolder, ProtocolError, TenureError, Timeout, Unavailable,
                     from_error_reply)
from .resubscribe import Resubscribe
from .transport import connect_problem


def _ms(value: Duration | None) -> int | None:
    return None if value is None else to_ms(value)


def _opener(endpoint: str, token: str | None, timeout: float) -> Callable[[], Any]:
    """Opens a stream to a ws:// URL or a socket path (a coroutine)."""
    if endpoint.startswith("ws://"):
        return lambda: _WebSocketStream.open(endpoint, token, timeout)
    return lambda: _UnixStream.open(endpoint, timeout)


_CLOSED = object()


class _UnixStream:
    @classmethod
    async def open(cls, path: str, timeout: float,
                   also_looked_for: str | None = None) -> "_UnixStream":
        self = cls()
        self.name = path
        try:
            self.reader, self.writer = await asyncio.wait_for(
                asyncio.open_unix_connection(path, limit=16 << 20), timeout)
        except OSError as e:
            raise Unavailable(f"cannot connect to {path}: {connect_problem(e, also_looked_for)}") \
                from None
        except asyncio.TimeoutError:
            raise Unavailable(f"cannot connect to {path}: no answer within {timeout:g} s") \
                from None
        return self

    async def send(self, text: str) -> None:
        try:
            self.writer.write(text.encode() + b"\n")
            await self.writer.drain()
        except OSError as e:
            raise Unavailable(f"lost the connection to tenured at {self.name}: {e}") from None

    async def receive(self) -> str | None:
        while True:
            try:
                line = await self.reader.readline()
            except (OSError, ValueError):
                return None
            if not line:
                return None
            if line.strip():
                return line.decode("utf-8", "replace")

    def close(self) -> None:
        self.writer.close()


class _WebSocketStream:
    @classmethod
    async def open(cls, url: str, token: str | None, timeout: float) -> "_WebSocketStream":
        self = cls()
        self.name = url
        host, port, _ = ws.split_url(url)
        try:
            self.reader, self.writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), timeout)
            request, key = ws.handshake(url, token)
            self.writer.write(request)
            head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            problem = connect_problem(e) if isinstance(e, OSError) else "no handshake answer"
            raise Unavailable(f"cannot connect to {url}: {problem}") from None
        ws.check_answer(url, head[:-4], key)
        self.decoder, self.messages = ws.Decoder(), []
        return self

    async def send(self, text: str) -> None:
        try:
            self.writer.write(ws.frame(ws.TEXT, text.encode()))
            await self.writer.drain()
        except OSError as e:
            raise Unavailable(f"lost the connection to tenured at {self.name}: {e}") from None

    async def receive(self) -> str | None:
        while True:
            while self.messages:
                opcode, payload = self.messages.pop(0)
                if opcode == ws.TEXT:
                    return payload.decode("utf-8", "replace")
                if opcode == ws.PING:
                    self.writer.write(ws.frame(ws.PONG, payload))
                elif opcode == ws.CLOSE:
                    return None
            try:
                data = await self.reader.read(65536)
            except OSError:
                return None
            if not data:
                return None
            self.messages = self.decoder.feed(data)

    def close(self) -> None:
        self.writer.close()


class _Connection:
    def __init__(self, stream) -> None:
        self.stream = stream
        self.closed = False
        self.close_reason = ""
        self._pending: dict[int, tuple[asyncio.Future, Callable | None]] = {}
        self._watches: dict[int, asyncio.Queue] = {}
        self._leases: dict[tuple[str, int], "Lease"] = {}
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def call(self, body: dict, timeout: float, on_reply=None) -> dict:
        if self.closed:
            raise Unavailable(self.close_reason)
        future = asyncio.get_running_loop().create_future()
        self._pending[body["id"]] = (future, on_reply)
        try:
            await self.stream.send(wire.encode(body))
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"no reply from tenured at {self.stream.name} within {timeout:g} s") \
                from None
        finally:
            self._pending.pop(body["id"], None)

    async def _read(self) -> None:
        reason = f"lost the connection to tenured at {self.stream.name}"
        try:
            while (line := await self.stream.receive()) is not None:
                try:
                    message = wire.decode(line)
                except ProtocolError:
                    continue
                if "event" in message:
                    self._dispatch_event(message)
                elif message.get("id") is None:
                    if message.get("status") == "error":
                        reason = f"{self.stream.name}: {from_error_reply(message)}"
                else:
                    future, on_reply = self._pending.pop(message["id"], (None, None))
                    if future is not None and not future.done():
                        if on_reply is not None:
                            on_reply(message)
                        future.set_result(message)
        finally:
            self._fail(reason)

    def _dispatch_event(self, message: dict) -> None:
        kind = message["event"]
        if kind == "lost":
            lease = self._leases.pop((message.get("key"), message.get("token")), None)
            if lease is not None:
                lease._mark_lost(message.get("reason") or "lost")
            return
        inbox = self._watches.get(message.get("watch_id"))
        if kind in ("lagged", "compacted"):
            self._watches.pop(message.get("watch_id"), None)
        if inbox is not None:
            inbox.put_nowait(message)

    def _fail(self, reason: str) -> None:
        self.closed, self.close_reason = True, reason
        for future, _ in self._pending.values():
            if not future.done():
                future.set_exception(Unavailable(reason))
        self._pending = {}
        for inbox in self._watches.values():
            inbox.put_nowait(_CLOSED)
        self._watches = {}
        leases, self._leases = self._leases, {}
        for lease in leases.values():
            lease._on_disconnect(self)
        self.stream.close()

    def close(self) -> None:
        self._task.cancel()
        if not self.closed:
            self._fail("closed")


class Client:
    """tenure.Client on asyncio. Connects on `async with` or `await connect()` (or the first
    call); a lost connection is reopened by the next call, with `endpoints` on the next one."""

    def __init__(self, socket: str | None = None, *, url: str | None = None,
                 token: str | None = None, timeout: float = 10.0,
                 owner: str | None = None, endpoints: Sequence[str] | None = None) -> None:
        if endpoints:
            if socket is not None or url is not None:
                raise ValueError("tenure.aio.Client takes endpoints, or a socket or url, not both")
            self._endpoints = [(e, _opener(e, token, timeout)) for e in endpoints]
        elif url is not None:
            self._endpoints = [(url, _opener(url, token, timeout))]
        else:
            path, also = choose_socket(socket)
            self._endpoints = [(path, lambda: _UnixStream.open(path, timeout, also))]
        self._current = 0
        self.timeout = timeout
        self.owner = owner or new_owner()
        self._ids = itertools.count(1)
        self._conn: _Connection | None = None
        self._connecting = asyncio.Lock()
        self.closed = False

    @property
    def address(self) -> str:
        """The endpoint in use (or tried next)."""
        return self._endpoints[self._current][0]

    async def connect(self) -> "Client":
        await self._connection()
        return self

    async def _connection(self) -> _Connection:
        async with self._connecting:
            if self.closed:
                raise TenureError("this tenure.aio.Client is closed")
            if self._conn is not None and self._conn.closed:
                self._conn = None
                self._move_on()  # it broke: the next endpoint first (once, not per retry)
            if self._conn is None:
                self._conn = _Connection(await self._open())
            return self._conn

    def _move_on(self) -> None:
        self._current = (self._current + 1) % len(self._endpoints)

    async def _open(self):
        problems = []
        for _ in self._endpoints:
            try:
                return await self._endpoints[self._current][1]()
            except Unavailable as e:
                problems.append(str(e))
                self._move_on()
        raise Unavailable("; ".join(problems))

    async def _call(self, op: str, *, conn: _Connection | None = None,
                    extra_timeout: float = 0.0, on_reply=None, **fields: Any) -> Any:
        conn = conn or await self._connection()
        body = wire.request(op, next(self._ids), **fields)
        try:
            reply = await conn.call(body, self.timeout + extra_timeout, on_reply)
        except Timeout:
            if len(self._endpoints) > 1:
                conn.close()  # a daemon that stalls is as good as gone when another can answer
            raise
        return wire.result(op, reply)

    async def close(self) -> None:
        self.closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def __aenter__(self) -> "Client":
        return await self.connect()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def acquire(self, key: str, *, owner: str | None = None, ttl: Duration | None = None,
                      wait: Duration | None = None, open_ended: bool = False,
                      release_on_disconnect: bool = False,
                      lock_delay: Duration | None = None) -> t.Acquired:
        wait_ms = _ms(wait)
        return await self._call("acquire", extra_timeout=(wait_ms or 0) / 1000, key=key,
                                owner=owner or self.owner, ttl_ms=_ms(ttl),
                                open_ended=open_ended, wait_ms=wait_ms,
                                release_on_disconnect=release_on_disconnect,
                                lock_delay_ms=_ms(lock_delay))

    async def renew(self, key: str, *, owner: str | None = None, ttl: Duration | None = None,
                    token: int | None = None) -> t.Renewed:
        return await self._call("renew", key=key, owner=owner or self.owner, ttl_ms=_ms(ttl),
                                token=token)

    async def release(self, key: str, *, owner: str | None = None,
                      token: int | None = None) -> t.Released:
        return await self._call("release", key=key, owner=owner or self.owner, token=token)

    async def keepalive(self, *, owner: str | None = None,
                        ttl: Duration | None = None) -> t.KeepAlive:
        return await self._call("keepalive", owner=owner or self.owner, ttl_ms=_ms(ttl))

    async def check(self, key: str, token: int, *, owner: str | None = None) -> t.Check:
        return await self._call("check", key=key, token=token, owner=owner)

    async def get(self, key: str) -> t.KeyState:
        return await self._call("get", key=key)

    async def list(self, prefix: str | None = None, *, limit: int | None = None,
                   after: str | None = None) -> t.LeasePage:
        return await self._call("list", prefix=prefix, limit=limit, after=after)

    async def history(self, key: str, *, limit: int | None = None,
                      before_token: int | None = None) -> t.HistoryPage:
        return await self._call("history", key=key, limit=limit, before_token=before_token)

    async def revoke(self, key: str, *, reason: str | None = None) -> t.Revoked:
        return await self._call("revoke", key=key, reason=reason)

    async def stats(self) -> t.Stats:
        return await self._call("stats")

    async def ping(self) -> None:
        await self._call("ping")

    def watch(self, prefix: str | None = None, *, key: str | None = None,
              from_revision: int | None = None) -> "Watch":
        return Watch(self, prefix, key, from_revision)

    def lease(self, key: str, *, ttl: Duration | None = None, wait: Duration | None = None,
              owner: str | None = None, release_on_disconnect: bool = False,
              lock_delay: Duration | None = None,
              on_lost: Callable[["Lease"], None] | None = None) -> "Lease":
        return Lease(self, key, ttl=ttl, wait=wait, owner=owner,
                     release_on_disconnect=release_on_disconnect, lock_delay=lock_delay,
                     on_lost=on_lost)


class Lease:
    """tenure.Lease on asyncio: renewed by a task; `lost` is an asyncio.Event."""

    def __init__(self, client: Client, key: str, *, ttl, wait, owner, release_on_disconnect,
                 lock_delay, on_lost) -> None:
        self.client, self.key = client, key
        self.owner = owner or new_owner()
        self.token: int | None = None
        self.expires_at = None
        self.lost = asyncio.Event()
        self.lost_reason: str | None = None
        self._ttl_ms, self._wait, self._lock_delay = _ms(ttl), wait, lock_delay
        self._release_on_disconnect = release_on_disconnect
        self._on_lost = on_lost
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._stopping = False
        self._conn: _Connection | None = None
        self._deadline = 0.0
        self._task: asyncio.Task | None = None

    async def _acquire_on(self, conn: _Connection, wait) -> t.Acquired:
        token = self.token

        def attach(reply: dict) -> None:
            if reply.get("status") == "acquired" and token in (None, reply.get("token")):
                conn._leases[(self.key, reply["token"])] = self

        sent = time.monotonic()
        wait_ms = _ms(wait)
        acquired = await self.client._call(
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

    async def acquire(self) -> "Lease":
        async with self._lock:
            if self.token is not None:
                raise TenureError(f"this lease of {self.key} was already acquired")
            conn = await self.client._connection()
            acquired = await self._acquire_on(conn, self._wait)
            self.token, self._conn = acquired.token, conn
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def renew(self) -> t.Renewed:
        async with self._lock:
            if self.lost.is_set():
                raise NotHolder(self.key, self.lost_reason or "lost", None, None)
            conn = await self.client._connection()
            sent = time.monotonic()
            try:
                renewed = await self.client._call("renew", conn=conn, key=self.key,
                                                  owner=self.owner, ttl_ms=self._ttl_ms,
                                                  token=self.token)
            except NotHolder as e:
                self._mark_lost(e.reason)
                raise
            self._set_deadline(sent, renewed)
            if conn is not self._conn:
                await self._reattach(conn)
            return renewed

    async def _reattach(self, conn: _Connection) -> None:
        try:
            acquired = await self._acquire_on(conn, None)
        except Held:
            self._mark_lost("expired")
            raise NotHolder(self.key, "expired", None, None) from None
        if acquired.token != self.token:
            try:
                await self.client._call("release", conn=conn, key=self.key, owner=self.owner,
                                        token=acquired.token)
            finally:
                self._mark_lost("expired")
            raise NotHolder(self.key, "expired", None, None)
        self._conn = conn

    async def _run(self) -> None:
        backoff = 0.05
        while not self._stopping and not self.lost.is_set():
            delay = None if self._ttl_ms is None else self._ttl_ms / 3000
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            while not self._stopping and not self.lost.is_set():
                try:
                    await self.renew()
                    backoff = 0.05
                    break
                except NotHolder:
                    return
                except TenureError as e:
                    left = self._deadline - time.monotonic()
                    if left <= 0 or self.client.closed:
                        self._mark_lost(f"unreachable: {e}")
                        return
                    await asyncio.sleep(min(backoff, left))
                    backoff = min(backoff * 2, 1.0)

    def _on_disconnect(self, conn: _Connection) -> None:
        if conn is not self._conn:
            return
        if self._release_on_disconnect:
            self._mark_lost("disconnected")
        else:
            self._wake.set()

    def _mark_lost(self, reason: str) -> None:
        if self.lost.is_set() or self._stopping:
            return
        self.lost_reason = reason
        self.lost.set()
        self._wake.set()
        if self._on_lost is not None:
            self._on_lost(self)

    async def release(self) -> t.Released | None:
        self._stopping = True
        self._wake.set()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, TenureError):
                pass
        async with self._lock:
            if self.token is None:
                return None
            if self._conn is not None:
                self._conn._leases.pop((self.key, self.token), None)
            try:
                return await self.client._call("release", key=self.key, owner=self.owner,
                                               token=self.token)
            except NotHolder:
                return None
            except TenureError:
                if self.lost.is_set():
                    return None
                raise

    async def check(self) -> t.Check:
        return await self.client.check(self.key, self.token, owner=self.owner)

    async def __aenter__(self) -> "Lease":
        return await self.acquire()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        try:
            await self.release()
        except TenureError:
            if exc_type is None:
                raise


class Watch:
    """tenure.Watch on asyncio: `async for event in client.watch(...)`."""

    def __init__(self, client: Client, prefix, key, from_revision) -> None:
        self.client = client
        self._prefix, self._key = prefix, key
        self.next_revision = from_revision
        self._inbox: asyncio.Queue = asyncio.Queue()
        self._closed = False
        self._conn: _Connection | None = None
        self.watch_id: int | None = None

    async def _start(self) -> None:
        conn = await self.client._connection()
        inbox = self._inbox

        def register(reply: dict) -> None:
            if reply.get("status") == "watching":
                conn._watches[reply["watch_id"]] = inbox

        reply = await self.client._call("watch", conn=conn, on_reply=register,
                                        prefix=self._prefix, key=self._key,
                                        from_revision=self.next_revision)
        self._conn, self.watch_id = conn, reply["watch_id"]
        if self.next_revision is None:
            self.next_revision = reply["revision"] + 1

    async def start(self) -> "Watch":
        """Subscribe now (else the first iteration does): events from here on are kept."""
        if self._conn is None:
            # Waited on by the caller: given up after the client's timeout, as a resume never is.
            await self._subscribe(self.client.timeout)
        return self

    async def _subscribe(self, budget: float | None) -> None:
        """As tenure.Watch's: Unavailable is tried again, on the next endpoint with several,
        until `budget` seconds after the first failure (None: no limit)."""
        retry = Resubscribe(budget)
        while True:
            try:
                return await self._start()
            except Unavailable as e:
                delay = None if self._closed or self.client.closed else retry.delay(e)
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    async def _resume(self) -> None:
        if not self._closed:
            try:
                return await self._subscribe(None)
            except Unavailable:
                if not (self._closed or self.client.closed):
                    raise
        raise StopAsyncIteration

    def __aiter__(self) -> "Watch":
        return self

    async def __anext__(self) -> t.Event:
        return await self.next()

    async def next(self, timeout: Duration | None = None) -> t.Event:
        await self.start()
        seconds = None if timeout is None else to_ms(timeout) / 1000
        while True:
            if self._closed:
                raise StopAsyncIteration
            try:
                item = await asyncio.wait_for(self._inbox.get(), seconds)
            except asyncio.TimeoutError:
                raise Timeout("no watch event within the timeout") from None
            if item is _CLOSED:
                await self._resume()
                continue
            if item.get("watch_id") != self.watch_id:
                continue
            kind = item["event"]
            if kind == "lagged":
                self.next_revision = item["resume_from"]
                await self._resume()
            elif kind == "compacted":
                self._closed = True
                raise Compacted(self.next_revision, item["oldest_revision"])
            else:
                event = t.Event.parse(item)
                if event.revision < self.next_revision:
                    continue
                self.next_revision = event.revision + 1
                return event

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        conn = self._conn
        if conn is not None and not conn.closed:
            conn._watches.pop(self.watch_id, None)
            try:
                await self.client._call("unwatch", conn=conn, watch_id=self.watch_id)
            except TenureError:
                pass
        self._inbox.put_nowait(_CLOSED)

    async def __aenter__(self) -> "Watch":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()
