"""client.lease(): held while the block runs, renewed, lost, released; across daemon restarts."""

import signal
import threading
import time

import pytest

import tenure
from conftest import wait_until


def test_released_on_scope_exit_even_on_exception(client):
    with pytest.raises(RuntimeError):
        with client.lease("pr/1051", ttl="30s") as lease:
            assert client.get("pr/1051").lease.owner == lease.owner
            assert lease.token == 1 and lease.check()
            raise RuntimeError("the guarded work failed")
    assert client.get("pr/1051").lease is None
    assert [(h.token, h.end) for h in client.history("pr/1051").tenures] == [(1, "released")]
    assert not lease.lost.is_set()


def test_its_repr_says_where_it_is(client):
    lease = client.lease("k", ttl="30s")
    assert repr(lease).endswith(" not acquired>")
    with lease:
        assert repr(lease).endswith(f"token={lease.token} held>")
    assert repr(lease).endswith(" released>")


def test_renewed_in_the_background(client):
    with client.lease("k", ttl="2s") as lease:
        time.sleep(3.5)  # well past the ttl: only renewals keep it
        state = client.get("k")
        assert state.lease is not None and state.lease.token == lease.token
        assert not lease.lost.is_set()
    assert client.get("k").lease is None


def test_reports_lost_when_revoked_and_is_never_reacquired(client):
    called = threading.Event()
    with client.lease("k", ttl="30s", on_lost=lambda l: called.set()) as lease:
        client.revoke("k", reason="test")
        assert lease.lost.wait(10)
        assert lease.lost_reason == "revoked"
        assert called.wait(10)
        with pytest.raises(tenure.NotHolder):
            lease.renew()
        assert client.get("k").lease is None  # no silent re-acquire
    assert client.get("k").lease is None


def test_waits_for_the_key_and_gives_up_with_held(daemon, client):
    client.acquire("k", ttl="30s", owner="other")
    with pytest.raises(tenure.Held):
        with client.lease("k", wait="100ms"):
            pytest.fail("the lease must not be granted")
    threading.Timer(0.3, lambda: client.release("k", owner="other")).start()
    with client.lease("k", wait="20s", ttl="30s") as lease:
        assert lease.token == 2


def test_two_leases_of_one_process_never_share_a_tenure(client):
    with client.lease("k", ttl="30s"):
        with pytest.raises(tenure.Held):
            with client.lease("k"):
                pass


def test_survives_a_daemon_restart_within_its_deadline(daemon, client):
    with client.lease("pr/7", ttl="30s") as lease:
        token = lease.token
        assert daemon.terminate() == 0
        daemon.start()
        wait_until(lambda: _renews(lease), what="a renew through the restarted daemon")
        assert lease.token == token and not lease.lost.is_set()
        state = client.get("pr/7")
        assert (state.lease.owner, state.lease.token) == (lease.owner, token)
        # Re-attached: the new connection is the one told of loss.
        client.revoke("pr/7")
        assert lease.lost.wait(10) and lease.lost_reason == "revoked"


def _renews(lease) -> bool:
    try:
        lease.renew()
        return True
    except tenure.Unavailable:
        return False


def test_lost_when_its_deadline_passes_while_the_daemon_is_down(daemon, client):
    with client.lease("pr/8", ttl="1s") as lease:
        assert daemon.terminate() == 0
        assert lease.lost.wait(10)
        assert lease.lost_reason.startswith("unreachable")
        daemon.start()
        assert client.get("pr/8").lease is None  # it expired while the daemon was down


def test_lost_at_its_deadline_while_the_daemon_stalls(daemon):
    # A renew that reaches a stalled daemon would wait for its reply up to the client's timeout;
    # the lease must not outlast its deadline meanwhile.
    with tenure.Client(socket=daemon.socket, timeout=120) as slow:
        with slow.lease("pr/9", ttl="1s") as lease:
            daemon.proc.send_signal(signal.SIGSTOP)
            try:
                lost = lease.lost.wait(30)
            finally:
                daemon.proc.send_signal(signal.SIGCONT)
            assert lost and lease.lost_reason.startswith("unreachable")


def test_release_on_disconnect_lease_is_lost_with_its_connection(daemon, client):
    with client.lease("k", ttl="30s", release_on_disconnect=True) as lease:
        daemon.terminate()
        assert lease.lost.wait(10) and lease.lost_reason == "disconnected"
