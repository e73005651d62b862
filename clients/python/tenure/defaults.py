"""Where tenured's socket is, and the default owner: the same rules as the tenure CLI."""

from __future__ import annotations

import getpass
import os
import secrets
import socket as _socket

from .errors import TenureError


def default_socket_path() -> str | None:
    """tenured's own default: $XDG_STATE_HOME/tenure/tenured.sock (an absolute XDG_STATE_HOME
    only), else $HOME/.local/state/tenure/tenured.sock; None when neither is set."""
    state = os.environ.get("XDG_STATE_HOME", "")
    if state.startswith("/"):
        return state + "/tenure/tenured.sock"
    home = os.environ.get("HOME", "")
    return home + "/.local/state/tenure/tenured.sock" if home else None


def resolve_socket_path(explicit: str | os.PathLike | None) -> str:
    """The socket argument, else $TENURE_SOCKET, else tenured's default."""
    if explicit is not None:
        return os.fspath(explicit)
    if os.environ.get("TENURE_SOCKET"):
        return os.environ["TENURE_SOCKET"]
    path = default_socket_path()
    if path is None:
        raise TenureError("cannot tell where tenured's socket is: HOME is unset; pass socket= "
                          "or set TENURE_SOCKET")
    return path


def _printable(text: str) -> str:
    return "".join(c if " " < c < "\x7f" else "_" for c in text)


def new_owner() -> str:
    """`user@host:pid-suffix`: readable, and unique (64 random bits) so never shared by two
    holders, not even two leases of one process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid{os.getuid()}"
    suffix = secrets.token_hex(8)
    head = _printable(f"{user}@{_socket.gethostname()}:{os.getpid()}")
    return head[: 128 - len(suffix) - 1] + "-" + suffix
