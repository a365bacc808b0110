"""Results and settings of the store, shared by the writer, the reader and their callers."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast, overload

import numpy as np
import numpy.typing as npt


class Point(NamedTuple):
    """One value of one series at ``ts`` (unix seconds)."""

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

    def points(self) -> PointList:
        """The same points as :class:`Point` tuples, each made when it is read."""
        return PointList(self)


class PointList(Sequence[Point]):
    """The points of arrays (:class:`PointArrays`) as :class:`Point` tuples, each made when it is
    read. A whole fleet's newest values are hundreds of thousands of points: as a list they would
    be made all at once, most of the query's cost, and then stay in the cyclic garbage
    collector's way for as long as the list lives; read one by one, each goes when its reader
    is done with it. Equal to any sequence of the same points in the same order.
    """

    __slots__ = ("_arrays",)

    def __init__(self, arrays: PointArrays) -> None:
        self._arrays = arrays

    def __len__(self) -> int:
        return len(self._arrays)

    @overload
    def __getitem__(self, at: int) -> Point: ...

    @overload
    def __getitem__(self, at: slice) -> list[Point]: ...

    def __getitem__(self, at: int | slice) -> Point | list[Point]:
        arrays = self._arrays
        if isinstance(at, slice):
            return [self[index] for index in range(*at.indices(len(arrays)))]
        name = arrays.names[int(arrays.sids[at])]
        assert name is not None  # a point's series is in the reader's table
        host, metric, device, port = name
        return Point(host, metric, device, port, float(arrays.ts[at]), float(arrays.values[at]))

    def __iter__(self) -> Iterator[Point]:
        arrays = self._arrays
        names = cast(Sequence[SeriesName], arrays.names)  # a point's series is in the reader's table
        for (host, metric, device, port), ts, value in zip(map(names.__getitem__, arrays.sids.tolist()),
                                                          arrays.ts.tolist(), arrays.values.tolist(), strict=True):
            yield Point(host, metric, device, port, ts, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which have none

    def __repr__(self) -> str:
        return f"PointList({list(self)!r})"


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
