"""The collector's start: every host connecting until its first answer, first answers not news,
facts only once the fleet is set up, and what each node has read from its facts."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.fabric.node_hardware import node_hardware
from fleet.fabric.states import HostState
from fleet.simulator.tools.sysfs import HOST_CPUS, HOST_MEMORY_KIB
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

FAST = CollectSettings(interval_s=1.0, hung_after_s=8.0, slow_after_s=1.5, facts_every_s=60.0)


async def test_the_fleet_fills_in_then_facts_follow(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "fleet.db").start()
    seen: list[tuple[str, HostState]] = []
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        collector = Collector(inventory, writer, settings=FAST,
                              on_status=lambda status: seen.append((status.host, status.state)))
        assert collector.summary().setup.done == 0
        task = asyncio.ensure_future(collector.run())
        try:
            await asyncio.wait_for(collector.gate.settled.wait(), timeout=60)
            settled_at = len(seen)
            facts = [asyncio.ensure_future(_facts_read(node)) for node in collector.nodes]
            await asyncio.wait_for(asyncio.gather(*facts), timeout=60)
            summary = collector.summary()
        finally:
            await collector.close()
            await asyncio.wait_for(task, timeout=20)
    assert summary.setup.complete and summary.setup.total == len(inventory.hosts)
    assert {state for _, state in seen[:settled_at]} == {HostState.OK}, "every host answered: nothing but ok"
    assert summary.node_states == {}, "simulated nodes are full GPU nodes"
    writer.flush(timeout=20)
    writer.close()
    reader = StoreReader(tmp_path / "fleet.db")
    try:
        events = [e for e in reader.events() if e.kind == "host_state"]
        assert events == [], "a first answer is not news: " + "; ".join(e.message for e in events[:3])
        hardware = node_hardware(next(h for h in reader.hosts() if h.name == "gpu001").info)
        assert hardware.rdma_devices == tuple(f"mlx5_{rail}" for rail in range(8))
        assert hardware.nvidia_driver and hardware.states == ()
        assert hardware.cpus == HOST_CPUS and hardware.memory_bytes == HOST_MEMORY_KIB * 1024
        assert hardware.netdevs is not None and "up 400 Gb/s" in hardware.netdevs
    finally:
        reader.close()


async def _facts_read(node: object) -> None:
    """Until the node's facts were read (``NodePoller.hardware`` set)."""
    while getattr(node, "hardware", None) is None:
        await asyncio.sleep(0.1)
