"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (Python stdlib only).

Chromium reads CDP messages from fd 3 and writes them to fd 4, each a JSON object followed by a
NUL byte. This module starts a headless Chromium wired that way, and offers just what the
dashboard test needs: open a page, evaluate JavaScript, wait for a condition, take screenshots,
and collect uncaught exceptions and console errors.
"""
import base64
import fcntl
import json
import os
import signal
import subprocess
import threading
import time


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, chromium, user_data_dir, log_path, width=1360, height=860):
        self.width, self.height = width, height
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # Out of the way of 3 and 4 before dup2 puts them there in the child.
        child_in = _dup_high(to_child_r)
        child_out = _dup_high(from_child_w)
        os.close(to_child_r)
        os.close(from_child_w)

        def wire_fds():
            os.dup2(child_in, 3, inheritable=True)
            os.dup2(child_out, 4, inheritable=True)

        args = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions",
            "--disable-dev-shm-usage", "--disable-features=Translate,MediaRouter",
            "--hide-scrollbars", "--mute-audio", "--password-store=basic",
            "--user-data-dir=" + user_data_dir,
            "--window-size=%d,%d" % (width, height),
            "--remote-debugging-pipe", "about:blank",
        ]
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, close_fds=False,
                                     preexec_fn=wire_fds, start_new_session=True)
        os.close(child_in)
        os.close(child_out)
        self._w = to_child_w
        self._r = from_child_r
        self._next_id = 1
        self._lock = threading.Condition()
        self._replies = {}
        self.events = []          # (method, params, sessionId)
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- transport
    def _read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._lock:
                    self._closed = True
                    self._lock.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                try:
                    msg = json.loads(raw)
                except ValueError:
                    continue
                with self._lock:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append((msg.get("method"), msg.get("params", {}),
                                            msg.get("sessionId")))
                    self._lock.notify_all()

    def call(self, method, params=None, session=None, timeout=30):
        with self._lock:
            mid = self._next_id
            self._next_id += 1
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                n = os.write(self._w, data)
                data = data[n:]
        except OSError as e:
            raise CdpError("%s: browser pipe closed (%s)" % (method, e))
        deadline = time.monotonic() + timeout
        with self._lock:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if self._closed:
                    raise CdpError("%s: the browser exited" % method)
                if left <= 0:
                    raise CdpError("%s: no reply within %ss" % (method, timeout))
                self._lock.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise CdpError("%s: %s" % (method, reply["error"]))
        return reply.get("result", {})

    # -- pages
    def new_page(self, init_script=None):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})
        if init_script:
            page.call("Page.addScriptToEvaluateOnNewDocument", {"source": init_script})
        return page

    def close(self):
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", timeout=5)
            except CdpError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        # Chromium's helper processes are in its session (process group): end them too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def call(self, method, params=None, timeout=30):
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def navigate(self, url, timeout=30):
        """Navigates and waits for the load event."""
        seen = len(self.browser.events)
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise CdpError("navigate %s: %s" % (url, r["errorText"]))
        deadline = time.monotonic() + timeout
        while not any(m == "Page.loadEventFired" and s == self.session
                      for m, _, s in self.browser.events[seen:]):
            if time.monotonic() >= deadline:
                raise CdpError("navigate %s: no load event within %ss" % (url, timeout))
            time.sleep(0.05)

    def eval(self, expression, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text")
            raise CdpError("evaluate failed: %s\n  in: %s" % (text, expression))
        return r.get("result", {}).get("value")

    def wait_for(self, expression, timeout, what):
        """Polls expression until it is truthy; returns its value or raises naming `what`."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                last = self.eval(expression)
            except CdpError as e:      # e.g. the element is not there yet
                last = str(e)
            else:
                if last:
                    return last
            if time.monotonic() >= deadline:
                raise CdpError("timed out after %ss waiting for %s (last value: %r)"
                               % (timeout, what, last))
            time.sleep(0.1)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def set_color_scheme(self, scheme):
        self.call("Emulation.setEmulatedMedia",
                  {"features": [{"name": "prefers-color-scheme", "value": scheme}]})

    def problems(self):
        """Uncaught exceptions and console errors seen on this page so far."""
        out = []
        for method, params, session in list(self.browser.events):
            if session != self.session:
                continue
            if method == "Runtime.exceptionThrown":
                d = params.get("exceptionDetails", {})
                out.append("exception: %s" % (d.get("exception", {}).get("description")
                                              or d.get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append("console.error: %s" % " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        return out


def _dup_high(fd):
    """A close-on-exec duplicate numbered 10 or above."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
