"""client.watch(): typed events, replay from a revision, resume across a daemon restart."""

import time

import pytest

import tenure


def test_events_in_order(client):
    with client.watch(prefix="pr/") as watch:
        a = client.acquire("pr/1", ttl="30s")
        client.renew("pr/1")
        client.acquire("other", ttl="30s")  # not under the prefix
        client.release("pr/1")
        events = [watch.next(timeout=10) for _ in range(3)]
    assert [(e.type, e.key, e.token) for e in events] == [
        ("acquired", "pr/1", 1), ("renewed", "pr/1", 1), ("released", "pr/1", 1)]
    assert events[0].revision == a.revision and events[0].owner == client.owner
    assert events[0].revision < events[1].revision < events[2].revision


def test_replay_from_a_revision(client):
    first = client.acquire("k", ttl="30s")
    client.release("k")
    with client.watch(key="k", from_revision=first.revision) as watch:
        assert [watch.next(timeout=10).type for _ in range(2)] == ["acquired", "released"]


def test_resumes_across_a_daemon_restart_without_gap_or_repeat(daemon, client):
    watch = client.watch(prefix="pr/")
    client.acquire("pr/1", ttl="30s")
    assert watch.next(timeout=10).key == "pr/1"
    assert daemon.terminate() == 0
    daemon.start()
    with tenure.Client(daemon.socket) as other:
        for n in (2, 3, 4):
            other.acquire(f"pr/{n}", ttl="30s")
    # Made while the watch was disconnected: replayed from its last revision, once each.
    assert [watch.next(timeout=20).key for _ in range(3)] == ["pr/2", "pr/3", "pr/4"]
    client.release("pr/1")
    event = watch.next(timeout=10)
    assert (event.type, event.key) == ("released", "pr/1")
    watch.close()
    assert list(watch) == []


def test_watch_over_websocket(daemon, client):
    with tenure.Client(url=daemon.url) as ws, ws.watch(key="k") as watch:
        client.acquire("k", ttl="30s")
        assert watch.next(timeout=10).type == "acquired"


@pytest.mark.parametrize("daemon", [("--events-keep", "1", "--sync", "none")], indirect=True)
def test_resuming_from_a_compacted_revision_is_an_error(client):
    for _ in range(2100):  # past one trimming step (4096 events) of a ledger keeping 1 event
        client.acquire("k", ttl="30s")
        client.release("k")
    watch = client.watch(from_revision=1)
    with pytest.raises(tenure.Compacted) as e:
        watch.next(timeout="10s")
    assert e.value.from_revision == 1 and e.value.oldest_revision > 1


@pytest.mark.parametrize("daemon", [("--max-watches-per-connection", "1")], indirect=True)
def test_a_watch_refused_for_too_many_watches_is_refused_at_once(client):
    client.watch(prefix="a/")
    since = time.monotonic()
    with pytest.raises(tenure.Unavailable) as e:
        client.watch(prefix="b/")  # the client's timeout: 10 s
    assert e.value.code == "too_many_requests"
    assert time.monotonic() - since < 5  # not tried again until the timeout
