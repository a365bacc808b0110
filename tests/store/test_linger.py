"""The writer lingers after the first queued item to commit several at once, but whoever
waits for the queue (flush, close) is never kept waiting for the linger."""

from __future__ import annotations

from pathlib import Path

from store_samples import T0, nic_sample

from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def test_flush_and_close_cut_the_linger_short(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db, linger_s=60.0).start()
    for k in range(5):
        assert writer.put_samples(nic_sample("n1", T0 + k, k))
    assert writer.flush(20)  # done within 20 s: it did not wait out the 60 s linger
    assert writer.put_samples(nic_sample("n1", T0 + 5, 5))
    assert writer.close(20)
    series = StoreReader(fresh_db).series("n1", "tx_bytes", "mlx5_0", "1", start=T0, end=T0 + 10)
    assert series.avg == [float(1_000_000 * k) for k in range(6)]


def test_items_arrive_without_a_flush(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db, linger_s=0.01).start()
    try:
        assert writer.put_samples(nic_sample("n1", T0, 0))
        assert writer._queue.wait_idle(10)  # the writer commits on its own, after the linger
        assert StoreReader(fresh_db).latest(["n1"])
    finally:
        writer.close()
