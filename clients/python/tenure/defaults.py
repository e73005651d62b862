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


# The socket of the machine-wide service (packaging/systemd/tenured.socket, the Debian package).
SYSTEM_SOCKET = "/run/tenure/tenured.sock"


def _present(path: str) -> bool:
    """Anything but "no such file" counts: a socket we may not stat is better reported by
    connect() as "permission denied" than skipped."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        pass
    return True


def choose_socket(explicit: str | os.PathLike | None) -> tuple[str, str | None]:
    """(path, also_looked_for): the socket argument, else $TENURE_SOCKET, else the per-user
    default socket if it exists, else SYSTEM_SOCKET if it exists, else the per-user default,
    with SYSTEM_SOCKET as also_looked_for (for the connect error). The CLI's rule."""
    if explicit is not None:
        return os.fspath(explicit), None
    if os.environ.get("TENURE_SOCKET"):
        return os.environ["TENURE_SOCKET"], None
    user = default_socket_path()
    if user is not None and _present(user):
        return user, None
    if _present(SYSTEM_SOCKET):
        return SYSTEM_SOCKET, None
    if user is None:
        raise TenureError(f"cannot tell where tenured's socket is: HOME is unset and "
                          f"{SYSTEM_SOCKET} does not exist; pass socket= or set TENURE_SOCKET")
    return user, SYSTEM_SOCKET


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
