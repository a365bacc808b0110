"""Moments typed by a user: ``--at`` and the replay jump dialog.

Accepted: unix seconds (``1764385200``), ISO 8601 (``2026-11-29T03:00:00Z``,
``2026-11-29 03:00``; no zone means UTC, the zone the header shows), and
offsets back from now (``-90s``, ``-15m``, ``-2h``, ``-1d``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_OFFSET = re.compile(r"^-(\d+(?:\.\d+)?)([smhd])$")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class TimeSpecError(ValueError):
    """The text names no moment we understand; the message says what would."""


def parse_moment(text: str, now_ts: float) -> float:
    """Unix seconds of ``text``; ``now_ts`` anchors relative offsets."""
    spec = text.strip()
    if not spec:
        raise TimeSpecError("empty time; try 2026-11-29T03:00Z, -15m or unix seconds")
    offset = _OFFSET.match(spec)
    if offset:
        return now_ts - float(offset.group(1)) * _UNIT_S[offset.group(2)]
    try:
        return float(spec)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(spec.replace("Z", "+00:00"))
    except ValueError as error:
        raise TimeSpecError(
            f"cannot read {spec!r} as a time; try 2026-11-29T03:00Z, -15m or unix seconds"
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def format_moment(ts: float) -> str:
    """The UTC wall time the console shows: ``2026-11-29 03:00:05Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
