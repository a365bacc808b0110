"""Reading points back: frames, chunks and rollups, for a set of series and a time window.

Shared by the reader's queries; every function takes a read connection and
works in the store's integer milliseconds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from fleet.store.codec import F64, I64, decode_block, decode_frame, member
from fleet.store.rollup import rollup_cells

MAX_BLOCK_MS = 86_400_000
"""Chunks span at most a day (StoreWriter refuses longer blocks): bounds index range scans."""

Points = tuple[I64, I64, F64]
"""(sids, ts_ms, values) of individual points, in no particular order."""

EMPTY: Points = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


def concat(parts: Iterable[Points]) -> Points:
    items = list(parts)
    if not items:
        return EMPTY
    sids, ts_ms, values = zip(*items, strict=True)
    return np.concatenate(sids), np.concatenate(ts_ms), np.concatenate(values)


def block_points(blob: bytes, rows_wanted: I64 | None = None) -> Points:
    """The present cells of a block, optionally only the rows (sids) in ``rows_wanted``."""
    sids, ts_ms, values, present = decode_block(blob, rows_wanted)
    rows, cols = np.nonzero(present)
    return sids[rows], ts_ms[cols], values[rows, cols]


def frame_points(ts_ms: int, blob: bytes) -> Points:
    sids, values, _ = decode_frame(blob)
    return sids, np.full(len(sids), ts_ms, dtype=np.int64), values


def frame_subset(ts_ms: int, blob: bytes, wanted: I64) -> Points:
    """The points of a frame whose sids are in ``wanted`` (sorted): a binary search, not a scan."""
    sids, values, _ = decode_frame(blob)
    at = np.minimum(np.searchsorted(sids, wanted), len(sids) - 1) if len(sids) else wanted[:0]
    hit = sids[at] == wanted if len(sids) else np.zeros(0, dtype=np.bool_)
    return wanted[hit], np.full(int(hit.sum()), ts_ms, dtype=np.int64), values[at[hit]]


def raw_points(conn: sqlite3.Connection, host: str, gids: list[int], sids: I64,
               start_ms: int, end_ms: int) -> Points:
    """Raw points of ``sids`` (sorted; of ``host``, in groups ``gids``) with start <= ts <= end."""
    parts: list[Points] = []
    for gid in gids:
        for (blob,) in conn.execute(
            "SELECT data FROM chunks WHERE group_id = ? AND t0_ms <= ? AND t0_ms > ? "
            "AND last_ms >= ? ORDER BY t0_ms", (gid, end_ms, start_ms - MAX_BLOCK_MS, start_ms)):
            parts.append(block_points(blob, sids))
    for ts_ms, blob in conn.execute(
        "SELECT ts_ms, data FROM frames WHERE host = ? AND ts_ms >= ? AND ts_ms <= ? AND sealed = 0",
        (host, start_ms, end_ms)):
        parts.append(frame_subset(ts_ms, blob, sids))
    s, t, v = concat(parts)
    keep = member(s, sids) & (t >= start_ms) & (t <= end_ms)
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


def rollup_rows(conn: sqlite3.Connection, table: str, gid: int, row_ms: int, bucket_ms: int,
                start_ms: int, end_ms: int, kind: str,
                raw: tuple[str, I64]) -> tuple[I64, I64, F64]:
    """Rollup cells ``(row = sid*8+stat, bucket_ms, value)`` for buckets in [start, end].

    Buckets before the writer's rollup cursor come from the stored rows (one per
    ``row_ms``); the newer ones, not rolled up yet, are computed from raw points.
    """
    host, sids = raw
    found = conn.execute("SELECT value FROM store_state WHERE key = ?", (f"{table}_t0",)).fetchone()
    rolled_ms = int(found[0]) if found is not None else 0
    first = (start_ms // bucket_ms) * bucket_ms
    parts: list[Points] = []
    if first < rolled_ms:
        stat_rows = (sids[:, None] * 8 + np.arange(8)).ravel()  # a rollup row's rows are sid * 8 + stat
        for (blob,) in conn.execute(
            f"SELECT data FROM {table} WHERE group_id = ? AND t0_ms >= ? AND t0_ms <= ? ORDER BY t0_ms",
            (gid, (first // row_ms) * row_ms, min(end_ms, rolled_ms))):
            s, t, v = block_points(blob, stat_rows)
            keep = (t < rolled_ms) & (t >= first) & (t <= end_ms)
            parts.append((s[keep], t[keep], v[keep]))
    raw_from = max(first, rolled_ms)
    if raw_from <= end_ms:
        s, t, v = raw_points(conn, host, [gid], sids, raw_from, end_ms)
        if len(s):
            u_sids, u_ts, matrix, present = _matrix(s, t, v)
            parts.append(rollup_cells(u_sids, u_ts, matrix, present, bucket_ms, kind))
    return concat(parts)


def _matrix(s: I64, t: I64, v: F64) -> tuple[I64, I64, F64, npt.NDArray[np.bool_]]:
    u_sids, inverse = np.unique(s, return_inverse=True)
    u_ts, col = np.unique(t, return_inverse=True)
    matrix = np.full((len(u_sids), len(u_ts)), np.nan)
    present = np.zeros(matrix.shape, dtype=np.bool_)
    matrix[inverse, col] = v
    present[inverse, col] = True
    return u_sids, u_ts, matrix, present
