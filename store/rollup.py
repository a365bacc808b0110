"""Rollup arithmetic: min/max/sum/count (and p50/p99 for latencies) per series and time bucket.

A rollup block reuses :func:`store.codec.encode_block`: its rows are
``sid * 8 + stat`` (see :data:`STATS`) and its columns are bucket starts.
The sum is stored rather than the average (avg = sum / count, computed on
read, the same float): sums of integer readings stay integers, which the
codec packs in a byte or two, where averages would be full-precision floats.
"""

from __future__ import annotations

import numpy as np

from fabric.samples import METRICS
from store.codec import BOOL, F64, I64, encode_block

STATS = ("min", "sum", "max", "count", "p50", "p99")
STAT_MIN, STAT_SUM, STAT_MAX, STAT_COUNT, STAT_P50, STAT_P99 = range(6)
_LATENCY_UNITS = frozenset({"s", "ms", "usec", "ns"})


def is_latency(metric: str) -> bool:
    """Latency metrics (a time per operation, gauges in s/ms/usec) also get p50 and p99."""
    spec = METRICS.get(metric)
    return spec is not None and spec.unit in _LATENCY_UNITS and spec.kind == "gauge"


def rollup_points(
    sids: I64, ts_ms: I64, values: F64, present: BOOL, bucket_ms: int, latency: bool
) -> tuple[I64, I64, F64, BOOL]:
    """Aggregate a decoded block into ``(rows, bucket_starts_ms, values, present)``."""
    buckets_all = (ts_ms // bucket_ms) * bucket_ms
    starts = np.unique(buckets_all)
    nstats = 6 if latency else 4
    rows = (sids[:, None] * 8 + np.arange(nstats)[None, :]).reshape(-1)
    out = np.full((len(sids) * nstats, len(starts)), np.nan)
    have = np.zeros(out.shape, dtype=np.bool_)
    for i in range(len(sids)):
        mask = present[i]
        if not mask.any():
            continue
        vals = values[i, mask]
        b = buckets_all[mask]
        cut = np.flatnonzero(np.diff(b)) + 1
        edges = np.concatenate(([0], cut))
        cols = np.searchsorted(starts, b[edges])
        counts = np.diff(np.concatenate((edges, [len(vals)])))
        base = i * nstats
        out[base + STAT_MIN, cols] = np.minimum.reduceat(vals, edges)
        out[base + STAT_MAX, cols] = np.maximum.reduceat(vals, edges)
        out[base + STAT_SUM, cols] = np.add.reduceat(vals, edges)
        out[base + STAT_COUNT, cols] = counts
        if latency:
            for col, part in zip(cols, np.split(vals, cut), strict=True):
                out[base + STAT_P50, col], out[base + STAT_P99, col] = np.percentile(part, [50, 99])
        have[base : base + nstats, cols] = True
    return rows, starts, out, have


def encode_rollup(
    sids: I64, ts_ms: I64, values: F64, present: BOOL, bucket_ms: int, latency: bool
) -> bytes | None:
    """The rollup block of a decoded raw block, or None when it holds no points."""
    if not present.any():
        return None
    rows, starts, out, have = rollup_points(sids, ts_ms, values, present, bucket_ms, latency)
    keep = have.any(axis=1)
    return encode_block(rows[keep], starts, out[keep], have[keep])
