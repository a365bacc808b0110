"""The collector against a real simulated fleet over SSH, into a real store file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

FAULTS = """
[[faults]]
kind = "node_unreachable"
target = "gpu006"
at = 0

[[faults]]
kind = "node_hang"
target = "gpu007"
at = 0

[[faults]]
kind = "slow_node"
target = "gpu008"
delay = 3.0
at = 0

[[faults]]
kind = "optics_attenuation"
target = "gpu002:mlx5_1"
db = 7.0
at = 0
"""

FAST = CollectSettings(interval_s=1.0, hung_after_s=8.0, slow_after_s=1.5, facts_every_s=60.0)
"""Short timeouts for tests, with room for a loaded 2-core machine (switches answer in ~1 s there)."""


@pytest.fixture
def writer(tmp_path: Path):  # type: ignore[no-untyped-def]
    w = StoreWriter(tmp_path / "fleet.db").start()
    yield w
    w.close()


async def test_one_round_reports_every_node_and_every_failure_state(tmp_path: Path, writer: StoreWriter) -> None:
    async with running_fleet(small_scenario(FAULTS), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        collector = Collector(inventory, writer, settings=FAST)
        summary = await asyncio.wait_for(collector.run_once(), timeout=30)
    states = {host: s.state for host, s in summary.states.items()}
    assert states["gpu006"] is HostState.UNREACHABLE
    assert states["gpu007"] is HostState.HUNG
    assert states["gpu008"] is HostState.SLOW
    healthy = [f"gpu00{i}" for i in range(1, 6)]
    assert all(states[h] is HostState.OK for h in healthy), states
    assert all(states[s.name] is HostState.OK for s in inventory.switches), {s.name: summary.states[s.name] for s in inventory.switches}
    assert states["head01"] is HostState.OK
    assert writer.flush(timeout=20)
    reader = StoreReader(writer.path)
    latest = reader.latest(hosts=["gpu001"])
    devices = {p.device for p in latest if p.metric == "tx_bytes"}
    assert devices == {f"mlx5_{r}" for r in range(8)}
    gpus = {p.device for p in latest if p.metric == "gpu_temp_c"}
    assert gpus == {f"gpu{i}" for i in range(8)}
    weak = [p.value for p in reader.latest(hosts=["gpu002"], metrics=["optics_rx_power_dbm"]) if p.device == "mlx5_1"]
    strong = [p.value for p in reader.latest(hosts=["gpu002"], metrics=["optics_rx_power_dbm"]) if p.device == "mlx5_0"]
    assert weak and strong and max(weak) < min(strong) - 3  # 7 dB fault, lanes spread about 1 dB
    statuses = reader.host_statuses()
    assert statuses["gpu007"].state is HostState.HUNG and "within" in statuses["gpu007"].reason
    jobs = reader.jobs()
    assert [j.job_id for j in jobs] == ["501"] and jobs[0].account == "acme"
    assert set(jobs[0].nodes) == {"gpu001", "gpu002", "gpu003", "gpu004"}
    peers = {(p.host, p.device): p.peer_host for p in reader.ports("gpu001")}
    assert peers[("gpu001", "mlx5_0")] == "leaf01"
    switch_ports = reader.ports("leaf01")
    assert any(p.peer_host == "gpu001" for p in switch_ports)
    reader.close()


async def test_streaming_turns_counters_into_rates_and_keeps_going_past_a_bad_host(
        tmp_path: Path, writer: StoreWriter) -> None:
    async with running_fleet(small_scenario(FAULTS), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        collector = Collector(inventory, writer, settings=FAST)
        task = asyncio.ensure_future(collector.run())
        reader = StoreReader(writer.path)
        try:
            async def rates_for(host: str, metric: str) -> None:
                while not [p for p in reader.latest(hosts=[host], metrics=[metric])]:
                    writer.flush(timeout=5)
                    await asyncio.sleep(0.2)

            await asyncio.wait_for(asyncio.gather(rates_for("gpu001", "tx_gbps"),
                                                  rates_for("leaf01", "sw_tx_gbps"),
                                                  rates_for("leaf09", "sw_tx_gbps")), timeout=30)
        finally:
            await collector.close()
            await asyncio.wait_for(task, timeout=20)
    tx = [p.value for p in reader.latest(hosts=["gpu001"], metrics=["tx_gbps"])]
    assert len(tx) == 8 and all(0 < v <= 400 for v in tx)
    assert collector.status.get("gpu006").state is HostState.UNREACHABLE  # type: ignore[union-attr]
    reader.close()


async def test_a_changed_host_key_is_never_connected_to(tmp_path: Path, writer: StoreWriter) -> None:
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        known_hosts = tmp_path / "sim" / "known_hosts"
        lines = known_hosts.read_text().splitlines()
        donor = next(line for line in lines if _names(line, "gpu002"))
        target = next(i for i, line in enumerate(lines) if _names(line, "gpu001"))
        lines[target] = " ".join([lines[target].split()[0], *donor.split()[1:]])
        known_hosts.write_text("\n".join(lines) + "\n")
        inventory = load_inventory(inventory_path)
        collector = Collector(inventory, writer, settings=FAST)
        summary = await asyncio.wait_for(collector.run_once(), timeout=30)
    assert summary.states["gpu001"].state is HostState.HOST_KEY_MISMATCH
    assert summary.states["gpu002"].state is HostState.OK


def _names(line: str, host: str) -> bool:
    """Whether a known_hosts line is for ``host`` (written as ``[addr]:port,[name]:port``)."""
    return bool(line) and f"[{host}]:" in line.split()[0]


async def test_command_mode_gives_the_same_series_as_the_agent(tmp_path: Path, writer: StoreWriter) -> None:
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        text = inventory_path.read_text()
        inventory_path.write_text(text.replace('names = "gpu002"\n', 'names = "gpu002"\nmode = "commands"\n', 1))
        inventory = load_inventory(inventory_path)
        assert inventory.host("gpu002").mode == "commands" and inventory.host("gpu001").mode == "agent"
        collector = Collector(inventory, writer, settings=FAST)
        task = asyncio.ensure_future(collector.run())
        reader = StoreReader(writer.path)
        try:
            async def has(host: str, metric: str) -> None:
                while not reader.latest(hosts=[host], metrics=[metric]):
                    writer.flush(timeout=5)
                    await asyncio.sleep(0.2)

            await asyncio.wait_for(asyncio.gather(*(has(h, m) for h in ("gpu001", "gpu002")
                                                    for m in ("pre_fec_ber", "optics_rx_power_dbm",
                                                              "optics_rx_power_low_alarm_dbm"))), timeout=40)
        finally:
            await collector.close()
            await asyncio.wait_for(task, timeout=20)
        writer.flush(timeout=10)

        def keys(host: str) -> set[tuple[str, str, str]]:
            return {(p.metric, p.device, p.port) for p in reader.latest(hosts=[host])}

        agent, commands = keys("gpu001"), keys("gpu002")
        # Command mode reads ethtool from its second tick on, so its ethtool rates start a tick later:
        # waiting for pre_fec_ber (an ethtool rate) on both makes the comparison fair. The modules'
        # thresholds come with the facts, which the agent's facts loop reads a few seconds in.
        # nvidia-smi has no NVLink, XID or retired-page counters: those come from NVML only.
        nvml_only = {k for k in agent if k[0] in {
            "gpu_xid_last", "gpu_xid_count", "gpu_retired_pages", "gpu_ecc_volatile_corrected",
            "gpu_nvlink_crc_errors", "gpu_nvlink_replay_errors", "gpu_nvlink_recovery_errors"}}
        assert commands == agent - nvml_only
        reader.close()
