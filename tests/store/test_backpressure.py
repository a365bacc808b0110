"""A full queue drops the oldest gauge samples first, never records, counts them and says so."""

from __future__ import annotations

from pathlib import Path

from store_samples import T0

from fleet.fabric.events import Event, Severity
from fleet.fabric.records import ActionRecord, ProbeRecord
from fleet.fabric.samples import HostSample
from fleet.store.pending import Item, PendingQueue
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def _sample(k: int) -> HostSample:
    return HostSample("n1", T0 + 10 * k, {
        ("tx_bytes", "mlx5_0", "1"): float(k),
        ("symbol_error", "mlx5_0", "1"): float(k),
        ("tx_gbps", "mlx5_0", "1"): float(k) / 2,
        ("gpu_temp_c", "gpu0", ""): 40.0 + k,
    })


def test_full_queue_drops_oldest_gauges_first_and_keeps_records(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db, max_queued_samples=14)  # not started: nothing drains the queue
    assert all(writer.put_samples(_sample(k)) for k in range(3))
    writer.put_event(Event(T0, "kept", Severity.CRITICAL, "never dropped"))
    writer.put_probe(ProbeRecord(T0, "lat", "n1", "n2", result={"p99_usec": 3.0}))
    writer.put_action(ActionRecord(T0, "me@here", "leaf01", "ecmp.apply", "apply"))

    assert writer.put_samples(_sample(3)) is False  # the oldest sample lost its two gauges
    assert writer.stats().dropped == 2
    assert writer.put_samples(_sample(4)) is False  # the next two oldest lost theirs
    assert writer.stats().dropped == 6

    writer.start()
    assert writer.flush(10)
    writer.close()
    reader = StoreReader(fresh_db)
    gauges = reader.series("n1", "tx_gbps", "mlx5_0", "1", start=T0, end=T0 + 100)
    counters = reader.series("n1", "tx_bytes", "mlx5_0", "1", start=T0, end=T0 + 100)
    assert gauges.avg == [1.5, 2.0]
    assert counters.avg == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert [e.kind for e in reader.events()] == ["kept"]
    assert len(reader.probes()) == 1 and len(reader.audit()) == 1


def test_when_gauges_are_not_enough_the_oldest_samples_go(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db, max_queued_samples=4)
    counters_only = [HostSample("n1", T0 + 10 * k, {("tx_bytes", "mlx5_0", "1"): float(k)}) for k in range(6)]
    results = [writer.put_samples(s) for s in counters_only]
    assert results == [True] * 4 + [False] * 2
    assert writer.stats().dropped == 2
    writer.start()
    writer.close()
    series = StoreReader(fresh_db).series("n1", "tx_bytes", "mlx5_0", "1", start=T0, end=T0 + 100)
    assert series.avg == [2.0, 3.0, 4.0, 5.0]


def test_items_the_writer_holds_are_never_stripped_and_the_queue_keeps_no_trail() -> None:
    """Room comes from the oldest queued samples the writer has not taken; a queue that stays
    full for a long time makes room at the cost of what it drops (its bookkeeping stays small)."""
    queue = PendingQueue(max_samples=8)
    held = [Item("samples", _sample(k), 4) for k in range(2)]
    for item in held:
        assert queue.put(item)
    assert queue.take(8, 0) == held  # the writer holds both
    for k in range(2, 4):
        assert queue.put(Item("samples", _sample(k), 4))
    assert not queue.put(Item("samples", _sample(4), 4))  # the oldest queued one (k=2) loses its gauges
    assert [item.stripped for item in held] == [False, False]
    assert len(held[0].payload.values) == 4  # type: ignore[attr-defined]
    queue.done(held)
    for k in range(5, 2000):
        queue.put(Item("samples", _sample(k), 4))
        queue.take(4, 0)
    assert len(queue._strippable) <= 3
    queue.give_back(queue.take(8, 0))  # a failed commit: back at the front, strippable again
    assert queue.queued_samples <= 8 and len(queue._strippable) >= 1
