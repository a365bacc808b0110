"""The writer thread takes batches from its queue and commits each in one transaction."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from store_samples import T0, nic_sample

from fleet.fabric.events import Event, Severity
from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def test_many_samples_in_small_batches_are_all_written(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db, batch_samples=50).start()
    for k in range(40):
        for host in ("n1", "n2", "n3"):
            assert writer.put_samples(nic_sample(host, T0 + 10 * k, k))
    assert writer.flush(10)
    stats = writer.stats()
    writer.close()
    assert stats.written == 40 * 3 * 7
    assert stats.queued == 0 and stats.dropped == 0 and stats.failing is None

    conn = sqlite3.connect(fresh_db)
    frames = conn.execute("SELECT count(*) FROM frames").fetchone()[0]
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert frames + chunks > 0
    series = StoreReader(fresh_db).series("n2", "tx_bytes", "mlx5_1", "1", start=T0, end=T0 + 400)
    assert series.avg == [float(1_000_000 * k + 1) for k in range(40)]


def test_error_counters_are_stored_only_when_they_change(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        for k in range(250):
            writer.put_samples(nic_sample("n1", T0 + 10 * k, k, nics=1))
    conn = sqlite3.connect(fresh_db)
    # symbol_error is k // 100: the first value and the changes at k = 100 and k = 200
    assert conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 3
    series = StoreReader(fresh_db).series("n1", "symbol_error", "mlx5_0", "1", start=T0, end=T0 + 2500)
    assert list(zip(series.ts, series.avg, strict=True)) == [(T0, 0.0), (T0 + 1000, 1.0), (T0 + 2000, 2.0)]



def test_an_error_counter_is_compared_with_the_newest_value_not_a_late_one(fresh_db: Path) -> None:
    key = ("symbol_error", "mlx5_0", "1")
    with StoreWriter(fresh_db) as writer:
        for ts, value in ((T0 + 10, 1.0), (T0 + 5, 0.0), (T0 + 20, 0.0)):  # the second one is late
            writer.put_samples(HostSample("n1", ts, {key: value, ("gpu_temp_c", "gpu0", ""): 40.0}))
            assert writer.flush(10)
    conn = sqlite3.connect(fresh_db)
    # the late 0 differs from the newest value (1), and so does the last 0: both are changes
    assert conn.execute("SELECT ts_ms, value FROM changes ORDER BY ts_ms").fetchall() == [
        (round((T0 + 5) * 1000), 0.0), (round((T0 + 10) * 1000), 1.0), (round((T0 + 20) * 1000), 0.0)]

async def test_puts_from_the_event_loop_and_other_threads(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db).start()

    def other_thread() -> None:
        for i in range(50):
            writer.put_event(Event(T0 + i, "thread", Severity.INFO, f"from a thread {i}"))

    thread = threading.Thread(target=other_thread)
    thread.start()
    for k in range(20):
        assert writer.put_samples(nic_sample("n1", T0 + 10 * k, k))
        writer.put_event(Event(T0 + k, "loop", Severity.WARNING, "from the loop", host="n1"))
        await asyncio.sleep(0)
    thread.join(10)
    assert await asyncio.to_thread(writer.flush, 10)
    writer.close()
    reader = StoreReader(fresh_db)
    assert len(reader.events(kind="thread")) == 50
    assert len(reader.events(kind="loop", host="n1")) == 20
