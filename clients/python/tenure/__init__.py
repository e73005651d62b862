"""Client of tenured, the lease coordinator: fenced, time-limited ownership of keys.

    client = tenure.Client()
    with client.lease("pr/1051", ttl="15m", wait="30s") as lease:
        write(lease.token)
"""

from .client import Client, Lease, Watch
from .defaults import default_socket_path, new_owner
from .durations import to_ms
from .errors import (Compacted, Forbidden, Held, NotHolder, ProtocolError, TenureError, Timeout,
                     Unavailable)
from .types import (Acquired, Check, Event, HistoryPage, KeepAlive, KeyState, LeaseInfo,
                    LeasePage, Released, Renewed, Revoked, Stats, TenureRecord, Waiter)

__all__ = [
    "Client", "Lease", "Watch", "default_socket_path", "new_owner", "to_ms",
    "TenureError", "Held", "NotHolder", "Forbidden", "Unavailable", "Timeout", "ProtocolError",
    "Compacted", "Acquired", "Check", "Event", "HistoryPage", "KeepAlive", "KeyState",
    "LeaseInfo", "LeasePage", "Released", "Renewed", "Revoked", "Stats", "TenureRecord", "Waiter",
]
__version__ = "0.1.0"
