"""When a watch subscribes again after Unavailable: shared by tenure.Watch and tenure.aio.Watch."""

from __future__ import annotations

import time

from .errors import Unavailable


class Resubscribe:
    """Backoff from 50 ms to 2 s, for `budget` seconds after the first failure (None: no limit).
    A first subscription has a budget (its caller waits on it), and a refusal for too many watches
    is its answer; a resume waits that out too."""

    def __init__(self, budget: float | None) -> None:
        self.budget, self.since, self.backoff = budget, None, 0.05

    def delay(self, e: Unavailable) -> float | None:
        """Seconds to wait before trying again after `e`, or None to give up with it."""
        first = self.budget is not None
        if first and e.code == "too_many_requests":
            return None
        now = time.monotonic()
        self.since = self.since or now
        if first and now - self.since >= self.budget:
            return None
        delay, self.backoff = self.backoff, min(self.backoff * 2, 2.0)
        return delay
