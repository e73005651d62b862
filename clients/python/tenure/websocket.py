"""A minimal RFC 6455 client, without I/O: the opening handshake and the framing. The blocking
and the asyncio transports both drive it."""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from urllib.parse import urlsplit

from .errors import Forbidden, ProtocolError, TenureError, Unavailable

TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 0x1, 0x2, 0x8, 0x9, 0xA, 0x0
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def split_url(url: str) -> tuple[str, int, str]:
    """host, port and path of a ws:// URL (wss:// is not supported: tenured listens on loopback)."""
    parts = urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise TenureError(f"not a ws:// URL: {url!r}")
    return parts.hostname, parts.port or 80, (parts.path or "/") + (
        "?" + parts.query if parts.query else "")


def handshake(url: str, token: str | None) -> tuple[bytes, str]:
    """The upgrade request and the key its answer must acknowledge."""
    host, port, path = split_url(url)
    key = base64.b64encode(os.urandom(16)).decode()
    host_header = f"[{host}]" if ":" in host else host
    lines = [f"GET {path} HTTP/1.1", f"Host: {host_header}:{port}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), key


def check_answer(url: str, head: bytes, key: str) -> None:
    """REQUIRES: head is the answer's status line and headers, up to the blank line."""
    text = head.decode("latin-1")
    status_line, *header_lines = text.split("\r\n")
    fields = status_line.split(" ", 2)
    status = fields[1] if len(fields) > 1 else "?"
    if status == "403":
        raise Forbidden(f"{url} refused the WebSocket handshake: {status_line}", "forbidden")
    if status != "101":
        raise Unavailable(f"{url} did not accept the WebSocket handshake: {status_line}")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    expected = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
    if headers.get("sec-websocket-accept") != expected:
        raise ProtocolError(f"{url} answered the handshake with a wrong Sec-WebSocket-Accept")


def frame(opcode: int, payload: bytes) -> bytes:
    """One final frame, masked as a client must."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    mask = os.urandom(4)
    body = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
    return head + mask + body


class Decoder:
    """Bytes in, whole messages out: (opcode, payload), fragments joined, control frames as
    they come."""

    def __init__(self, max_message: int = 16 << 20) -> None:
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_opcode = 0
        self._max = max_message

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        out = []
        while True:
            parsed = self._one_frame()
            if parsed is None:
                return out
            fin, opcode, payload = parsed
            if opcode >= CLOSE:
                out.append((opcode, payload))
            elif opcode == CONTINUATION:
                self._fragments.append(payload)
                if fin:
                    out.append((self._fragment_opcode, b"".join(self._fragments)))
                    self._fragments = []
            elif fin:
                out.append((opcode, payload))
            else:
                self._fragment_opcode, self._fragments = opcode, [payload]

    def _one_frame(self) -> tuple[bool, int, bytes] | None:
        b = self._buffer
        if len(b) < 2:
            return None
        fin, opcode, masked, n = b[0] & 0x80, b[0] & 0x0F, b[1] & 0x80, b[1] & 0x7F
        pos = 2
        if n == 126:
            if len(b) < 4:
                return None
            n, pos = struct.unpack_from("!H", b, 2)[0], 4
        elif n == 127:
            if len(b) < 10:
                return None
            n, pos = struct.unpack_from("!Q", b, 2)[0], 10
        if n > self._max:
            raise ProtocolError(f"tenured sent a WebSocket frame of {n} bytes")
        mask = b""
        if masked:
            if len(b) < pos + 4:
                return None
            mask, pos = bytes(b[pos:pos + 4]), pos + 4
        if len(b) < pos + n:
            return None
        payload = bytes(b[pos:pos + n])
        if mask:
            payload = bytes(x ^ mask[i & 3] for i, x in enumerate(payload))
        del b[:pos + n]
        return bool(fin), opcode, payload
