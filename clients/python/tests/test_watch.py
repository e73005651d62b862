"""client.watch(): typed events, replay from a revision, resume across a daemon restart."""

import threading
import time

import pytest

import tenure
from fake_tenured import FakeTenured, always_fails, fails_once_then_replays


def within(seconds, call, *args, **kwargs):
    """call(*args, **kwargs), failing the test (rather than hanging it) if it takes longer."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call(*args, **kwargs)
        except BaseException as e:  # noqa: B036 (handed to the test's thread)
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call.__name__} still running after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


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


def test_next_keeps_its_timeout_while_the_daemon_is_down_and_resumes_later(daemon, client):
    watch = client.watch(prefix="pr/")
    client.acquire("pr/1", ttl="30s")
    assert watch.next(timeout=10).key == "pr/1"
    assert daemon.terminate() == 0
    for _ in range(2):  # each call gives up at its timeout; the next goes on resubscribing
        with pytest.raises(tenure.Timeout):
            within(15, watch.next, timeout=0.5)
    daemon.start()
    with tenure.Client(daemon.socket) as other:
        other.acquire("pr/2", ttl="30s")
        other.acquire("pr/3", ttl="30s")
    # Made while the watch was away: replayed from where it was, once each.
    assert [watch.next(timeout=20).key for _ in range(2)] == ["pr/2", "pr/3"]
    client.release("pr/1")
    assert (watch.next(timeout=10).type, watch.next_revision) == ("released", 5)


def test_a_replay_the_daemon_could_not_read_resumes_from_where_it_failed():
    with FakeTenured(fails_once_then_replays) as fake, tenure.Client(fake.socket) as client:
        watch = client.watch(from_revision=1)
        events = [within(15, watch.next, timeout=10) for _ in range(2)]
        assert [(e.key, e.revision) for e in events] == [("k", 3), ("k5", 5)]
        assert [w.get("from_revision") for w in fake.watches()] == [1, 5]


def test_a_replay_that_keeps_failing_ends_the_watch_with_unavailable():
    with FakeTenured(always_fails) as fake, tenure.Client(fake.socket, timeout=1) as client:
        watch = client.watch(from_revision=1)
        with pytest.raises(tenure.Unavailable) as e:
            within(30, watch.next, timeout=20)  # given up after the client's timeout
        assert e.value.code == "unavailable" and "cannot read the ledger" in str(e.value)
        tries = fake.watches()
        assert len(tries) > 2 and {w["from_revision"] for w in tries[1:]} == {5}
        assert watch.next_revision == 5  # where a new watch would go on from
        with pytest.raises(tenure.Unavailable):
            watch.next(timeout=10)  # the watch is over: said at once, again


def test_next_on_a_closed_watch_is_an_error_and_iterating_just_ends(client):
    watch = client.watch(prefix="pr/")
    watch.close()
    with pytest.raises(tenure.TenureError, match="closed"):
        watch.next(timeout=1)
    assert list(watch) == []
