"""tenure.aio: the same ops, leases and watches on asyncio."""

import asyncio
import logging

import pytest

import tenure
import tenure.aio
from fake_tenured import FakeTenured, always_fails, fails_once_then_replays


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_ops(daemon):
    async def main():
        async with tenure.aio.Client(daemon.socket) as client:
            await client.ping()
            a = await client.acquire("k", ttl="30s")
            assert (a.token, a.fresh) == (1, True)
            with pytest.raises(tenure.Held):
                await client.acquire("k", owner="other")
            assert await client.check("k", 1)
            assert (await client.get("k")).lease.owner == client.owner
            assert (await client.release("k")).token == 1
            assert (await client.stats()).connections >= 1
    run(main())


def test_lease_renewed_released_and_lost(daemon):
    async def main():
        async with tenure.aio.Client(daemon.socket) as client:
            with pytest.raises(RuntimeError):
                async with client.lease("pr/1", ttl="1500ms") as lease:
                    await asyncio.sleep(3.5)  # past the ttl: the renew task keeps it
                    assert (await client.get("pr/1")).lease.token == lease.token
                    raise RuntimeError("work failed")
            assert (await client.get("pr/1")).lease is None
            async with client.lease("pr/2", ttl="30s") as lease:
                await client.revoke("pr/2")
                await asyncio.wait_for(lease.lost.wait(), 10)
                assert lease.lost_reason == "revoked"
    run(main())


def test_lease_survives_restart_and_watch_resumes(daemon):
    async def main():
        async with tenure.aio.Client(daemon.socket) as client:
            async with client.watch(prefix="pr/") as watch, \
                    client.lease("pr/1", ttl="30s") as lease:
                assert (await watch.next(timeout=10)).key == "pr/1"
                assert daemon.terminate() == 0
                daemon.start()
                for _ in range(500):
                    try:
                        await lease.renew()
                        break
                    except tenure.Unavailable:
                        await asyncio.sleep(0.02)
                assert not lease.lost.is_set()
                await client.acquire("pr/2", ttl="30s")
                seen = []
                while not seen or seen[-1].key != "pr/2":
                    seen.append(await watch.next(timeout=20))
                # The renewals and re-attach of pr/1, then pr/2: resumed, in revision order.
                assert {(e.type, e.key) for e in seen[:-1]} == {("renewed", "pr/1")}
                assert seen[-1].type == "acquired"
                assert sorted(e.revision for e in seen) == [e.revision for e in seen]
                assert len({e.revision for e in seen}) == len(seen)
    run(main())


def test_websocket(daemon):
    async def main():
        async with tenure.aio.Client(url=daemon.url, token=daemon.ws_token) as client:
            assert (await client.acquire("ws", ttl="30s")).token == 1
    run(main())


def test_next_keeps_its_timeout_while_the_daemon_is_down_and_resumes_later(daemon):
    async def main():
        async with tenure.aio.Client(daemon.socket) as client:
            async with client.watch(prefix="pr/") as watch:
                await client.acquire("pr/1", ttl="30s")
                assert (await watch.next(timeout=10)).key == "pr/1"
                assert daemon.terminate() == 0
                for _ in range(2):  # each gives up at its timeout; the next goes on
                    with pytest.raises(tenure.Timeout):
                        await asyncio.wait_for(watch.next(timeout=0.5), 15)
                daemon.start()
                async with tenure.aio.Client(daemon.socket) as other:
                    await other.acquire("pr/2", ttl="30s")
                    await other.acquire("pr/3", ttl="30s")
                assert [(await watch.next(timeout=20)).key for _ in range(2)] == ["pr/2", "pr/3"]
                await client.release("pr/1")
                assert (await watch.next(timeout=10)).type == "released"
    run(main())


def test_a_replay_the_daemon_could_not_read_resumes_from_where_it_failed():
    async def main():
        with FakeTenured(fails_once_then_replays) as fake:
            async with tenure.aio.Client(fake.socket) as client:
                watch = client.watch(from_revision=1)
                events = [await watch.next(timeout=10) for _ in range(2)]
                assert [(e.key, e.revision) for e in events] == [("k", 3), ("k5", 5)]
                assert [w.get("from_revision") for w in fake.watches()] == [1, 5]
    run(main())


def test_a_replay_that_keeps_failing_ends_the_watch_with_unavailable():
    async def main():
        with FakeTenured(always_fails) as fake:
            async with tenure.aio.Client(fake.socket, timeout=1) as client:
                watch = client.watch(from_revision=1)
                with pytest.raises(tenure.Unavailable) as e:
                    await watch.next(timeout=20)
                assert e.value.code == "unavailable"
                assert len(fake.watches()) > 2 and watch.next_revision == 5
                with pytest.raises(tenure.Unavailable):
                    await watch.next(timeout=10)
    run(main())


def test_next_on_a_closed_watch_is_an_error_and_iterating_just_ends(daemon):
    async def main():
        async with tenure.aio.Client(daemon.socket) as client:
            watch = await client.watch(prefix="pr/").start()
            await watch.close()
            with pytest.raises(tenure.TenureError, match="closed"):
                await watch.next(timeout=1)
            assert [e async for e in watch] == []
    run(main())


def test_an_on_lost_that_raises_is_logged_and_the_connection_goes_on(daemon, caplog):
    def on_lost(lease):
        raise RuntimeError("the callback failed")

    async def main():
        async with tenure.aio.Client(daemon.socket) as client:
            async with client.lease("k", ttl="30s", on_lost=on_lost) as lease, \
                    client.lease("bound", ttl="30s", release_on_disconnect=True) as bound:
                await client.revoke("k")
                await asyncio.wait_for(lease.lost.wait(), 10)
                await client.ping()
                assert not bound.lost.is_set()  # lost with the connection, had it ended
    with caplog.at_level(logging.ERROR, logger="tenure"):
        run(main())
    assert [r.exc_info[1].args for r in caplog.records if "on_lost" in r.getMessage()] == \
        [("the callback failed",)]


def test_an_async_on_lost_is_awaited(daemon):
    async def main():
        told = asyncio.Event()

        async def on_lost(lease):
            await asyncio.sleep(0)
            told.set()

        async with tenure.aio.Client(daemon.socket) as client:
            async with client.lease("k", ttl="30s", on_lost=on_lost):
                await client.revoke("k")
                await asyncio.wait_for(told.wait(), 10)
    run(main())
