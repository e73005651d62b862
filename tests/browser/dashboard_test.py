#!/usr/bin/env python3
"""Browser test of the dashboard (GET /): a real tenured, a real headless Chromium.

It starts tenured in a fresh 0700 temporary directory with its HTTP/WebSocket listener on a free
loopback port, checks that GET / serves the embedded page (byte for byte the source
transports/dashboard/index.html, with no external resources), loads it in headless Chromium
(driven over the DevTools pipe, see cdp.py), then, acquiring and ending leases over the Unix socket:

  - the page connects and shows "Live";
  - a lease with an HTML-looking, non-ASCII key appears with its key, holder and token exactly as
    text (no markup from server data), a countdown bar that shrinks and a "held for" that grows;
  - an open-ended lease shows "assigned" and no bar;
  - events of every type appear in the stream, newest first, each type in its own colour;
  - clicking the key opens its tenure history (token, owner, live);
  - the lease expires: its row disappears, an `expired` event is shown, and the open history
    panel shows the tenure as expired;
  - the prefix filter shows only matching keys, and follows new ones;
  - after tenured restarts, the page dims its rows while offline, reconnects (undimmed), resumes
    its watch with from_revision, and shows a lease acquired after the restart;
  - a reload backfills the event stream with the last 200 events (watch from_revision), and live
    events follow with no gap and no repeat;
  - at 420 px wide nothing overflows and the holder column is still shown;
  - the page only ever sent read-only ops, and threw no exceptions.

Screenshots go to the output directory: dashboard.png (light), dashboard-dark.png,
dashboard-history.png (history panel open), dashboard-expired.png, dashboard-narrow.png. On failure,
also dashboard-failure.png and dashboard-failure.html (the DOM), and the logs are printed.

Usage: dashboard_test.py --tenured PATH --page index.html --out DIR [--setup scripts/setup.sh]
If Chromium is missing it runs `setup.sh --test` (which installs it) first.
TENURE_BROWSER_KEEP=1 keeps the temporary directory.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import uuid

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

READ_ONLY_OPS = {"list", "history", "get", "watch", "unwatch", "stats", "ping"}
START = time.monotonic()


def log(msg):
    print("[%6.2fs] %s" % (time.monotonic() - START, msg), flush=True)


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    log("ok: " + what)


# ------------------------------------------------------------------------------------ chromium
def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def ensure_chromium(setup):
    path = find_chromium()
    if path:
        return path
    log("chromium is not installed; running %s --test" % setup)
    r = subprocess.run([setup, "--test"])
    if r.returncode != 0:
        raise Failure("%s --test failed (exit %d); it installs chromium" % (setup, r.returncode))
    path = find_chromium()
    if not path:
        raise Failure("chromium is still missing after %s --test" % setup)
    return path


# ------------------------------------------------------------------------------------ tenured
def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tenured:
    def __init__(self, binary, root):
        self.binary = binary
        self.root = root
        self.data_dir = os.path.join(root, "data")
        self.socket_path = os.path.join(self.data_dir, "tenured.sock")
        self.port = None
        self.proc = None
        self.run = 0

    @property
    def base_url(self):
        return "http://127.0.0.1:%d" % self.port

    def log_path(self, run=None):
        return os.path.join(self.root, "tenured.%d.log" % (run or self.run))

    def start(self, port=None, timeout=30):
        """Starts tenured (on `port`, or a free one, retried if taken) and waits until both its
        socket and its HTTP listener answer."""
        attempts = 1 if port else 5
        last = ""
        for _ in range(attempts):
            self.port = port or free_port()
            self.run += 1
            out = open(self.log_path(), "ab")
            self.proc = subprocess.Popen(
                [self.binary, "--data-dir", self.data_dir, "--socket", self.socket_path,
                 "--ws-listen", "127.0.0.1:%d" % self.port],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            out.close()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    last = "tenured exited with %s:\n%s" % (self.proc.returncode, self.tail())
                    break
                if self._ready():
                    log("tenured running (pid %d), listener on %s" % (self.proc.pid, self.base_url))
                    return
                time.sleep(0.05)
            else:
                last = "tenured not ready within %ss:\n%s" % (timeout, self.tail())
                self.kill()
            if port:  # a fixed port: retry only while it may still be in use
                break
        raise Failure(last)

    def start_on_same_port(self, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.start(port=self.port, timeout=timeout)
            except Failure:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _ready(self):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                s.connect(self.socket_path)
        except OSError:
            return False
        try:
            with urllib.request.urlopen(self.base_url + "/healthz", timeout=2) as r:
                r.read()
            return True
        except urllib.error.HTTPError:
            return True   # it answers HTTP; /healthz may say 503 for a moment
        except OSError:
            return False

    def terminate(self, timeout=30):
        if not self.proc or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Failure("tenured did not exit within %ss of SIGTERM" % timeout)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def tail(self, n=6000):
        out = []
        for run in range(1, self.run + 1):
            try:
                with open(self.log_path(run), "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            out.append("--- tenured run %d ---\n%s" % (run, text[-n:]))
        return "\n".join(out)


class LineClient:
    """NDJSON over the Unix socket; replies matched by id, unsolicited lines skipped."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(15)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 1

    def call(self, **request):
        rid = self.next_id
        self.next_id += 1
        request["id"] = rid
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise Failure("tenured closed the socket while answering %r" % request)
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            reply = json.loads(line)
            if reply.get("id") == rid:
                return reply

    def close(self):
        self.sock.close()


def expect_status(reply, status, what):
    if reply.get("status") != status:
        raise Failure("%s: expected status %s, got %r" % (what, status, reply))
    return reply


# ------------------------------------------------------------------------------------ page helpers
# Recorded by the init script: every message the page sends over its WebSocket.
RECORD_SENDS = r"""
(() => {
  const sent = window.__tenureSent = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    try { sent.push(JSON.parse(data)); } catch (e) { sent.push({ op: '<not json>' }); }
    return send.call(this, data);
  };
})();
"""


def js(value):
    """A JavaScript literal for a Python string/number."""
    return json.dumps(value)


def lease_row(key):
    return ("Array.from(document.querySelectorAll('#lease-rows tr[data-key]'))"
            ".find(tr => tr.dataset.key === %s)" % js(key))


def row_info(page, key):
    return page.eval("""(() => {
      const tr = %s;
      if (!tr) return null;
      const c = tr.cells;
      const fill = tr.querySelector('.fill');
      const m = /scaleX\\(([0-9.]+)\\)/.exec(fill ? fill.style.transform : '');
      return { key: c[0].textContent, holder: c[1].textContent, token: c[2].textContent,
               waiters: c[3].textContent, waiting: c[3].title,
               left: tr.querySelector('.ttl').textContent,
               held: tr.querySelector('.held') && tr.querySelector('.held').offsetParent
                     ? tr.querySelector('.held').textContent : null,
               barShown: !!(fill && fill.offsetParent),
               scale: m ? parseFloat(m[1]) : null,
               assigned: !!(tr.querySelector('.badge.assigned') && tr.querySelector('.badge.assigned').offsetParent),
               badge: (tr.querySelector('.badge.assigned') || {}).textContent,
               elements: tr.querySelectorAll('b, img, script').length };
    })()""" % lease_row(key))


def event_rows(page, key=None):
    cond = "true" if key is None else "li.dataset.key === %s" % js(key)
    return page.eval("""Array.from(document.querySelectorAll('#events li')).filter(li => %s)
      .map(li => ({ type: li.dataset.type, key: li.dataset.key,
                    keyText: (li.querySelector('.key') || {}).textContent,
                    who: (li.querySelector('.who') || {}).textContent,
                    revision: li.dataset.revision,
                    color: getComputedStyle(li).borderLeftColor }))""" % cond)


def live_keys(page):
    return page.eval("Array.from(document.querySelectorAll('#lease-rows tr[data-key]'))"
                     ".map(tr => tr.dataset.key)")


def status(page):
    return page.eval("document.getElementById('status').dataset.state")


# ------------------------------------------------------------------------------------ the test
def run(args, work):
    page_source = open(args.page, "rb").read()
    chromium = ensure_chromium(args.setup)
    log("chromium: %s" % subprocess.run([chromium, "--version"], capture_output=True,
                                        text=True).stdout.strip())

    daemon = Tenured(args.tenured, work)
    browser = None
    page = None
    try:
        daemon.start()

        # -- GET / serves the embedded page itself
        with urllib.request.urlopen(daemon.base_url + "/", timeout=10) as r:
            body = r.read()
            ctype = r.headers.get("Content-Type", "")
            check(r.status == 200, "GET / answers 200")
        check(ctype.startswith("text/html"), "GET / is text/html (%s)" % ctype)
        check(body == page_source, "GET / serves transports/dashboard/index.html byte for byte "
              "(%d bytes)" % len(body))
        external = re.findall(rb"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", body, re.I)
        external += re.findall(rb"""url\(\s*["']?\s*(?:https?:)?//|@import""", body, re.I)
        check(not external, "the page loads nothing from elsewhere (no CDN, no fonts)")

        browser = cdp.Browser(chromium, os.path.join(work, "chromium-profile"),
                              os.path.join(work, "chromium.log"))
        page = browser.new_page(init_script=RECORD_SENDS)
        page.set_color_scheme("light")
        page.navigate(daemon.base_url + "/")
        page.wait_for("document.getElementById('status').dataset.state === 'live'", 20,
                      "the page to connect (status Live)")
        log("ok: the page connected and shows Live")

        client = LineClient(daemon.socket_path)
        owner = "browser-" + str(uuid.uuid4())
        key = 'browser/test/<b>ünïcødé</b> "quoted" & <img src=x onerror=alert(1)> ✓'
        long_key = "browser/long/ci-runner-01"
        assigned_key = "browser/assigned/deploy-eu-west-1"

        # Some company for the screenshot, and one event of each type.
        expect_status(client.call(op="acquire", key=long_key, owner=owner, ttl_ms=600000),
                      "acquired", "acquire " + long_key)
        expect_status(client.call(op="acquire", key=assigned_key, owner="alice@laptop",
                                  open_ended=True), "acquired", "acquire open-ended")
        expect_status(client.call(op="renew", key=long_key, owner=owner, ttl_ms=900000),
                      "renewed", "renew " + long_key)
        expect_status(client.call(op="acquire", key="browser/tmp/released", owner=owner,
                                  ttl_ms=60000), "acquired", "acquire browser/tmp/released")
        expect_status(client.call(op="release", key="browser/tmp/released", owner=owner),
                      "released", "release browser/tmp/released")
        expect_status(client.call(op="acquire", key="browser/tmp/revoked", owner="mallory",
                                  ttl_ms=60000), "acquired", "acquire browser/tmp/revoked")
        expect_status(client.call(op="revoke", key="browser/tmp/revoked", reason="test"),
                      "revoked", "revoke browser/tmp/revoked (we are the server's uid)")

        # Two earlier tenures of the key under test, for its history: released, then revoked.
        expect_status(client.call(op="acquire", key=key, owner="earlier-owner", ttl_ms=60000),
                      "acquired", "acquire the test key (1st tenure)")
        expect_status(client.call(op="release", key=key, owner="earlier-owner"),
                      "released", "release the test key")
        expect_status(client.call(op="acquire", key=key, owner="mallory", ttl_ms=60000),
                      "acquired", "acquire the test key (2nd tenure)")
        expect_status(client.call(op="revoke", key=key), "revoked", "revoke the test key")

        # The lease under test: short enough to watch it expire.
        ttl_ms = 7000
        acquired = expect_status(client.call(op="acquire", key=key, owner=owner, ttl_ms=ttl_ms),
                                 "acquired", "acquire the test key")
        token = acquired["token"]
        log("acquired the test key, token %s, expires_at %s" % (token, acquired["expires_at"]))

        page.wait_for("!!(%s)" % lease_row(key), 10, "the lease to appear on the page")
        info = row_info(page, key)
        check(info["key"] == key, "its key is shown exactly, as text")
        check(info["holder"] == owner, "its holder is shown")
        check(info["token"] == str(token), "its token is shown")
        check(info["elements"] == 0, "no markup from the key got into the page")
        check(page.eval("document.querySelectorAll('#lease-rows img, #events img, "
                        "#lease-rows b, #events b').length") == 0,
              "no element was created from server data anywhere")
        check(info["barShown"] and info["scale"] is not None and 0 < info["scale"] <= 1,
              "it has a countdown bar (scale %s, %s left)" % (info["scale"], info["left"]))
        time.sleep(1.0)
        later = row_info(page, key)
        check(later["scale"] < info["scale"],
              "the bar shrinks (%.3f -> %.3f)" % (info["scale"], later["scale"]))
        held = [re.fullmatch(r"held ([0-9.]+) s", i["held"] or "") for i in (info, later)]
        check(all(held) and 0 <= float(held[0][1]) < float(held[1][1]) < ttl_ms / 1000,
              "'held for' is shown next to the time left, and grows (%s -> %s)"
              % (info["held"], later["held"]))
        # A waiter shows in the row's waiters column, its owner in the cell's title.
        waiter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        waiter.connect(daemon.socket_path)
        waiter.sendall(json.dumps({"op": "acquire", "key": long_key, "owner": "waiter-bob",
                                   "wait_ms": 600000}).encode() + b"\n")
        page.wait_for("(() => { const tr = %s; return !!tr && tr.cells[3].textContent === '1'; })()"
                      % lease_row(long_key), 10,
                      "the waiters column to show the queued acquire")
        check(row_info(page, long_key)["waiting"] == "waiter-bob",
              "the waiter's owner is in the waiters cell's title")
        waiter.close()
        a = row_info(page, assigned_key)
        check(a is not None and a["assigned"] and not a["barShown"] and a["badge"] == "assigned",
              "an open-ended lease shows 'assigned' and no bar")
        check(row_info(page, "browser/tmp/released") is None
              and row_info(page, "browser/tmp/revoked") is None,
              "released and revoked leases are not listed")
        keys = live_keys(page)
        check(keys == sorted(keys, key=lambda k: k.encode()), "leases are in key order")

        events = event_rows(page)
        types = [e["type"] for e in events]
        check(types[:1] == ["acquired"] and events[0]["keyText"] == key,
              "the newest event is first: acquired of the test key")
        for t in ("acquired", "renewed", "released", "revoked"):
            check(t in types, "a %s event is shown" % t)
        revoked = [e for e in events
                   if e["type"] == "revoked" and e["key"] == "browser/tmp/revoked"]
        check(len(revoked) == 1 and "by uid:%d: test" % os.geteuid() in revoked[0]["who"],
              "a revoked event names the revoker and the reason: %s" % revoked)
        colors = {}
        for e in events:
            colors.setdefault(e["type"], e["color"])
        check(len(set(colors.values())) == len(colors),
              "each event type has its own colour (%s)" % colors)

        page.screenshot(os.path.join(args.out, "dashboard.png"))
        page.set_color_scheme("dark")
        time.sleep(0.3)
        check(page.eval("getComputedStyle(document.body).backgroundColor")
              != "rgb(244, 245, 247)", "prefers-color-scheme: dark changes the colours")
        page.screenshot(os.path.join(args.out, "dashboard-dark.png"))
        page.set_color_scheme("light")
        log("screenshots: dashboard.png, dashboard-dark.png")

        # -- history on click
        page.eval("%s.querySelector('button.key').click()" % lease_row(key))
        page.wait_for("!document.getElementById('panel').hidden && "
                      "document.querySelectorAll('#history-rows tr').length > 0", 10,
                      "the history panel to open and load")
        check(page.eval("document.getElementById('panel-title').textContent") == key,
              "the panel names the key")
        hist = page.eval("""Array.from(document.querySelectorAll('#history-rows tr')).map(tr => ({
            token: tr.dataset.token, end: tr.dataset.end, owner: tr.cells[1].textContent,
            acquired: tr.cells[2].title, ended: tr.cells[3].textContent }))""")
        check(hist[0]["token"] == str(token) and hist[0]["end"] == "live"
              and hist[0]["owner"] == owner and hist[0]["acquired"] == acquired["acquired_at"]
              and hist[0]["ended"] == "\u2013",
              "the history shows the live tenure (token, owner, acquired at): %s" % hist[0])
        check([h["end"] for h in hist] == ["live", "revoked", "released"]
              and [h["token"] for h in hist] == [str(token), str(token - 1), str(token - 2)]
              and [h["owner"] for h in hist[1:]] == ["mallory", "earlier-owner"],
              "the history lists all three tenures, newest first, with how they ended")
        check(page.eval("document.getElementById('cur-holder').textContent") == owner,
              "the panel shows the current holder")
        time.sleep(0.4)   # let the panel finish sliding in
        page.screenshot(os.path.join(args.out, "dashboard-history.png"))
        log("screenshot: dashboard-history.png")

        # -- expiry, with the panel still open
        page.wait_for("!(%s)" % lease_row(key), ttl_ms / 1000 + 15,
                      "the lease to disappear when it expires")
        log("ok: the lease disappeared from the table")
        page.wait_for("Array.from(document.querySelectorAll('#events li[data-type=expired]'))"
                      ".some(li => li.dataset.key === %s)" % js(key), 10,
                      "an expired event for the key")
        ev = event_rows(page, key)
        check(ev[0]["type"] == "expired" and ev[0]["keyText"] == key,
              "the newest event of the key is 'expired'")
        page.wait_for("(() => { const tr = document.querySelector('#history-rows tr');"
                      " return tr && tr.dataset.end === 'expired' && tr.dataset.token === %s; })()"
                      % js(str(token)), 10,
                      "the open history panel to show the tenure as expired")
        log("ok: the history panel shows end = expired")
        page.screenshot(os.path.join(args.out, "dashboard-expired.png"))
        log("screenshot: dashboard-expired.png")
        page.eval("document.getElementById('panel-close').click()")
        check(page.eval("document.getElementById('panel').hidden"), "the panel closes")

        # -- prefix filter
        page.eval("""(() => { const i = document.getElementById('prefix');
            i.value = 'browser/long/';
            i.dispatchEvent(new Event('input'));
            i.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })); })()""")
        page.wait_for("JSON.stringify(Array.from(document.querySelectorAll('#lease-rows tr[data-key]'))"
                      ".map(tr => tr.dataset.key)) === %s" % js(json.dumps([long_key], separators=(",", ":"))),
                      10, "only keys under the prefix to be listed")
        log("ok: the filter lists only %s" % long_key)
        expect_status(client.call(op="acquire", key="browser/long/ci-runner-02", owner=owner,
                                  ttl_ms=600000), "acquired", "acquire under the prefix")
        expect_status(client.call(op="acquire", key="browser/other/x", owner=owner,
                                  ttl_ms=600000), "acquired", "acquire outside the prefix")
        page.wait_for("!!(%s)" % lease_row("browser/long/ci-runner-02"), 10,
                      "a new key under the prefix to appear")
        time.sleep(0.5)
        check(row_info(page, "browser/other/x") is None and row_info(page, assigned_key) is None,
              "keys outside the prefix stay hidden")
        check(page.eval("location.hash") == "#prefix=" + "browser%2Flong%2F",
              "the prefix is kept in the URL")
        page.eval("""(() => { const i = document.getElementById('prefix'); i.value = '';
            i.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })); })()""")
        page.wait_for("!!(%s) && !!(%s)" % (lease_row("browser/other/x"), lease_row(assigned_key)),
                      10, "all keys to be listed again when the filter is cleared")
        log("ok: clearing the filter lists every key again")

        # -- reconnect across a restart of tenured
        client.close()
        watches_before = len(page.eval("window.__tenureSent.filter(m => m.op === 'watch')"))
        daemon.terminate()
        log("tenured stopped")
        page.wait_for("document.getElementById('status').dataset.state === 'reconnecting' && "
                      "document.getElementById('status-text').textContent.startsWith('Offline')",
                      15, "the page to show that it is offline")
        log("ok: the status says it is offline")
        check(row_info(page, long_key) is not None, "the last known leases stay on the page")
        page.wait_for("parseFloat(getComputedStyle(%s).opacity) < 0.6" % lease_row(long_key), 5,
                      "the stale rows to be dimmed while offline")
        log("ok: the rows are dimmed while offline")
        daemon.start_on_same_port()
        client = LineClient(daemon.socket_path)
        after_restart = "browser/after-restart/job-7"
        expect_status(client.call(op="acquire", key=after_restart, owner=owner, ttl_ms=600000),
                      "acquired", "acquire after the restart")
        page.wait_for("document.getElementById('status').dataset.state === 'live'", 30,
                      "the page to reconnect")
        page.wait_for("!!(%s)" % lease_row(after_restart), 15,
                      "a lease acquired after the restart to appear")
        log("ok: reconnected; the new lease appeared")
        page.wait_for("parseFloat(getComputedStyle(%s).opacity) === 1" % lease_row(long_key), 5,
                      "the rows to be undimmed once live again")
        log("ok: the rows are undimmed once live again")
        watches = page.eval("window.__tenureSent.filter(m => m.op === 'watch')")[watches_before:]
        check(watches and isinstance(watches[0].get("from_revision"), int),
              "the watch was resumed with from_revision (%s)" % watches[0] if watches else "")
        check(row_info(page, long_key) is not None and row_info(page, "browser/other/x") is not None,
              "the leases from before the restart are still listed")

        # -- a fresh load backfills the event stream with the last 200 events
        for i in range(130):
            churn = "browser/churn/%03d" % i
            expect_status(client.call(op="acquire", key=churn, owner=owner, ttl_ms=60000),
                          "acquired", "acquire " + churn)
            expect_status(client.call(op="release", key=churn, owner=owner),
                          "released", "release " + churn)
        current = expect_status(client.call(op="stats"), "ok", "stats")["revision"]
        ops_before_reload = page.eval("window.__tenureSent.map(m => m.op)")
        page.navigate(daemon.base_url + "/")
        page.wait_for("document.getElementById('status').dataset.state === 'live' && "
                      "document.querySelectorAll('#events li[data-revision]').length >= 200",
                      20, "the reloaded page to connect and backfill its event stream")
        sent_watch = page.eval("window.__tenureSent.filter(m => m.op === 'watch')")
        check(len(sent_watch) == 1 and sent_watch[0].get("from_revision") == current - 199,
              "the page watched from_revision = current revision - 199 (%s, current %d)"
              % (sent_watch, current))
        revs = [int(e["revision"]) for e in event_rows(page) if e["revision"]]
        check(revs == list(range(current, current - 200, -1)),
              "the stream shows the last 200 events, newest first, none twice (%s..%s)"
              % (revs[:1], revs[-1:]))
        check(row_info(page, "browser/churn/000") is None and row_info(page, long_key) is not None,
              "backfilled events do not change the table (the list has the current state)")
        backfilled_key = "browser/after-backfill/job-8"
        expect_status(client.call(op="acquire", key=backfilled_key, owner=owner, ttl_ms=600000),
                      "acquired", "acquire after the reload")
        page.wait_for("!!(%s)" % lease_row(backfilled_key), 10,
                      "a lease acquired after the reload to appear")
        page.wait_for("document.querySelector('#events li').dataset.key === %s"
                      % js(backfilled_key), 10, "its event to head the stream")
        revs = [int(e["revision"]) for e in event_rows(page) if e["revision"]]
        check(revs[:3] == [current + 1, current, current - 1] and len(revs) == len(set(revs)),
              "live events follow the backfill with no gap and no repeat (%s)" % revs[:3])
        client.close()

        # -- narrow screens
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": 420, "height": 900, "deviceScaleFactor": 1, "mobile": True})
        time.sleep(0.4)
        check(page.eval("document.documentElement.scrollWidth <= window.innerWidth + 1"),
              "at 420 px wide nothing overflows sideways")
        holder = page.eval("""(() => {
            const td = %s.cells[1], r = td.getBoundingClientRect();
            return { width: td.clientWidth, right: r.right, text: td.textContent,
                     head: document.querySelector('#leases th.col-holder').offsetWidth };
          })()""" % lease_row(long_key))
        check(holder["width"] >= 60 and holder["right"] <= 420 and holder["head"] > 0
              and holder["text"] == owner,
              "at 420 px the holder column is still shown (%s)" % holder)
        page.screenshot(os.path.join(args.out, "dashboard-narrow.png"))

        # -- what the page sent, and what went wrong in it
        ops = ops_before_reload + page.eval("window.__tenureSent.map(m => m.op)")
        check(ops and set(ops) <= READ_ONLY_OPS,
              "the page sent only read-only ops (%s)" % sorted(set(ops)))
        problems = page.problems()
        check(not problems, "no exceptions or console errors in the page %s" % (problems or ""))
        log("PASS; screenshots in %s" % args.out)
    except Exception:
        if page is not None:
            try:
                page.screenshot(os.path.join(args.out, "dashboard-failure.png"))
                with open(os.path.join(args.out, "dashboard-failure.html"), "w") as f:
                    f.write(page.eval("document.documentElement.outerHTML") or "")
                print("page problems: %s" % page.problems())
            except Exception as e:  # the browser may be gone
                print("(no failure screenshot: %s)" % e)
        print(daemon.tail())
        try:
            with open(os.path.join(work, "chromium.log"), "rb") as f:
                print("--- chromium log ---\n" + f.read().decode("utf-8", "replace")[-4000:])
        except OSError:
            pass
        raise
    finally:
        if browser is not None:
            browser.close()
        daemon.kill()


def main():
    sys.stdout.reconfigure(errors="backslashreplace")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tenured", required=True)
    ap.add_argument("--page", required=True, help="transports/dashboard/index.html")
    ap.add_argument("--out", required=True, help="where screenshots go")
    ap.add_argument("--setup", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "scripts", "setup.sh"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in os.listdir(args.out):
        if old.startswith("dashboard") and old.endswith((".png", ".html")):
            os.remove(os.path.join(args.out, old))
    work = tempfile.mkdtemp(prefix="tenure-browser-")
    os.chmod(work, 0o700)
    try:
        run(args, work)
        return 0
    except (Failure, cdp.CdpError) as e:
        print("FAIL: %s" % e, flush=True)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        if os.environ.get("TENURE_BROWSER_KEEP"):
            print("keeping %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
