"""Retention: raw, 1 min and 1 h data expire by age, raw only after its rollups exist."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store_samples import T0

from fabric.samples import HostSample
from store.reader import StoreReader
from store.types import Retention
from store.writer import StoreWriter

HOUR = 3600.0


def test_old_data_expires_per_resolution(fresh_db: Path) -> None:
    retention = Retention(raw_s=3 * HOUR, rollup_1m_s=10 * HOUR, rollup_1h_s=40 * HOUR)
    writer = StoreWriter(fresh_db, retention=retention).start()
    span_h = 30
    for k in range(int(span_h * HOUR / 120)):
        writer.put_samples(HostSample("n1", T0 + 120 * k, {("gpu_temp_c", "gpu0", ""): 40.0 + k % 7}))
    assert writer.settle(60)
    writer.close()
    now_ms = int((T0 + span_h * HOUR - 120) * 1000)
    conn = sqlite3.connect(fresh_db)

    def oldest(table: str) -> float:
        return (now_ms - conn.execute(f"SELECT min(t0_ms) FROM {table}").fetchone()[0]) / 3.6e6

    assert oldest("chunks") <= 3 + 1  # a block may straddle the cut-off
    assert oldest("rollup_1m") <= 10 + 1
    assert oldest("rollup_1h") >= span_h - 1 - 24  # the first whole day is still there
    reader = StoreReader(fresh_db)
    old = reader.series("n1", "gpu_temp_c", "gpu0", start=T0, end=T0 + 2 * HOUR, resolution="raw")
    assert old.ts == []  # raw expired
    hourly = reader.series("n1", "gpu_temp_c", "gpu0", start=T0, end=T0 + 24 * HOUR, resolution="1h")
    assert len(hourly.ts) >= 16  # the 1 h rollups of that day remain
