"""Rollup arithmetic: min/max/sum/count (and p50/p99 for latencies) per series and time bucket.

A rollup block reuses :func:`fleet.store.codec.encode_block`: its rows are
``sid * 8 + stat`` (see :data:`STATS`) and its columns are bucket starts.
The sum is stored rather than the average (avg = sum / count, computed on
read): sums of integer readings stay integers, which the codec packs in a
byte or two, where averages would be full-precision floats. Readings with k
decimals (optics in 0.0001 dBm, power in mW) are summed as scaled integers,
so their sums keep k decimals too.

Counters are cumulative: their min, average and maximum over a minute say
nothing that the value at its end does not, so their rollups keep only that
last value (and the count), at a third of the cost.
"""

from __future__ import annotations

import numpy as np

from fleet.fabric.samples import METRICS
from fleet.store.codec import BOOL, F64, I64, decimal_scales

STATS = ("min", "sum", "max", "count", "p50", "p99")
STAT_MIN, STAT_SUM, STAT_MAX, STAT_COUNT, STAT_P50, STAT_P99 = range(6)
_LATENCY_UNITS = frozenset({"s", "ms", "usec", "ns"})


def rollup_kind(metric: str) -> str:
    """How ``metric`` is rolled up: "latency" (with p50/p99), "counter" (last value) or "gauge"."""
    if is_latency(metric):
        return "latency"
    spec = METRICS.get(metric)
    return "counter" if spec is not None and spec.kind == "counter" else "gauge"


def is_latency(metric: str) -> bool:
    """Latency metrics (a time per operation, gauges in s/ms/usec) also get p50 and p99."""
    spec = METRICS.get(metric)
    return spec is not None and spec.unit in _LATENCY_UNITS and spec.kind == "gauge"


def rollup_points(
    sids: I64, ts_ms: I64, values: F64, present: BOOL, bucket_ms: int, kind: str
) -> tuple[I64, I64, F64, BOOL]:
    """Aggregate a decoded block into ``(rows, bucket_starts_ms, values, present)``.

    ``kind`` from :func:`rollup_kind`; counters keep their last value in the max row.
    """
    latency, counter = kind == "latency", kind == "counter"
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
        out[base + STAT_COUNT, cols] = counts
        have[base + STAT_COUNT, cols] = have[base + STAT_MAX, cols] = True
        if counter:
            out[base + STAT_MAX, cols] = vals[np.concatenate((edges[1:], [len(vals)])) - 1]
            continue
        out[base + STAT_MIN, cols] = np.minimum.reduceat(vals, edges)
        out[base + STAT_MAX, cols] = np.maximum.reduceat(vals, edges)
        out[base + STAT_SUM, cols] = _sums(vals, edges)
        if latency:
            for col, part in zip(cols, np.split(vals, cut), strict=True):
                out[base + STAT_P50, col], out[base + STAT_P99, col] = np.percentile(part, [50, 99])
        have[base : base + nstats, cols] = True
    if counter:
        keep = (rows % 8 == STAT_MAX) | (rows % 8 == STAT_COUNT)
        return rows[keep], starts, out[keep], have[keep]
    return rows, starts, out, have


def _sums(values: F64, edges: I64) -> F64:
    """Bucket sums; exact in the values' own decimals when they have few (see store.codec)."""
    scale = int(decimal_scales(values[None, :])[0])
    if scale < 0:
        sums: F64 = np.add.reduceat(values, edges)
        return sums
    factor = 10.0**scale
    scaled = np.rint(values * factor).astype(np.int64)
    total = np.add.reduceat(scaled, edges)
    if np.all(np.abs(total) < 2**53):
        exact: F64 = total.astype(np.float64) / factor
        return exact
    fallback: F64 = np.add.reduceat(values, edges)
    return fallback


def rollup_cells(
    sids: I64, ts_ms: I64, values: F64, present: BOOL, bucket_ms: int, kind: str
) -> tuple[I64, I64, F64]:
    """The rollup of a decoded raw block as cells ``(row = sid*8+stat, bucket_start_ms, value)``."""
    if not present.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
    rows, starts, out, have = rollup_points(sids, ts_ms, values, present, bucket_ms, kind)
    r, c = np.nonzero(have)
    return rows[r], starts[c], out[r, c]
