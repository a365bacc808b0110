"""A full disk (here: PRAGMA max_page_count) is reported, data waits in memory, writing resumes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store_samples import T0

from fleet.fabric.events import Event, Severity
from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def _sample(k: int) -> HostSample:
    return HostSample("n1", T0 + 10 * k, {("tx_bytes", f"mlx5_{d}", "1"): float(k * 1000 + d) for d in range(200)})


def test_full_disk_holds_data_in_memory_and_resumes(fresh_db: Path) -> None:
    conn = sqlite3.connect(fresh_db)
    pages = conn.execute("PRAGMA page_count").fetchone()[0] + 2  # room for a few series rows only
    conn.close()
    writer = StoreWriter(fresh_db, page_limit=pages, retry_s=0.05).start()
    for k in range(60):
        writer.put_samples(_sample(k))
    writer.put_event(Event(T0, "kept", Severity.WARNING, "waits for disk space"))
    reason = writer.wait_failing(10)
    assert reason is not None and "full" in reason and str(fresh_db) in reason
    stats = writer.stats()
    assert stats.failing == reason and stats.in_memory > 0

    writer.set_page_limit(None)  # space is back
    assert writer.flush(10)
    assert writer.stats().failing is None and writer.stats().in_memory == 0
    writer.close()
    reader = StoreReader(fresh_db)
    series = reader.series("n1", "tx_bytes", "mlx5_7", "1", start=T0, end=T0 + 600)
    assert series.avg == [float(k * 1000 + 7) for k in range(60)]
    assert [e.kind for e in reader.events()] == ["kept"]
