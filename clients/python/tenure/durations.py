"""Durations as the CLI writes them ("250ms", "15m", "1h30m"), seconds, or timedelta."""

from __future__ import annotations

import re
from datetime import timedelta

Duration = str | int | float | timedelta

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def to_ms(value: Duration) -> int:
    """Whole milliseconds (rounded up, so that a positive duration never becomes 0)."""
    if isinstance(value, bool):
        raise TypeError("a duration cannot be a bool")
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        pos, ms = 0, 0.0
        for match in _PART.finditer(text):
            if match.start() != pos:
                break
            ms += float(match.group(1)) * _UNIT_MS[match.group(2)]
            pos = match.end()
        if pos != len(text) or not text:
            raise ValueError(f"not a duration: {value!r} (expected e.g. 250ms, 30s, 15m, 1h30m)")
        seconds = ms / 1000
    else:
        raise TypeError(f"not a duration: {value!r}")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {value!r}")
    whole = int(seconds * 1000)
    return whole + 1 if whole < seconds * 1000 else whole
