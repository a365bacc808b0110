"""Reading points back: frames, chunks and rollups, for a set of series and a time window.

Shared by the reader's queries; every function takes a read connection and
works in the store's integer milliseconds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import numpy as np

from store.codec import F64, I64, decode_block, decode_frame
from store.rollup import rollup_points

Points = tuple[I64, I64, F64]
"""(sids, ts_ms, values) of individual points, in no particular order."""

EMPTY: Points = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


def concat(parts: Iterable[Points]) -> Points:
    items = list(parts)
    if not items:
        return EMPTY
    return (np.concatenate([p[0] for p in items]), np.concatenate([p[1] for p in items]),
            np.concatenate([p[2] for p in items]))


def block_points(blob: bytes, rows_wanted: I64 | None = None) -> Points:
    """The present cells of a block, optionally only the rows (sids) in ``rows_wanted``."""
    sids, ts_ms, values, present = decode_block(blob)
    if rows_wanted is not None:
        keep = np.isin(sids, rows_wanted)
        sids, values, present = sids[keep], values[keep], present[keep]
    rows, cols = np.nonzero(present)
    return sids[rows], ts_ms[cols], values[rows, cols]


def frame_points(ts_ms: int, blob: bytes) -> Points:
    sids, values, _ = decode_frame(blob)
    return sids, np.full(len(sids), ts_ms, dtype=np.int64), values


def raw_points(conn: sqlite3.Connection, host: str, gids: list[int], sids: I64,
               start_ms: int, end_ms: int) -> Points:
    """Raw points of ``sids`` (of ``host``, in groups ``gids``) with start <= ts <= end."""
    parts: list[Points] = []
    for gid in gids:
        for (blob,) in conn.execute(
            "SELECT data FROM chunks WHERE group_id = ? AND t0_ms <= ? AND last_ms >= ? "
            "ORDER BY t0_ms", (gid, end_ms, start_ms)):
            parts.append(block_points(blob, sids))
    for ts_ms, blob in conn.execute(
        "SELECT ts_ms, data FROM frames WHERE host = ? AND ts_ms >= ? AND ts_ms <= ? AND sealed = 0",
        (host, start_ms, end_ms)):
        parts.append(frame_points(ts_ms, blob))
    s, t, v = concat(parts)
    keep = np.isin(s, sids) & (t >= start_ms) & (t <= end_ms)
    return s[keep], t[keep], v[keep]


def last_per_series(points: Points) -> Points:
    """For each sid, its newest point (the later write wins on equal timestamps)."""
    s, t, v = points
    if len(s) == 0:
        return points
    order = np.lexsort((np.arange(len(s)), t, s))
    s, t, v = s[order], t[order], v[order]
    last = np.ones(len(s), dtype=np.bool_)
    last[:-1] = s[1:] != s[:-1]
    return s[last], t[last], v[last]


def rollup_rows(conn: sqlite3.Connection, table: str, gid: int, period_ms: int, bucket_ms: int,
                start_ms: int, end_ms: int, kind: str,
                raw: tuple[str, I64]) -> tuple[I64, I64, F64]:
    """Rollup cells ``(row = sid*8+stat, bucket_ms, value)`` for buckets in [start, end].

    Periods without a stored rollup row (not yet rolled up) are computed from raw points.
    """
    first_period = (start_ms // period_ms) * period_ms
    stored = {t0: blob for t0, blob in conn.execute(
        f"SELECT t0_ms, data FROM {table} WHERE group_id = ? AND t0_ms >= ? AND t0_ms <= ?",
        (gid, first_period, end_ms))}
    parts: list[Points] = []
    host, sids = raw
    period = first_period
    while period <= end_ms:
        blob = stored.get(period)
        if blob is not None:
            parts.append(block_points(blob))
        else:
            s, t, v = raw_points(conn, host, [gid], sids, period, period + period_ms - 1)
            if len(s):
                u_sids, inverse = np.unique(s, return_inverse=True)
                u_ts, col = np.unique(t, return_inverse=True)
                matrix = np.full((len(u_sids), len(u_ts)), np.nan)
                present = np.zeros(matrix.shape, dtype=np.bool_)
                matrix[inverse, col] = v
                present[inverse, col] = True
                rows, starts, out, have = rollup_points(u_sids, u_ts, matrix, present, bucket_ms, kind)
                r, c = np.nonzero(have)
                parts.append((rows[r], starts[c], out[r, c]))
        period += period_ms
    s, t, v = concat(parts)
    keep = (t >= (start_ms // bucket_ms) * bucket_ms) & (t <= end_ms)
    return s[keep], t[keep], v[keep]
