"""client.watch(): typed events, replay from a revision, resume across a daemon restart."""

import os
import socket
import tempfile
import threading

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


class FakeDaemon:
    """A socket that answers one watch with `watching`, then sends `compacted`."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="tenure-fake-")
        self.path = os.path.join(self.dir, "s.sock")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(self.path)
        self.listener.listen()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            line = conn.makefile().readline()
            import json
            request = json.loads(line)
            assert request["from_revision"] == 5
            conn.sendall(json.dumps({"id": request["id"], "status": "watching", "watch_id": 9,
                                     "revision": 100}).encode() + b"\n")
            conn.sendall(b'{"event":"compacted","watch_id":9,"oldest_revision":50}\n')
            conn.recv(1)


def test_compacted_is_an_error():
    fake = FakeDaemon()
    with tenure.Client(fake.path) as client:
        watch = client.watch(from_revision=5)
        with pytest.raises(tenure.Compacted) as e:
            next(watch)
        assert (e.value.from_revision, e.value.oldest_revision) == (5, 50)
