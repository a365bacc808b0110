"""A changed-only agent stream over SSH into a real store: every line's counters AND the rates
derived from them are in the history (one frame per line), the same as full lines would give."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


async def test_changed_only_stream_keeps_counters_and_rates_of_every_line(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "fleet.db").start()
    settings = CollectSettings(interval_s=0.5, hung_after_s=8.0, slow_after_s=1.5, facts_every_s=600.0,
                               full_every=3)
    try:
        async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
            inventory = load_inventory(inventory_path)
            collector = Collector(inventory, writer, settings=settings)
            poller = next(p for p in collector.nodes if p.host.name == "gpu001")
            task = asyncio.ensure_future(collector.run())
            try:
                for _ in range(7):  # two full lines and their changed-only followers, at least
                    poller.got_sample.clear()
                    await asyncio.wait_for(poller.got_sample.wait(), 20)
            finally:
                await collector.close()
                await asyncio.wait_for(task, timeout=20)
        assert writer.flush(20)
    finally:
        writer.close()
    reader = StoreReader(tmp_path / "fleet.db")
    end = max(p.ts for p in reader.latest(hosts=["gpu001"], metrics=["tx_bytes"])) + 1
    start = end - 120  # a short window: raw points, not a rollup
    tx = reader.series("gpu001", "tx_bytes", "mlx5_0", "1", start=start, end=end)
    rate = reader.series("gpu001", "tx_gbps", "mlx5_0", "1", start=start, end=end)
    temps = reader.series("gpu001", "gpu_temp_c", "gpu0", "", start=start, end=end)
    assert len(tx.ts) >= 7 and tx.avg == sorted(tx.avg) and tx.avg[0] < tx.avg[-1]
    assert rate.ts == tx.ts[1:]  # every line after the first has its rate, at the counters' instant
    for index, gbps in enumerate(rate.avg, start=1):
        expected = (tx.avg[index] - tx.avg[index - 1]) * 8 / 1e9 / (tx.ts[index] - tx.ts[index - 1])
        assert abs(gbps - expected) <= 1e-6 * max(1.0, expected)
    assert temps.ts == tx.ts  # an unchanged gauge is still a point of every line
    reader.close()
