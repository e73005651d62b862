"""tenure.aio: the same ops, leases and watches on asyncio."""

import asyncio

import pytest

import tenure
import tenure.aio


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
