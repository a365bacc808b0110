"""Two samples of one host at one instant (a collector's counters, then the rates derived from
them) are both kept: the second frame adds its series to the first instead of replacing it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_samples import T0

from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

RAW = ("tx_bytes", "mlx5_0", "1")
RATE = ("tx_gbps", "mlx5_0", "1")


@pytest.mark.parametrize("flush_between", [False, True])
def test_counters_and_their_rates_at_one_instant_are_both_kept(fresh_db: Path, flush_between: bool) -> None:
    with StoreWriter(fresh_db) as writer:
        for k in range(5):
            writer.put_samples(HostSample("n1", T0 + k, {RAW: 100.0 * k, RATE: -1.0}))
            if flush_between:  # the second frame meets the first in the database, not in the batch
                assert writer.flush(10)
            writer.put_samples(HostSample("n1", T0 + k, {RATE: float(k)}))
    reader = StoreReader(fresh_db)
    assert reader.series("n1", *RAW, start=T0, end=T0 + 10).avg == [100.0 * k for k in range(5)]
    assert reader.series("n1", *RATE, start=T0, end=T0 + 10).avg == [float(k) for k in range(5)]
    frames = sqlite3.connect(fresh_db).execute("SELECT n FROM frames ORDER BY ts_ms").fetchall()
    assert frames == [(2,)] * 5


def test_a_late_sample_merges_into_a_sealed_frame(fresh_db: Path) -> None:
    with StoreWriter(fresh_db, block_s=60) as writer:
        writer.put_samples(HostSample("n1", T0, {RAW: 5.0}))
        writer.put_samples(HostSample("n1", T0 + 400, {RAW: 9.0}))  # the store's clock moves past the block
        assert writer.settle(20)
        sealed = sqlite3.connect(fresh_db).execute("SELECT sealed FROM frames WHERE ts_ms = ?",
                                                   (round(T0 * 1000),)).fetchone()
        assert sealed == (1,)
        writer.put_samples(HostSample("n1", T0, {RATE: 2.0}))
        assert writer.settle(20)
    reader = StoreReader(fresh_db)
    assert reader.series("n1", *RAW, start=T0, end=T0 + 10).avg == [5.0]
    assert reader.series("n1", *RATE, start=T0, end=T0 + 10).avg == [2.0]
