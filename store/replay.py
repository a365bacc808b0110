"""The last point of each series in many chunks at once, for replaying the fleet at an old time.

``as_of`` older than the replay hour has no frames to read: it needs, per series,
the last point at or before the asked time from the chunks (one per metric and
host, ~60,000 for a 1,024-node fleet). Decoding them one by one costs ~50 us
of Python and numpy set-up each. Chunks of a steady collection all have the
same shape (n series x m times, every cell present), so here they are decoded
as one stacked array per shape and the last column at or before ``end_ms`` is
taken for all of them with a handful of numpy calls. Chunks of any other shape
(absent cells: late or missing samples) go through :func:`decode_block`.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from fleet.store.codec import (
    ALL_PRESENT,
    BLOCK_HEADER,
    BLOCK_VERSION,
    F64,
    I64,
    decode_rows,
    decode_uniform_planes,
)
from fleet.store.points import EMPTY, Points, block_points, concat


def last_points(blobs: Sequence[bytes], start_ms: int, end_ms: int) -> Points:
    """The points of ``blobs`` with start < ts <= end that an as-of answer needs.

    Uniform chunks give only each series' last point in the window, others all their
    points in it: :func:`fleet.store.points.last_per_series` of the result is exactly that
    of every point of the chunks in the window.
    """
    raws = [zlib.decompress(blob) for blob in blobs]
    by_shape: dict[tuple[int, int], list[bytes]] = {}
    parts: list[Points] = []
    for blob, raw in zip(blobs, raws, strict=True):
        version, n, m, flags = BLOCK_HEADER.unpack_from(raw)
        if version != BLOCK_VERSION:
            raise ValueError(f"block format {version} is not known to this version of fleet")
        if flags & ALL_PRESENT and len(raw) == BLOCK_HEADER.size + 8 * n + 8 * m + n + 8 * n * m:
            by_shape.setdefault((n, m), []).append(raw)
        else:
            parts.append(_newest(block_points(blob), start_ms, end_ms))
    for (n, m), same in by_shape.items():
        parts.append(_uniform_last(same, n, m, start_ms, end_ms))
    return concat(parts) if parts else EMPTY


def _uniform_last(raws: list[bytes], n: int, m: int, start_ms: int, end_ms: int) -> Points:
    """:func:`last_points` of chunks that all hold n series x m times, every cell present."""
    k = len(raws)
    stacked = np.frombuffer(b"".join(raws), dtype=np.uint8).reshape(k, -1)[:, BLOCK_HEADER.size:]
    sids = np.cumsum(decode_uniform_planes(stacked[:, : 8 * n], n).view(np.int64), axis=1, dtype=np.int64)
    at = 8 * n
    dod = decode_uniform_planes(stacked[:, at : at + 8 * m], m).view(np.int64)
    ts_ms = np.cumsum(np.cumsum(dod, axis=1, dtype=np.int64), axis=1, dtype=np.int64)
    at += 8 * m
    scales = np.ascontiguousarray(stacked[:, at : at + n]).view(np.int8).reshape(k * n)
    at += n
    words = decode_uniform_planes(stacked[:, at : at + 8 * n * m], n * m).reshape(k * n, m)
    col = (ts_ms <= end_ms).sum(axis=1) - 1  # times are increasing within a chunk
    has = col >= 0
    col = np.maximum(col, 0)
    when = ts_ms[np.arange(k), col]
    has &= when > start_ms
    if not has.any():
        return EMPTY
    rows = np.repeat(has, n)
    values: F64 = decode_rows(scales[rows], words[rows])[np.arange(int(rows.sum())), np.repeat(col[has], n)]
    picked_sids: I64 = sids[has].reshape(-1)
    return picked_sids, np.repeat(when[has], n), values


def _newest(points: Points, start_ms: int, end_ms: int) -> Points:
    s, t, v = points
    keep = (t <= end_ms) & (t > start_ms)
    return s[keep], t[keep], v[keep]
