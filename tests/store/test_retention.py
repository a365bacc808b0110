"""Retention: raw, 1 min and 1 h data expire by age, raw only after its rollups exist.

Rollup rows span a day (1 min) or 30 days (1 h) and go when all of it is past retention.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store_samples import T0

from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.types import Retention
from fleet.store.writer import StoreWriter

HOUR = 3600.0


def test_old_data_expires_per_resolution(fresh_db: Path) -> None:
    retention = Retention(raw_s=3 * HOUR, rollup_1m_s=2 * HOUR, rollup_1h_s=400 * 24 * HOUR)
    writer = StoreWriter(fresh_db, retention=retention).start()
    span_h = 50
    for k in range(int(span_h * HOUR / 120)):
        writer.put_samples(HostSample("n1", T0 + 120 * k, {("gpu_temp_c", "gpu0", ""): 40.0 + k % 7}))
    assert writer.settle(60)
    writer.close()
    now_ms = int((T0 + span_h * HOUR - 120) * 1000)
    conn = sqlite3.connect(fresh_db)

    def oldest(table: str) -> float:
        return (now_ms - conn.execute(f"SELECT min(t0_ms) FROM {table}").fetchone()[0]) / 3.6e6

    # raw goes after 3 h, but not before its day has its 1 h rollups: the last whole day stays
    assert oldest("chunks") <= 24 + 1
    assert oldest("rollup_1m") <= 2 + 24 + 24  # day rows go once the whole day is past 2 h
    assert conn.execute("SELECT count(*) FROM rollup_1m").fetchone()[0] == 1  # the newest day
    assert conn.execute("SELECT count(*) FROM rollup_1h").fetchone()[0] == 1
    reader = StoreReader(fresh_db)
    old = reader.series("n1", "gpu_temp_c", "gpu0", start=T0, end=T0 + 2 * HOUR, resolution="raw")
    assert old.ts == []  # raw expired
    hourly = reader.series("n1", "gpu_temp_c", "gpu0", start=T0, end=T0 + 24 * HOUR - 1, resolution="1h")
    assert len(hourly.ts) == 24  # the 1 h rollups of that day remain
    by_minute = reader.series("n1", "gpu_temp_c", "gpu0", start=T0, end=T0 + 24 * HOUR, resolution="1m")
    assert by_minute.ts == []  # its 1 min rollups expired
