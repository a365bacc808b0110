"""Moments typed by a user: ``--at`` and the replay jump dialog.

Accepted: unix seconds (``1764385200``), ISO 8601 (``2026-11-29T03:00:00Z``,
``2026-11-29 03:00``, ``2026-11-29``; no zone means UTC, the zone the header shows), a time of
day (``11:50``, ``11:50:30``: the last such moment up to now, UTC), and offsets back from now
(``-90s``, ``-15m``, ``-2h``, ``-1d``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_OFFSET = re.compile(r"^-(\d+(?:\.\d+)?)([smhd])$")
_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?Z?$")
_HINT = "try 11:50, -15m, 2026-11-29T03:00Z or unix seconds"
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class TimeSpecError(ValueError):
    """The text names no moment we understand; the message says what would."""


def parse_moment(text: str, now_ts: float) -> float:
    """Unix seconds of ``text``; ``now_ts`` anchors relative offsets."""
    spec = text.strip()
    if not spec:
        raise TimeSpecError(f"empty time; {_HINT}")
    offset = _OFFSET.match(spec)
    if offset:
        return now_ts - float(offset.group(1)) * _UNIT_S[offset.group(2)]
    clock = _TIME_OF_DAY.match(spec)
    if clock:
        return _time_of_day(int(clock.group(1)), int(clock.group(2)), float(clock.group(3) or 0.0), now_ts, spec)
    try:
        return float(spec)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(spec.replace("Z", "+00:00"))
    except ValueError as error:
        raise TimeSpecError(f"cannot read {spec!r} as a time; {_HINT}") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _time_of_day(hour: int, minute: int, second: float, now_ts: float, spec: str) -> float:
    """The newest moment at or before ``now_ts`` whose UTC time of day is the one given: in an
    incident "11:50" means this morning, or yesterday when it is not 11:50 yet."""
    if hour > 23 or minute > 59 or second >= 60:
        raise TimeSpecError(f"{spec!r} is not a time of day; {_HINT}")
    now = datetime.fromtimestamp(now_ts, UTC)
    day_start = now.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    moment = day_start + hour * 3600 + minute * 60 + second
    return moment if moment <= now_ts else moment - 86400.0


def format_moment(ts: float) -> str:
    """The UTC wall time the console shows: ``2026-11-29 03:00:05Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
