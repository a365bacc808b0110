"""Compact, exact encodings of sample arrays: frames (one host, one instant) and blocks.

A *block* holds the points of a few series (one metric of one host) over one
time block, sharing one timestamp vector. Each series is encoded on its own:

- values that are integers after scaling by 10**k (k <= 6: counters, NVML
  readings, optics in 0.0001 dBm, ...) become int64 and are delta-of-delta coded;
- other floats (derived rates) are XOR-ed with their predecessor's bits
  (Gorilla), which keeps NaN, infinities and -0.0 bit for bit;

then every 8-byte word is split into byte planes (the high planes of small
deltas are all zero) and the whole block is deflated with zlib. Decoding gives
back exactly the float64 bits that went in. Timestamps are integer
milliseconds (the store's time resolution), delta-of-delta coded.

A *frame* is the light encoding written on every commit for data that is not
yet sealed into blocks (and kept a while after, for replay): series ids and
float64 values as plain arrays. Not deflated: noisy float64 values hardly
shrink, and frames are read back in bulk (replay, the newest hour of a
series), where decompression would be most of the cost.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]
BOOL = npt.NDArray[np.bool_]

BLOCK_HEADER = struct.Struct("<BIIB")
_FRAME_HEADER = struct.Struct("<BI")
BLOCK_VERSION = 1
ALL_PRESENT = 1
_MAX_DECIMALS = 6
_EXACT_INT = float(2**53)
_POWERS = np.array([10.0**k for k in range(_MAX_DECIMALS + 1)])
"""10**k for every decimal scale, the same floats as ``10.0 ** k``."""


def _planes(words: npt.NDArray[np.int64] | U64) -> bytes:
    """Byte-plane transpose of 8-byte words, so zlib sees long runs of zero high bytes."""
    return np.ascontiguousarray(words).view(np.uint8).reshape(-1, 8).T.tobytes()


def _unplanes(buf: bytes, count: int) -> U64:
    planes = np.frombuffer(buf, dtype=np.uint8, count=count * 8).reshape(8, count)
    return np.ascontiguousarray(planes.T).view(np.uint64).reshape(count)


def decode_uniform_planes(stacked: npt.NDArray[np.uint8], count: int) -> U64:
    """:func:`_unplanes` of k buffers at once: ``stacked`` is (k, 8 * count) bytes -> (k, count) words."""
    k = stacked.shape[0]
    planes = stacked.reshape(k, 8, count).transpose(0, 2, 1)
    return np.ascontiguousarray(planes).view(np.uint64).reshape(k, count)


def _delta(values: I64) -> I64:
    out: I64 = np.diff(values, prepend=np.int64(0))
    return out


def _dod(values: I64) -> I64:
    first = np.diff(values, prepend=np.int64(0))
    return np.diff(first, prepend=np.int64(0))


def _undod(values: I64) -> I64:
    return np.cumsum(np.cumsum(values, dtype=np.int64), dtype=np.int64)


def decimal_scales(values: F64) -> npt.NDArray[np.int8]:
    """Per row, the smallest k such that the row * 10**k is integers that give back its exact bits; -1 if none."""
    scales = np.full(values.shape[0], -1, dtype=np.int8)
    bits = values.view(np.uint64)
    todo = np.arange(values.shape[0])
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(_MAX_DECIMALS + 1):
            if len(todo) == 0:
                break
            scale = 10.0**k
            scaled = np.rint(values[todo] * scale)
            fits = np.all(np.abs(scaled) < _EXACT_INT, axis=1)
            safe = np.where(fits[:, None], scaled, 0.0).astype(np.int64)
            back = safe.astype(np.float64) / scale
            exact = fits & np.all(back.view(np.uint64) == bits[todo], axis=1)
            scales[todo[exact]] = k
            todo = todo[fits & ~exact]
    return scales


def _encode_rows(values: F64) -> tuple[npt.NDArray[np.int8], U64]:
    """Per row: its scale and its words (delta-of-delta of the scaled integers, or XOR-ed bits)."""
    scales = decimal_scales(values)
    words = np.empty(values.shape, dtype=np.uint64)
    ints = scales >= 0
    if ints.any():
        factor = np.array([10.0 ** int(k) for k in scales[ints]])
        scaled = np.rint(values[ints] * factor[:, None]).astype(np.int64)
        first = np.diff(scaled, axis=1, prepend=np.int64(0))
        words[ints] = np.diff(first, axis=1, prepend=np.int64(0)).view(np.uint64)
    if not ints.all():
        bits = np.ascontiguousarray(values[~ints]).view(np.uint64)
        previous = np.zeros_like(bits)
        previous[:, 1:] = bits[:, :-1]
        words[~ints] = np.bitwise_xor(bits, previous)
    return scales, words


def decode_rows(scales: npt.NDArray[np.int8], words: U64) -> F64:
    """The inverse of :func:`_encode_rows`."""
    values = np.empty(words.shape, dtype=np.float64)
    ints = scales >= 0
    if ints.any():
        factor = _POWERS[scales[ints]]
        scaled = np.cumsum(np.cumsum(words[ints].view(np.int64), axis=1, dtype=np.int64),
                           axis=1, dtype=np.int64)
        values[ints] = scaled.astype(np.float64) / factor[:, None]
    if not ints.all():
        values[~ints] = np.bitwise_xor.accumulate(words[~ints], axis=1).view(np.float64)
    return values


def encode_block(sids: I64, ts_ms: I64, values: F64, present: BOOL, level: int = 6) -> bytes:
    """Encode ``values[i, j]`` (series ``sids[i]`` at ``ts_ms[j]``), where ``present[i, j]``.

    ``ts_ms`` must be strictly increasing; absent cells are not stored.
    """
    n, m = values.shape
    all_present = bool(present.all())
    if all_present:
        scales, matrix = _encode_rows(np.ascontiguousarray(values, dtype=np.float64))
        packed = matrix.reshape(-1)
    else:
        scales = np.empty(n, dtype=np.int8)
        words: list[U64] = []
        for i in range(n):
            row_scale, row_words = _encode_rows(np.ascontiguousarray(values[i, present[i]])[None, :])
            scales[i] = row_scale[0]
            words.append(row_words[0])
        packed = np.concatenate(words) if words else np.zeros(0, dtype=np.uint64)
    parts = [
        BLOCK_HEADER.pack(BLOCK_VERSION, n, m, ALL_PRESENT if all_present else 0),
        _planes(_delta(sids.astype(np.int64))),
        _planes(_dod(ts_ms.astype(np.int64))),
        scales.tobytes(),
        b"" if all_present else np.packbits(present, axis=None).tobytes(),
        _planes(packed),
    ]
    return zlib.compress(b"".join(parts), level)


def member(items: I64, of: I64) -> npt.NDArray[np.bool_]:
    """``np.isin(items, of)``; for the few ids of one block a broadcast compare, which is
    ten times cheaper than ``np.isin``'s set-up (whole-fleet replay does this per chunk)."""
    if len(items) * len(of) <= 4096:
        return (items[:, None] == of[None, :]).any(axis=1)
    return np.isin(items, of)


def decode_block(blob: bytes, rows_wanted: I64 | None = None) -> tuple[I64, I64, F64, BOOL]:
    """The inverse of :func:`encode_block`: ``(sids, ts_ms, values, present)``; absent cells hold NaN.

    ``rows_wanted``: decode only the rows whose sid is in it (the others are dropped
    before their values are rebuilt: one series of a group, or the few stat rows of
    one series in a rollup row, cost a fraction of the whole block).
    """
    raw = zlib.decompress(blob)
    version, n, m, flags = BLOCK_HEADER.unpack_from(raw)
    if version != BLOCK_VERSION:
        raise ValueError(f"block format {version} is not known to this version of fleet")
    at = BLOCK_HEADER.size
    sids = np.cumsum(_unplanes(raw[at : at + 8 * n], n).view(np.int64), dtype=np.int64)
    at += 8 * n
    ts_ms = _undod(_unplanes(raw[at : at + 8 * m], m).view(np.int64))
    at += 8 * m
    scales = np.frombuffer(raw, dtype=np.int8, count=n, offset=at)
    at += n
    if flags & ALL_PRESENT:
        present = np.ones((n, m), dtype=np.bool_)
    else:
        nbytes = (n * m + 7) // 8
        bits = np.frombuffer(raw, dtype=np.uint8, count=nbytes, offset=at)
        present = np.unpackbits(bits, count=n * m).astype(np.bool_).reshape(n, m)
        at += nbytes
    counts = present.sum(axis=1)
    total = int(counts.sum())
    words = _unplanes(raw[at : at + 8 * total], total)
    rows = np.arange(n) if rows_wanted is None else np.flatnonzero(member(sids, rows_wanted))
    if flags & ALL_PRESENT:
        return sids[rows], ts_ms, decode_rows(scales[rows], words.reshape(n, m)[rows]), present[rows]
    values = np.full((len(rows), m), np.nan, dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
    for out, i in enumerate(rows.tolist()):
        row = decode_rows(scales[i : i + 1], words[starts[i] : starts[i + 1]][None, :])[0]
        values[out, present[i]] = row
    return sids[rows], ts_ms, values, present[rows]


def encode_frame(sids: I64, values: F64, ts_ms: I64 | None = None) -> bytes:
    """One host's values (and optionally one timestamp per value), sorted by sid."""
    order = np.argsort(sids, kind="stable")
    parts = [
        _FRAME_HEADER.pack(1 if ts_ms is not None else 0, len(sids)),
        sids[order].astype(np.int32).tobytes(),
        values[order].astype(np.float64).tobytes(),
    ]
    if ts_ms is not None:
        parts.append(ts_ms[order].astype(np.int64).tobytes())
    return b"".join(parts)


def frame_head(sorted_sids: I64) -> bytes:
    """What :func:`encode_frame` writes before the values, for ids already sorted and no times: a
    writer that sends the same series again and again keeps it, and a frame is then this
    plus ``values.tobytes()`` in the same order."""
    return _FRAME_HEADER.pack(0, len(sorted_sids)) + sorted_sids.astype(np.int32).tobytes()


def merge_frames(older: bytes, newer: bytes) -> bytes:
    """Two frames of one host and instant as one: every series of either, ``newer``'s value where both have one."""
    new_sids, new_values, _ = decode_frame(newer)
    old_sids, old_values, _ = decode_frame(older)
    sids, first = np.unique(np.concatenate((new_sids, old_sids)), return_index=True)
    return encode_frame(sids, np.concatenate((new_values, old_values))[first])


def frame_size(blob: bytes) -> int:
    """How many values a frame holds."""
    return int(_FRAME_HEADER.unpack_from(blob)[1])


def decode_frame(blob: bytes) -> tuple[I64, F64, I64 | None]:
    """The inverse of :func:`encode_frame`: ``(sids, values, ts_ms or None)``, sorted by sid."""
    with_ts, n = _FRAME_HEADER.unpack_from(blob)
    at = _FRAME_HEADER.size
    sids = np.frombuffer(blob, dtype=np.int32, count=n, offset=at).astype(np.int64)
    at += 4 * n
    values = np.frombuffer(blob, dtype=np.float64, count=n, offset=at).copy()
    at += 8 * n
    ts_ms = None
    if with_ts:
        ts_ms = np.frombuffer(blob, dtype=np.int64, count=n, offset=at).copy()
    return sids, values, ts_ms
