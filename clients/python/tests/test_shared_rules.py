"""The rules both clients share, without a daemon: what a watch makes of its inbox, how a failing
renew backs off, and the order endpoints are tried in."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

import tenure
from tenure.dispatch import CLOSED
from tenure.endpoints import Endpoints
from tenure.lease_state import LeaseState, RenewRetry
from tenure.watch_state import RESUME, WatchState


def event(watch_id, revision, key="k"):
    return {"event": "acquired", "watch_id": watch_id, "revision": revision, "key": key,
            "token": 1, "owner": "o", "at": "2026-12-06T00:00:00.000Z",
            "expires_at": None}


def watching(next_revision):
    state = WatchState(SimpleNamespace(closed=False, timeout=10.0), None, None, next_revision)
    state.watch_id = 7
    return state


def test_a_watch_gives_events_once_in_order_and_resumes_where_it_was():
    w = watching(10)
    assert w._take(event(7, 9)) is None  # before where it resumes: seen already
    assert w._take(event(7, 10)).revision == 10
    assert w._take(event(7, 10)) is None  # a repeat after a resume
    assert w._take(event(6, 11)) is None  # from the watch this one replaced
    assert w.next_revision == 11
    assert w._take({"event": "lagged", "watch_id": 7, "resume_from": 12}) is RESUME
    assert w.next_revision == 12
    assert w._take(CLOSED) is RESUME


def test_a_replay_the_daemon_could_not_read_resumes_from_where_it_failed_after_a_pause():
    w = watching(3)
    failed = {"event": "error", "watch_id": 7, "error": "unavailable", "message": "m",
              "resume_from": 5}
    assert w._take(failed) is RESUME
    assert w.next_revision == 5 and w._resume_at > time.monotonic()  # not at once: backoff
    assert not w._closed


def test_a_compacted_watch_raises_and_ends():
    w = watching(5)
    with pytest.raises(tenure.Compacted) as e:
        w._take({"event": "compacted", "watch_id": 7, "oldest_revision": 40})
    assert (e.value.from_revision, e.value.oldest_revision) == (5, 40)
    assert w._closed


class _Lease(LeaseState):
    def __init__(self, client, deadline_in):
        super().__init__(client, "k", ttl="9s", wait=None, owner="o",
                         release_on_disconnect=False, lock_delay=None, on_lost=None)
        self.lost, self._wake = threading.Event(), threading.Event()
        self._deadline = time.monotonic() + deadline_in

    def _stopping(self):
        return False


def test_a_failing_renew_backs_off_until_the_deadline_then_the_lease_is_lost():
    client = SimpleNamespace(closed=False)
    retry = RenewRetry(_Lease(client, 60))
    assert [retry.after(tenure.Unavailable("down")) for _ in range(6)] == \
        [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    near = _Lease(client, 0.01)
    assert RenewRetry(near).after(tenure.Unavailable("down")) <= 0.01
    gone = _Lease(client, -1)
    assert RenewRetry(gone).after(tenure.Unavailable("down")) is None
    assert gone.lost.is_set() and gone.lost_reason == "unreachable: down"
    closed = _Lease(SimpleNamespace(closed=True), 60)
    assert RenewRetry(closed).after(tenure.Unavailable("down")) is None


def open_first_that_answers(ends):
    tries = ends.tries()
    for open_one in tries:
        try:
            return open_one()
        except tenure.Unavailable as e:
            tries.failed(e)


def test_endpoints_are_tried_in_turn_from_the_current_one():
    opened, up = [], {"/b"}

    def open_unix(path, timeout, also):
        opened.append(path)
        if path not in up:
            raise tenure.Unavailable(f"cannot connect to {path}")
        return path

    ends = Endpoints("c", None, None, ["/a", "/b", "/c"], None, 1.0, open_unix, None)
    assert open_first_that_answers(ends) == "/b"
    assert (opened, ends.current) == (["/a", "/b"], "/b")
    ends.move_on()  # it broke: the next one first, then around
    up.clear()
    with pytest.raises(tenure.Unavailable) as e:
        open_first_that_answers(ends)
    assert opened[2:] == ["/c", "/a", "/b"]
    assert str(e.value) == "cannot connect to /c; cannot connect to /a; cannot connect to /b"
    with pytest.raises(ValueError):
        Endpoints("c", "/a", None, ["/b"], None, 1.0, open_unix, None)


class _SlowToCheck(threading.Event):
    """A `lost` whose check waits (up to 2 s) for a second thread to check it too: two losses
    noticed at once, by the reading side and by a renew."""

    def __init__(self):
        super().__init__()
        self.both_checking = threading.Barrier(2, timeout=2)

    def is_set(self):
        was = super().is_set()
        try:
            self.both_checking.wait()
        except threading.BrokenBarrierError:
            pass  # the other could not get in: marking is serialized
        return was


def test_of_two_losses_at_once_the_first_is_reported_once():
    told = []
    lease = _Lease(SimpleNamespace(closed=False), 60)
    lease.lost = _SlowToCheck()
    lease._tell_lost = lambda: told.append(lease.lost_reason)
    lease._on_lost = lambda l: None
    threads = [threading.Thread(target=lease._mark_lost, args=(reason,))
               for reason in ("revoked", "expired")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert told == [lease.lost_reason]  # one loss, and the reason it was told with stays
