"""Several endpoints (the nodes of a cluster): the client connects to the first that answers and
moves on to the next when its daemon dies or stalls; leases renew through whichever answers."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

import tenure
import tenure.aio
from conftest import Daemon, wait_until


@pytest.fixture
def two():
    daemons = [Daemon(), Daemon()]
    yield daemons
    for d in daemons:
        if d.proc and d.proc.poll() is None:
            d.proc.send_signal(signal.SIGCONT)
        d.stop()


def test_the_first_endpoint_that_answers_is_used(daemon, tmp_path):
    dead = str(tmp_path / "none.sock")
    with tenure.Client(endpoints=[dead, daemon.socket]) as c:
        assert c.address == daemon.socket
        c.ping()
    with pytest.raises(tenure.Unavailable) as e:
        tenure.Client(endpoints=[dead, str(tmp_path / "other.sock")])
    assert dead in str(e.value) and "other.sock" in str(e.value)
    with pytest.raises(ValueError):
        tenure.Client(dead, endpoints=[dead])


def test_a_dead_daemon_sends_the_client_to_the_next(two):
    first, second = two
    with tenure.Client(endpoints=[first.socket, second.url]) as c:
        c.acquire("k", ttl="60s")
        first.proc.kill()
        first.proc.wait()

        def answers():
            try:
                c.ping()
                return True
            except tenure.Unavailable:
                return False

        wait_until(answers, 5, "a ping through the second daemon")
        assert c.address == second.url
        assert c.get("k").lease is None  # the second daemon never saw k


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


# A stopped daemon never answers; one that runs answers within this even on a loaded machine
# (the suite runs beside the sanitizer builds' tests in CI).
STALL_TIMEOUT = 2.0


def test_a_stalled_daemon_is_left_for_the_next(two):
    first, second = two
    with tenure.Client(endpoints=[first.socket, second.socket], timeout=STALL_TIMEOUT) as c:
        os.kill(first.proc.pid, signal.SIGSTOP)
        wait_until(lambda: stopped(first.proc.pid), 5, "the daemon to stop")
        try:
            with pytest.raises(tenure.Timeout):
                c.ping()
        finally:
            os.kill(first.proc.pid, signal.SIGCONT)
        c.ping()
        assert c.address == second.socket


def test_a_watch_a_stalled_daemon_leaves_unanswered_starts_on_the_next(two):
    first, second = two
    with tenure.Client(second.socket) as on_second:
        on_second.acquire("w/1", ttl="60s")
    endpoints = [first.socket, second.socket]
    with tenure.Client(endpoints=endpoints, timeout=STALL_TIMEOUT) as c, \
            tenure.Client(endpoints=endpoints, timeout=STALL_TIMEOUT) as c2:
        os.kill(first.proc.pid, signal.SIGSTOP)
        wait_until(lambda: stopped(first.proc.pid), 5, "the daemon to stop")

        async def live_on_asyncio():
            async with tenure.aio.Client(endpoints=endpoints, timeout=STALL_TIMEOUT) as a:
                w = await a.watch(key="w/1").start()
                return a.address, w.next_revision

        try:
            replayed = c.watch("w/", from_revision=1)  # from the revision asked for
            live = c2.watch(key="w/1")  # from the next endpoint's revision
            aio_address, aio_next = asyncio.run(live_on_asyncio())
        finally:
            os.kill(first.proc.pid, signal.SIGCONT)
        assert c.address == c2.address == aio_address == second.socket
        event = replayed.next(timeout=5)
        assert (event.key, event.revision) == ("w/1", 1)
        assert live.next_revision == aio_next == 2


def test_a_lease_renews_through_the_next_endpoint(daemon):
    # Two paths to one daemon (symlinks); the first is gone when it comes back: the lease
    # outlives the connection it was taken on, renewed through the other path.
    first, other = str(daemon.dir / "first.sock"), str(daemon.dir / "other.sock")
    os.symlink(daemon.socket, first)
    os.symlink(daemon.socket, other)
    with tenure.Client(endpoints=[first, other]) as c:
        # Long enough that it outlives the restart however slow that is: the renewal, not the
        # restart's speed, is what this checks.
        with c.lease("pr/9", ttl="60s") as lease:
            os.unlink(first)
            daemon.proc.kill()
            daemon.proc.wait()
            daemon.start()
            deadline = time.monotonic() + 10
            while True:
                try:
                    lease.renew()
                    break
                except tenure.TenureError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            assert not lease.lost.is_set()
            assert c.address == other
            c.revoke("pr/9")
            assert lease.lost.wait(5)
            assert lease.lost_reason == "revoked"


def test_the_asyncio_client_moves_on_too(two):
    first, second = two

    async def run():
        async with tenure.aio.Client(endpoints=[first.socket, second.socket]) as c:
            await c.ping()
            first.proc.kill()
            first.proc.wait()
            for _ in range(250):
                try:
                    await c.ping()
                    break
                except tenure.Unavailable:
                    await asyncio.sleep(0.02)
            assert c.address == second.socket

    asyncio.run(run())
