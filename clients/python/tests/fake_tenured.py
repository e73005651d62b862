"""A stand-in for tenured on a Unix socket, for what the real one cannot be made to send on cue
(a watch's `error` event): each request line is answered by a function of the test."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from typing import Callable


class FakeTenured:
    """`answer(request)` returns the messages to send back, in order (a reply, events). Every
    request is kept in `requests`. Use as a context manager."""

    def __init__(self, answer: Callable[[dict], list[dict]]) -> None:
        self.answer = answer
        self.requests: list[dict] = []
        self.dir = tempfile.mkdtemp(prefix="tenure-fake-")
        self.socket = os.path.join(self.dir, "tenured.sock")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.socket)
        self._server.listen()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def watches(self) -> list[dict]:
        return [r for r in self.requests if r["op"] == "watch"]

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for line in lines:
                request = json.loads(line)
                self.requests.append(request)
                out = "".join(json.dumps(m) + "\n" for m in self.answer(request))
                try:
                    conn.sendall(out.encode())
                except OSError:
                    return

    def close(self) -> None:
        self._server.close()
        for conn in self._conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        os.unlink(self.socket)
        os.rmdir(self.dir)

    def __enter__(self) -> "FakeTenured":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def watching(request: dict, watch_id: int, revision: int = 100) -> dict:
    return {"id": request["id"], "status": "watching", "watch_id": watch_id,
            "revision": revision}


def replay_failed(watch_id: int, resume_from: int) -> dict:
    """The event of a replay that could not read the ledger's event log (docs/protocol.md)."""
    return {"event": "error", "watch_id": watch_id, "error": "unavailable",
            "message": "cannot read the ledger: IO error", "resume_from": resume_from}


def acquired(watch_id: int, revision: int, key: str = "k") -> dict:
    return {"event": "acquired", "watch_id": watch_id, "revision": revision, "key": key,
            "owner": "o", "token": 1, "at": "2026-12-06T00:00:00.000Z", "expires_at": None}


def fails_once_then_replays(request: dict) -> list[dict]:
    """The first watch's replay fails at revision 5; the next, from 5, gives the event there."""
    if request["op"] != "watch":
        return [{"id": request["id"], "status": "pong"}]
    if request.get("from_revision") != 5:
        return [watching(request, 1), acquired(1, 3), replay_failed(1, 5)]
    return [watching(request, 2), acquired(2, 5, "k5")]


def always_fails(request: dict) -> list[dict]:
    """Every watch's replay fails at revision 5."""
    watch_id = request["id"]  # a fresh one each time
    return [watching(request, watch_id), replay_failed(watch_id, 5)]
