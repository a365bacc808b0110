"""Chunk and frame encodings give back exactly the float64 bits that went in.

Property-style: many seeded random walks of every shape the store sees
(integer counters, decimal readings, noisy floats, constants, NaN, +-inf,
-0.0, absent cells). NaN is stored bit for bit, like any other float.
"""

from __future__ import annotations

import numpy as np
import pytest

from fleet.store.codec import decode_block, decode_frame, encode_block, encode_frame


def _walk(rng: np.random.Generator, kind: int, m: int) -> np.ndarray:
    if kind == 0:  # a byte counter
        return np.cumsum(rng.integers(0, 10**10, m)).astype(np.float64) + 2.0**50
    if kind == 1:  # an optics reading in 0.0001 dBm
        return np.round(np.cumsum(rng.normal(0, 0.01, m)) - 2.0, 4)
    if kind == 2:  # a derived rate
        return np.abs(np.cumsum(rng.normal(0, 3.0, m))) / 7.3
    if kind == 3:  # a constant
        return np.full(m, 400.0)
    if kind == 4:  # specials
        values = rng.normal(0, 1, m)
        values[rng.random(m) < 0.2] = np.nan
        values[rng.random(m) < 0.05] = np.inf
        values[rng.random(m) < 0.05] = -np.inf
        values[rng.random(m) < 0.1] = -0.0
        return values
    return rng.choice([0.0, 1.0, 3.0, 4.0], m)  # a state code


@pytest.mark.parametrize("seed", range(40))
def test_block_round_trip_is_bit_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 12)), int(rng.integers(1, 400))
    values = np.array([_walk(rng, int(rng.integers(0, 6)), m) for _ in range(n)])
    present = rng.random((n, m)) < (1.0 if seed % 2 else 0.8)
    sids = np.sort(rng.choice(10**6, n, replace=False)).astype(np.int64)
    ts_ms = (1_700_000_000_000 + np.cumsum(rng.integers(1, 20_000, m))).astype(np.int64)

    out_sids, out_ts, out_values, out_present = decode_block(encode_block(sids, ts_ms, values, present))

    assert np.array_equal(out_sids, sids)
    assert np.array_equal(out_ts, ts_ms)
    assert np.array_equal(out_present, present)
    assert np.array_equal(out_values[present].view(np.uint64), values[present].view(np.uint64))
    assert np.isnan(out_values[~present]).all()

    wanted = np.concatenate([sids[rng.random(n) < 0.5], [10**6 + 1]])  # a subset and an id not held
    rows = np.isin(sids, wanted)
    part_sids, part_ts, part_values, part_present = decode_block(encode_block(sids, ts_ms, values, present), wanted)
    assert np.array_equal(part_sids, sids[rows])
    assert np.array_equal(part_ts, ts_ms)
    assert np.array_equal(part_present, present[rows])
    assert np.array_equal(part_values.view(np.uint64), out_values[rows].view(np.uint64))


def test_regular_series_compress_far_below_a_row_per_sample() -> None:
    m = 360
    ts_ms = (1_700_000_000_000 + np.arange(m) * 10_000).astype(np.int64)
    constant = np.full((8, m), 4.0)
    blob = encode_block(np.arange(8, dtype=np.int64), ts_ms, constant, np.ones((8, m), bool))
    assert len(blob) / constant.size < 0.1
    counters = np.cumsum(np.full((8, m), 1_000_000.0), axis=1)
    blob = encode_block(np.arange(8, dtype=np.int64), ts_ms, counters, np.ones((8, m), bool))
    assert len(blob) / counters.size < 0.2


@pytest.mark.parametrize("with_ts", [False, True])
def test_frame_round_trip(with_ts: bool) -> None:
    rng = np.random.default_rng(3)
    sids = rng.permutation(500).astype(np.int64) + 1
    values = rng.normal(0, 1e6, 500)
    values[::7] = np.nan
    ts_ms = rng.integers(0, 2**40, 500).astype(np.int64) if with_ts else None
    out_sids, out_values, out_ts = decode_frame(encode_frame(sids, values, ts_ms))
    order = np.argsort(sids)
    assert np.array_equal(out_sids, sids[order])
    assert np.array_equal(out_values.view(np.uint64), values[order].view(np.uint64))
    if ts_ms is None:
        assert out_ts is None
    else:
        assert out_ts is not None and np.array_equal(out_ts, ts_ms[order])
