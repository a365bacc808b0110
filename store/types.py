"""Results and settings of the store, shared by the writer, the reader and their callers."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

import numpy as np
import numpy.typing as npt


class Point(NamedTuple):
    """One value of one series at ``ts`` (unix seconds).

    A NamedTuple rather than a dataclass: whole-fleet queries build hundreds of
    thousands of these and a tuple is several times cheaper to create; it is
    just as immutable.
    """

    host: str
    metric: str
    device: str
    port: str
    ts: float
    value: float


SeriesName = tuple[str, str, str, str]
"""(host, metric, device, port)."""


@dataclass(frozen=True, slots=True)
class PointArrays:
    """Many points as arrays, for whole-fleet views: point ``i`` is series
    ``names[sids[i]]`` = (host, metric, device, port) with value ``values[i]`` at
    ``ts[i]`` (unix seconds). ``names`` is the reader's table, shared, not copied:
    building a few hundred thousand :class:`Point` objects costs far more than the
    query itself, so callers that can work on arrays should.
    """

    sids: npt.NDArray[np.int64]
    ts: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]
    names: Sequence[SeriesName | None]

    def __len__(self) -> int:
        return len(self.sids)

    def points(self) -> list[Point]:
        """The same points as :class:`Point` tuples."""
        # map() over C-level callables: about a third faster than a comprehension.
        # The cyclic collector is paused while building: hundreds of thousands of new
        # tuples would otherwise trigger full collections that walk the whole heap
        # (measured: 200+ ms spikes on a 1,024-node fleet); these tuples hold only
        # strings and floats, so they can never be part of a cycle.
        rows = map(tuple.__add__, map(self.names.__getitem__, self.sids.tolist()),  # type: ignore[arg-type]
                   zip(self.ts.tolist(), self.values.tolist(), strict=True))
        collecting = gc.isenabled()
        gc.disable()
        try:
            return list(map(tuple.__new__, repeat(Point), rows))
        finally:
            if collecting:
                gc.enable()


@dataclass(frozen=True, slots=True)
class SeriesData:
    """A series over a window: raw points (min = avg = max) or 1 min / 1 h rollups.

    Rollups of counters hold the counter's last value in each bucket (min =
    avg = max = that value): a cumulative count's extremes say nothing more.

    ``ts`` are unix seconds: the sample time for raw points, the bucket start
    for rollups. ``p50``/``p99`` are present for latency metrics only.
    """

    resolution: str  # "raw" | "1m" | "1h"
    ts: list[float]
    min: list[float]
    avg: list[float]
    max: list[float]
    p50: list[float] | None = None
    p99: list[float] | None = None


@dataclass(frozen=True, slots=True)
class WriterStats:
    """What the writer has done and whether it can write now.

    ``queued``: samples plus records waiting for the writer thread;
    ``written``: samples plus records committed; ``samples_written``: sample
    values committed (what a collector may say it stored); ``dropped``: gauge (then
    counter) samples discarded by back-pressure; ``failing``: why writing fails
    right now, in words, or None; ``in_memory``: items held in memory because
    the last write failed (disk full, read-only file), retried until it works;
    ``busy_s``: seconds the writer thread spent writing and maintaining (its load);
    ``longest_step_s``: the longest maintenance transaction so far, seconds (how
    long a batch could have waited behind sealing, rollups or expiry).
    """

    queued: int
    written: int
    dropped: int
    failing: str | None
    in_memory: int
    samples_written: int = 0
    busy_s: float = 0.0
    longest_step_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Retention:
    """How long each resolution is kept, in seconds (raw 48 h, 1 min 30 days, 1 h 400 days)."""

    raw_s: float = 48 * 3600.0
    rollup_1m_s: float = 30 * 86400.0
    rollup_1h_s: float = 400 * 86400.0
