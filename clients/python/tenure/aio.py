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
import inspect
import itertools
import time
from typing import Any, Sequence

from . import types as t
from . import websocket as ws
from . import wire
from .defaults import new_owner
from .dispatch import CLOSED, Dispatch
from .durations import Duration, to_ms
from .endpoints import Endpoints
from .errors import Held, NotHolder, TenureError, Timeout, Unavailable
from .lease_state import LeaseState, RenewRetry, log
from .ops import Ops
from .resubscribe import Resubscribe
from .transport import connect_problem
from .watch_state import RESUME, WatchClosed, WatchState


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


class _Connection(Dispatch):
    def __init__(self, stream) -> None:
        super().__init__(stream.name)
        self.stream = stream
        self._task = asyncio.get_running_loop().create_task(self._read())

    async def call(self, body: dict, timeout: float, on_reply=None) -> dict:
        future = asyncio.get_running_loop().create_future()
        self.expect(body["id"], future, on_reply)
        try:
            await self.stream.send(wire.encode(body))
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            raise Timeout(f"no reply from tenured at {self.name} within {timeout:g} s") \
                from None
        finally:
            self.forget(body["id"])

    def _answer(self, future: asyncio.Future, reply: dict) -> None:
        if not future.done():
            future.set_result(reply)

    def _refuse(self, future: asyncio.Future, error: Unavailable) -> None:
        if not future.done():
            future.set_exception(error)

    async def _read(self) -> None:
        try:
            while (line := await self.stream.receive()) is not None:
                self.route(line)
        finally:
            self._end(self.end_reason)

    def _end(self, reason: str) -> None:
        if self.fail(reason):
            self.stream.close()

    def close(self) -> None:
        self._task.cancel()
        self._end("closed")


class Client(Ops):
    """tenure.Client on asyncio: each op returns an awaitable of what tenure.Client's returns.
    Connects on `async with` or `await connect()` (or the first call); a lost connection is
    reopened by the next call, with `endpoints` on the next one."""

    def __init__(self, socket: str | None = None, *, url: str | None = None,
                 token: str | None = None, timeout: float = 10.0,
                 owner: str | None = None, endpoints: Sequence[str] | None = None) -> None:
        self._endpoints = Endpoints("tenure.aio.Client", socket, url, endpoints, token, timeout,
                                    _UnixStream.open, _WebSocketStream.open)
        self.timeout = timeout
        self.owner = owner or new_owner()
        self._ids = itertools.count(1)
        self._conn: _Connection | None = None
        self._connecting = asyncio.Lock()
        self.closed = False

    @property
    def address(self) -> str:
        """The endpoint in use (or tried next)."""
        return self._endpoints.current

    async def connect(self) -> "Client":
        await self._connection()
        return self

    async def _connection(self) -> _Connection:
        async with self._connecting:
            if self.closed:
                raise TenureError("this tenure.aio.Client is closed")
            if self._conn is not None and self._conn.closed:
                self._conn = None
                self._endpoints.move_on()  # it broke: the next endpoint first (once, not per retry)
            if self._conn is None:
                self._conn = _Connection(await self._open())
            return self._conn

    async def _open(self):
        tries = self._endpoints.tries()
        for open_one in tries:
            try:
                return await open_one()
            except Unavailable as e:
                tries.failed(e)

    async def _call(self, op: str, *, conn: _Connection | None = None,
                    extra_timeout: float = 0.0, on_reply=None, **fields: Any) -> Any:
        conn = conn or await self._connection()
        body = wire.request(op, next(self._ids), **fields)
        try:
            reply = await conn.call(body, self.timeout + extra_timeout, on_reply)
        except Timeout:
            if self._endpoints.several:
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


_on_lost_tasks: set[asyncio.Task] = set()  # async on_lost callbacks being awaited


class Lease(LeaseState):
    """tenure.Lease on asyncio: renewed by a task; `lost` is an asyncio.Event."""

    _shown_as = "tenure.aio.Lease"

    def __init__(self, client: Client, key: str, **options: Any) -> None:
        super().__init__(client, key, **options)
        self.lost = asyncio.Event()
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._stopped = False
        self._task: asyncio.Task | None = None

    def _stopping(self) -> bool:
        return self._stopped

    def _tell_lost(self) -> None:
        # Called inline, by the connection's reader among others: what the callback raises is
        # logged. An `async def` one is awaited by a task of its own.
        told = self._call_on_lost()
        if inspect.isawaitable(told):
            task = asyncio.get_running_loop().create_task(self._await_on_lost(told))
            _on_lost_tasks.add(task)  # the loop keeps only a weak reference to a task
            task.add_done_callback(_on_lost_tasks.discard)

    async def _await_on_lost(self, told: Any) -> None:
        try:
            await told
        except Exception:
            log.exception("the on_lost callback of %r raised", self)

    async def _acquire_on(self, conn: _Connection, wait: Duration | None) -> t.Acquired:
        sent = time.monotonic()
        acquired = await self.client._call("acquire", **self._acquire_call(conn, wait))
        self._acquired(sent, acquired)
        return acquired

    async def acquire(self) -> "Lease":
        async with self._lock:
            self._check_first_acquire()
            conn = await self.client._connection()
            self.token, self._conn = (await self._acquire_on(conn, self._wait)).token, conn
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def renew(self) -> t.Renewed:
        async with self._lock:
            self._check_not_lost()
            conn = await self.client._connection()
            sent = time.monotonic()
            try:
                renewed = await self.client._call(
                    "renew", conn=conn, extra_timeout=self._renew_extra_timeout(), key=self.key,
                    owner=self.owner, ttl_ms=self._ttl_ms, token=self.token)
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
            raise self._expired() from None
        if acquired.token != self.token:
            try:
                await self.client._call("release", conn=conn, key=self.key, owner=self.owner,
                                        token=acquired.token)
            finally:
                error = self._expired()
            raise error
        self._conn = conn

    async def _run(self) -> None:
        while not self._stopped and not self.lost.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), self._renew_every())
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            retry = RenewRetry(self)
            while not self._stopped and not self.lost.is_set():
                try:
                    await self.renew()
                    break
                except (NotHolder, Held):
                    return
                except TenureError as e:
                    if (delay := retry.after(e)) is None:
                        return
                    await asyncio.sleep(delay)

    async def release(self) -> t.Released | None:
        self._stopped = True
        self._wake.set()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, TenureError):
                pass
        async with self._lock:
            if self.token is None or self.lost.is_set():
                return None
            self._forget_connection()
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


class Watch(WatchState):
    """tenure.Watch on asyncio: `async for event in client.watch(...)`."""

    def __init__(self, client: Client, prefix, key, from_revision) -> None:
        super().__init__(client, prefix, key, from_revision)
        self._inbox: asyncio.Queue = asyncio.Queue()

    async def start(self) -> "Watch":
        """Subscribe now (else the first iteration does): events from here on are kept."""
        if self._conn is None:
            # Waited on by the caller: given up after the client's timeout, as a resume never is.
            await self._subscribe(self.client.timeout)
        return self

    async def _subscribe(self, budget: float) -> None:
        """As tenure.Watch's."""
        retry = Resubscribe(budget)
        while True:
            try:
                conn = await self.client._connection()
                reply = await self.client._call("watch", **self._watch_call(conn))
                return self._started(conn, reply)
            except Unavailable as e:
                if (delay := self._resubscribe_after(retry, e)) is None:
                    raise
                await asyncio.sleep(delay)

    async def _resume(self, deadline: float | None) -> None:
        """As tenure.Watch's."""
        while True:
            while (wait := self._resume_wait(deadline)) > 0:
                await asyncio.sleep(wait)
            try:
                conn = await self.client._connection()
                reply = await self.client._call("watch", **self._watch_call(conn))
                return self._started(conn, reply)
            except TenureError as e:
                self._resume_failed(e)

    def __aiter__(self) -> "Watch":
        return self

    async def __anext__(self) -> t.Event:
        try:
            return await self.next()
        except WatchClosed:
            raise StopAsyncIteration from None

    async def next(self, timeout: Duration | None = None) -> t.Event:
        """As tenure.Watch's."""
        self._check_open()
        await self.start()
        deadline = None if timeout is None else time.monotonic() + to_ms(timeout) / 1000
        while True:
            self._check_open()
            if self._resuming is not None:
                await self._resume(deadline)
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            taken = self._take(await self._get(left))
            if taken is not None and taken is not RESUME:
                return taken

    async def _get(self, seconds: float | None) -> Any:
        """The next inbox item; Timeout after `seconds` (one waiting is taken even at 0)."""
        if not self._inbox.empty():
            return self._inbox.get_nowait()
        try:
            return await asyncio.wait_for(self._inbox.get(), seconds)
        except asyncio.TimeoutError:
            raise Timeout("no watch event within the timeout") from None

    async def close(self) -> None:
        if isinstance(self._ended, WatchClosed):
            return
        conn = self._stop()
        if conn is not None:
            try:
                await self.client._call("unwatch", conn=conn, watch_id=self.watch_id)
            except TenureError:
                pass
        self._inbox.put_nowait(CLOSED)

    async def __aenter__(self) -> "Watch":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()


Client._Lease, Client._Watch = Lease, Watch
