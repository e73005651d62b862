"""The daemons a client may talk to, and which one it tries next: shared by both clients, each
with its own way to open a connection."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .defaults import choose_socket
from .errors import Unavailable


class Endpoints:
    """A socket path (`socket`, else $TENURE_SOCKET, else the defaults the CLI looks at), a
    WebSocket `url`, or several `endpoints` (socket paths and ws:// URLs: a cluster's nodes).
    `open_unix(path, timeout, also_looked_for)` and `open_ws(url, token, timeout)` open one."""

    def __init__(self, client_name: str, socket: str | None, url: str | None,
                 endpoints: Sequence[str] | None, token: str | None, timeout: float,
                 open_unix: Callable[..., Any], open_ws: Callable[..., Any]) -> None:
        def opener(endpoint: str) -> Callable[[], Any]:
            if endpoint.startswith("ws://"):
                return lambda: open_ws(endpoint, token, timeout)
            return lambda: open_unix(endpoint, timeout, None)

        if endpoints:
            if socket is not None or url is not None:
                raise ValueError(f"{client_name} takes endpoints, or a socket or url, not both")
            self._list = [(e, opener(e)) for e in endpoints]
        elif url is not None:
            self._list = [(url, opener(url))]
        else:
            path, also = choose_socket(socket)
            self._list = [(path, lambda: open_unix(path, timeout, also))]
        self._current = 0

    @property
    def current(self) -> str:
        """The endpoint in use (or tried next)."""
        return self._list[self._current][0]

    @property
    def several(self) -> bool:
        return len(self._list) > 1

    def move_on(self) -> None:
        self._current = (self._current + 1) % len(self._list)

    def tries(self) -> "Tries":
        return Tries(self)


class Tries:
    """The openers of every endpoint once, from the current one: call `failed(e)` after each that
    raised Unavailable; past the last, iterating raises Unavailable naming every problem."""

    def __init__(self, endpoints: Endpoints) -> None:
        self._endpoints = endpoints
        self._problems: list[str] = []

    def __iter__(self) -> "Tries":
        return self

    def __next__(self) -> Callable[[], Any]:
        if len(self._problems) == len(self._endpoints._list):
            raise Unavailable("; ".join(self._problems))
        return self._endpoints._list[self._endpoints._current][1]

    def failed(self, error: Unavailable) -> None:
        self._problems.append(str(error))
        self._endpoints.move_on()
