"""A host's newest values: its ``latest`` row, then its frames newer than the row.

Rewriting a host's row (every series' newest value and time, ~15 KB) on every
sample was half of the writer's cost per line. So the writer leaves a sample
out of the row when the row and the sample's frame together tell exactly what
the row would have held:

- the sample is newer than every value the host has (by at most :data:`MAX_GAP_MS`)
  and creates no series, so each of its values becomes its series' newest;
- it has a frame (non-error values), and its error counters (which frames do
  not hold: they are stored on change) are exactly the row's newest ones,
  those whose time is the row's ``ts_ms``, with none of their values changed.

The newest values are then: the row; then for each frame newer than the row,
oldest first, the frame's values at its time and the row's newest error
counters moved to its time, values kept. Every frame newer than the row is such
a sample: any other sample has the row written in its own transaction.

The writer writes the row again after :data:`MAX_DEFERRED` samples left out, and
once the oldest one left out is :data:`MAX_DEFER_MS` older than the store's
clock: long before sealing (one minute after, ``SEAL_GRACE_MS``) and expiry
could touch its frame. A reader reads the frames newer than what it last
applied, so a console polling every second reads about one frame per host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fleet.store.codec import F64, I64, decode_frame

MAX_GAP_MS = 2_500
"""Only a host that streams (samples at most this far apart) leaves samples out of its row: one
sampled less often gets its row with every sample, so that rows never all fall due
(:data:`MAX_DEFER_MS`) at once when the store's clock jumps a whole collection interval."""
MAX_DEFERRED = 8
"""Samples of a host left out of its row before the row is written again: bounds a new reader's work."""
MAX_DEFER_MS = 10_000
"""The oldest sample left out of a row is written this long after (store clock), well before sealing:
so every frame newer than its row is at most this much older than the store's newest frame, and a
reader finds them all in a short range of the frames' time index."""


@dataclass(slots=True)
class HostLatest:
    """One host's newest values by series id, from its row and the frames applied after it."""

    sids: I64
    ts_ms: I64
    values: F64
    row_ts: int
    """The row's ``ts_ms``: frames newer than this are not in the row."""
    applied_ms: int
    """The newest frame applied (``row_ts`` when none): the next frames to read are newer."""
    error_at: I64 | None = None
    """Positions of the row's newest error counters (:meth:`find_errors`)."""

    @classmethod
    def from_row(cls, ts_ms: int, blob: bytes) -> HostLatest:
        sids, values, stamps = decode_frame(blob)
        if stamps is None:
            raise ValueError("store: a latest row without per-value times")
        return cls(sids, stamps, values, ts_ms, ts_ms)

    def find_errors(self, is_error: npt.NDArray[np.bool_]) -> None:
        """Note the row's newest error counters; ``is_error``: per series of :attr:`sids`, whether it
        is an error counter. Needed once, before the first frame is applied."""
        self.error_at = np.flatnonzero(is_error & (self.ts_ms == self.row_ts))

    def apply(self, ts_ms: int, blob: bytes) -> None:
        """Apply the frame at ``ts_ms``, newer than any applied."""
        if self.error_at is None or ts_ms <= self.applied_ms:
            raise ValueError(f"store: frame at {ts_ms} applied out of order or before find_errors")
        sids, values, _ = decode_frame(blob)
        at = np.searchsorted(self.sids, sids)
        if len(at) and (at[-1] >= len(self.sids) or not np.array_equal(self.sids[at], sids)):
            raise ValueError("store: a frame newer than its host's latest row holds series the row lacks")
        self.values[at] = values
        self.ts_ms[at] = ts_ms
        self.ts_ms[self.error_at] = ts_ms
        self.applied_ms = ts_ms
