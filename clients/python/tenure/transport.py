"""Blocking transports: one JSON message per line over the Unix socket, or per text frame over
WebSocket. Each names the daemon it talks to in its errors."""

from __future__ import annotations

import errno
import socket
import threading

from . import websocket as ws
from .errors import ProtocolError, Unavailable


def connect_problem(err: OSError, also_looked_for: str | None = None) -> str:
    """The common causes in words a user can act on, as the CLI says them; `also_looked_for`:
    the other default socket, when the one tried was a default that did not exist."""
    if also_looked_for:
        return f"{connect_problem(err)} (also looked for {also_looked_for})"
    if err.errno == errno.ENOENT:
        return "no such file; is tenured running?"
    if err.errno == errno.ECONNREFUSED:
        return "connection refused; is tenured running?"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied; the socket belongs to another user"
    return err.strerror or str(err)


class UnixTransport:
    def __init__(self, path: str, timeout: float, also_looked_for: str | None = None) -> None:
        self.name = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise Unavailable(f"cannot connect to {path}: {connect_problem(e, also_looked_for)}") \
                from None
        self._sock.settimeout(None)
        self._inbox = bytearray()
        self._send_lock = threading.Lock()

    def send(self, text: str) -> None:
        data = text.encode() + b"\n"
        try:
            with self._send_lock:
                self._sock.sendall(data)
        except OSError as e:
            raise Unavailable(f"lost the connection to tenured at {self.name}: {e}") from None

    def receive(self) -> str | None:
        """The next line; None at end of file."""
        while True:
            end = self._inbox.find(b"\n")
            if end >= 0:
                line = bytes(self._inbox[:end])
                del self._inbox[:end + 1]
                if line.strip():
                    return line.decode("utf-8", "replace")
                continue
            try:
                data = self._sock.recv(65536)
            except OSError:
                return None
            if not data:
                return None
            self._inbox += data

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class WebSocketTransport:
    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        self.name = url
        host, port, _ = ws.split_url(url)
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise Unavailable(f"cannot connect to {url}: {connect_problem(e)}") from None
        request, key = ws.handshake(url, token)
        head = bytearray()
        try:
            self._sock.sendall(request)
            while b"\r\n\r\n" not in head:
                data = self._sock.recv(4096)
                if not data:
                    raise Unavailable(f"{url} closed the connection during the handshake")
                head += data
                if len(head) > 65536:
                    raise ProtocolError(f"{url} sent an oversized handshake answer")
        except OSError as e:
            self._sock.close()
            raise Unavailable(f"cannot connect to {url}: {connect_problem(e)}") from None
        end = head.index(b"\r\n\r\n")
        try:
            ws.check_answer(url, bytes(head[:end]), key)
        except Exception:
            self._sock.close()
            raise
        self._sock.settimeout(None)
        self._decoder = ws.Decoder()
        self._messages = self._decoder.feed(bytes(head[end + 4:]))
        self._send_lock = threading.Lock()

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(ws.frame(opcode, payload))

    def send(self, text: str) -> None:
        try:
            self._send_frame(ws.TEXT, text.encode())
        except OSError as e:
            raise Unavailable(f"lost the connection to tenured at {self.name}: {e}") from None

    def receive(self) -> str | None:
        while True:
            while self._messages:
                opcode, payload = self._messages.pop(0)
                if opcode == ws.TEXT:
                    return payload.decode("utf-8", "replace")
                try:
                    if opcode == ws.PING:
                        self._send_frame(ws.PONG, payload)
                    elif opcode == ws.CLOSE:
                        self._send_frame(ws.CLOSE, payload[:2])
                        return None
                except OSError:
                    return None
            try:
                data = self._sock.recv(65536)
            except OSError:
                return None
            if not data:
                return None
            self._messages = self._decoder.feed(data)

    def close(self) -> None:
        try:
            self._send_frame(ws.CLOSE, b"\x03\xe8")
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
