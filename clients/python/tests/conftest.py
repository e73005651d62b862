"""A real tenured per test, in a private temporary directory."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # importable from the tree

import tenure  # noqa: E402

TENURED = os.environ.get("TENURED", str(ROOT / "build/apps/tenured/tenured"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """tenured on DIR/data, its socket inside, WebSocket on a free loopback port."""

    def __init__(self, *extra: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tenure-py-"))
        self.data = self.dir / "data"
        self.socket = str(self.data / "tenured.sock")
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}/v1/ws"
        self.extra = list(extra)
        self.proc: subprocess.Popen | None = None
        self.runs = 0
        self.start()

    def start(self) -> None:
        self.runs += 1
        log = open(self.dir / f"tenured.{self.runs}.log", "wb")
        self.proc = subprocess.Popen(
            [TENURED, "--data-dir", str(self.data), "--socket", self.socket, "--ws-listen",
             f"127.0.0.1:{self.port}", *self.extra], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tenured exited with {self.proc.returncode}:\n{self.logs()}")
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(self.socket)
                    return
                except OSError:
                    time.sleep(0.02)
        raise RuntimeError(f"tenured did not accept connections within 20 s:\n{self.logs()}")

    @property
    def ws_token(self) -> str:
        return (self.data / "ws.token").read_text().strip()

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not os.environ.get("TENURE_E2E_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def daemon(request):
    d = Daemon(*getattr(request, "param", ()))
    yield d
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print(d.logs())
    d.stop()


@pytest.fixture
def client(daemon):
    with tenure.Client(daemon.socket) as c:
        yield c


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report


def wait_until(predicate, timeout: float = 10.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")
