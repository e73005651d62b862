"""Every op through tenure.Client, against a real tenured."""

from datetime import timedelta

import pytest

import tenure


def test_ping_and_stats(client):
    assert client.ping() is None
    stats = client.stats()
    assert stats.connections >= 1 and isinstance(stats.ops, dict)


def test_acquire_renew_check_release(client):
    a = client.acquire("pr/1", ttl="30s")
    assert (a.key, a.owner, a.token, a.fresh, a.ttl_ms) == ("pr/1", client.owner, 1, True, 30000)
    assert a.expires_at is not None and a.revision >= 1
    again = client.acquire("pr/1", ttl=timedelta(seconds=40))
    assert (again.token, again.fresh, again.ttl_ms) == (1, False, 40000)
    r = client.renew("pr/1", ttl=60, token=1)
    assert (r.token, r.ttl_ms) == (1, 60000)
    assert client.check("pr/1", 1)
    stale = client.check("pr/1", 0)
    assert not stale and stale.reason == "token_mismatch"
    rel = client.release("pr/1", token=1)
    assert (rel.key, rel.token) == ("pr/1", 1)
    assert client.release("pr/1").token is None  # idempotent
    assert client.acquire("pr/1").token == 2  # never reused
    assert client.acquire("pr/1").ttl_ms == 900000  # the server's default


def test_held_and_not_holder_are_exceptions(client):
    client.acquire("k", ttl="30s", owner="alice")
    with pytest.raises(tenure.Held) as held:
        client.acquire("k", owner="bob")
    assert (held.value.holder, held.value.token) == ("alice", 1)
    with pytest.raises(tenure.NotHolder) as nh:
        client.renew("k", owner="bob")
    assert nh.value.reason == "held_by_other" and nh.value.holder == "alice"
    with pytest.raises(tenure.NotHolder):
        client.release("k", owner="alice", token=7)


def test_waiting_acquire_gets_the_key_on_release(daemon, client):
    client.acquire("w", ttl="30s", owner="first")
    other = tenure.Client(daemon.socket)
    import threading
    result = {}
    t = threading.Thread(target=lambda: result.update(a=other.acquire("w", owner="second",
                                                                      wait="20s")))
    t.start()
    from conftest import wait_until
    wait_until(lambda: client.get("w").waiters == 1, what="the waiter to queue")
    client.release("w", owner="first")
    t.join(20)
    assert result["a"].token == 2 and result["a"].owner == "second"
    other.close()


def test_get_list_history_keepalive_revoke(client):
    for k in ("a/1", "a/2", "b/1"):
        client.acquire(k, ttl="30s")
    page = client.list("a/", limit=1)
    assert [l.key for l in page.leases] == ["a/1"] and page.next == "a/1"
    assert [l.key for l in client.list("a/", after=page.next).leases] == ["a/2"]
    assert client.keepalive(ttl="45s").count == 3
    state = client.get("a/1")
    assert state.lease.ttl_ms == 45000 and state.last_token == 1 and state.waiters == 0
    revoked = client.revoke("a/1", reason="maintenance")
    assert (revoked.key, revoked.token) == ("a/1", 1)
    with pytest.raises(tenure.NotHolder) as nh:
        client.revoke("a/1")
    assert nh.value.reason == "free"
    hist = client.history("a/1")
    assert [(h.token, h.end) for h in hist.tenures] == [(1, "revoked")]
    assert client.get("never").lease is None and client.get("never").last_token == 0


def test_bad_request_is_a_protocol_error(client):
    with pytest.raises(tenure.ProtocolError, match="key"):
        client.acquire("")
    client.ping()  # the connection stays usable


def test_unknown_fields_are_refused_before_sending(client):
    with pytest.raises(TypeError):
        client._call("get", key="k", ttl_ms=5)


def test_connect_errors_name_the_problem(tmp_path, monkeypatch):
    missing = str(tmp_path / "nothing.sock")
    with pytest.raises(tenure.Unavailable,
                       match=f"cannot connect to {missing}: no such file; is tenured running"):
        tenure.Client(missing)
    monkeypatch.setenv("TENURE_SOCKET", missing)
    with pytest.raises(tenure.Unavailable, match="nothing.sock"):
        tenure.Client()


def test_default_socket_path_follows_the_cli(monkeypatch):
    from tenure.defaults import choose_socket
    monkeypatch.delenv("TENURE_SOCKET", raising=False)
    monkeypatch.setattr("tenure.defaults.SYSTEM_SOCKET", "/nonexistent/tenured.sock")
    monkeypatch.setenv("XDG_STATE_HOME", "/x/state")
    assert choose_socket(None)[0] == "/x/state/tenure/tenured.sock"
    monkeypatch.setenv("XDG_STATE_HOME", "relative")
    monkeypatch.setenv("HOME", "/home/u")
    assert choose_socket(None)[0] == "/home/u/.local/state/tenure/tenured.sock"
    monkeypatch.setenv("TENURE_SOCKET", "/run/t.sock")
    assert choose_socket(None) == ("/run/t.sock", None)
    assert choose_socket("/given") == ("/given", None)
    monkeypatch.delenv("TENURE_SOCKET")
    monkeypatch.delenv("HOME")
    monkeypatch.delenv("XDG_STATE_HOME")
    with pytest.raises(tenure.TenureError, match="HOME is unset"):
        choose_socket(None)


def test_the_system_socket_is_used_when_the_users_is_absent(tmp_path, monkeypatch):
    from tenure.defaults import choose_socket
    monkeypatch.delenv("TENURE_SOCKET", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    user = str(tmp_path / ".local/state/tenure/tenured.sock")
    system = tmp_path / "run/tenured.sock"
    monkeypatch.setattr("tenure.defaults.SYSTEM_SOCKET", str(system))
    # Neither exists: the user's, and the error names both.
    assert choose_socket(None) == (user, str(system))
    with pytest.raises(tenure.Unavailable,
                       match=rf"cannot connect to {user}: no such file; is tenured running\? "
                             rf"\(also looked for {system}\)"):
        tenure.Client()
    system.parent.mkdir()
    system.touch()
    assert choose_socket(None) == (str(system), None)
    (tmp_path / ".local/state/tenure").mkdir(parents=True)
    (tmp_path / ".local/state/tenure/tenured.sock").touch()
    assert choose_socket(None) == (user, None)
    monkeypatch.delenv("HOME")
    assert choose_socket(None) == (str(system), None)


def test_durations():
    assert tenure.to_ms("250ms") == 250
    assert tenure.to_ms("15m") == 900000
    assert tenure.to_ms("1h30m") == 5400000
    assert tenure.to_ms(1.5) == 1500
    assert tenure.to_ms(timedelta(milliseconds=20)) == 20
    for bad in ("", "5", "5x", "-1s", "1s 2s"):
        with pytest.raises(ValueError):
            tenure.to_ms(bad)


def test_default_owners_are_unique_and_readable():
    a, b = tenure.new_owner(), tenure.new_owner()
    assert a != b and "@" in a and ":" in a and len(a) <= 128
    assert all(" " < c < "\x7f" for c in a)


def test_websocket_with_and_without_the_token(daemon):
    with tenure.Client(url=daemon.url, token=daemon.ws_token) as ws:
        assert ws.acquire("ws/1", ttl="30s").token == 1
    with tenure.Client(url=daemon.url) as anonymous:
        assert anonymous.get("ws/1").lease.token == 1
        with pytest.raises(tenure.Forbidden, match="unauthenticated"):
            anonymous.acquire("ws/2")
