"""last_points: chunks decoded together give the same as-of answer as decoding them one by one."""

from __future__ import annotations

import numpy as np
import pytest

from fleet.store.codec import encode_block
from fleet.store.points import block_points, concat, last_per_series
from fleet.store.replay import last_points


def _block(rng: np.random.Generator, first_sid: int, n: int, m: int, sparse: bool) -> bytes:
    sids = np.arange(first_sid, first_sid + n, dtype=np.int64)
    ts_ms = (1_700_000_000_000 + np.cumsum(rng.integers(1, 20_000, m))).astype(np.int64)
    values: np.ndarray = np.round(np.cumsum(rng.normal(0, 3, (n, m)), axis=1), int(rng.integers(0, 3)))
    if rng.random() < 0.3:
        values = rng.normal(0, 1, (n, m))  # floats that are not decimals: XOR-coded
    present = rng.random((n, m)) < 0.7 if sparse else np.ones((n, m), dtype=np.bool_)
    return encode_block(sids, ts_ms, values, present)


@pytest.mark.parametrize("seed", range(12))
def test_last_points_equals_the_last_of_every_point_in_the_window(seed: int) -> None:
    rng = np.random.default_rng(seed)
    blobs = [_block(rng, 100 * i, int(rng.choice([1, 8, 8, 8])), int(rng.choice([3, 60, 60])),
                    sparse=rng.random() < 0.25) for i in range(20)]
    every = concat(block_points(blob) for blob in blobs)
    times = np.sort(every[1])
    start_ms = int(times[len(times) // 4])  # window edges on sample times: start excluded, end included
    end_ms = int(times[len(times) // 2]) + (0 if seed % 2 else 1)
    keep = (every[1] > start_ms) & (every[1] <= end_ms)
    expected = last_per_series((every[0][keep], every[1][keep], every[2][keep]))
    got = last_per_series(last_points(blobs, start_ms, end_ms))
    assert np.array_equal(got[0], expected[0])
    assert np.array_equal(got[1], expected[1])
    assert np.array_equal(got[2].view(np.uint64), expected[2].view(np.uint64))
    assert len(expected[0]) > 0  # the window holds points: the test compares something
