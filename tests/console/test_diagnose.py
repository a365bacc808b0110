"""`fleet diagnose` end to end: a simulated fleet with injected faults, collected over SSH into a real
store, diagnosed; every observable fault is named with its kind and part, and nothing else is.

Faults that start later in a scenario (``at = 120``) need simulated time: the
model is started in the past (``start_unix``), as if the fleet had been running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet

import fleet.simulator.main
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import Inventory, load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.console.cli import main
from fleet.console.cli.diagnose import diagnose_store
from fleet.fabric.events import Finding
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

SETTINGS = CollectSettings(interval_s=1.0, hung_after_s=10.0, slow_after_s=2.0, facts_every_s=60.0, optics_every=2)
COLLECT_LINES = 4
"""Agent lines per answering node streamed before the diagnosis: what 4 s at 1 s give a quiet machine."""
HANG_S = 300
"""Each test's bound: a guard against a hang, which a busy machine's minute or two never reaches."""

Key = tuple[str, str, str]


def key(finding: Finding) -> Key:
    """(kind, node or switch, nic or GPU): the part a finding names."""
    return finding.kind, finding.node or finding.switch, finding.nic or str(finding.evidence.get("gpu", ""))


async def _collect(inventory: Inventory, writer: StoreWriter, lines: int) -> None:
    """What ``fleet diagnose --collect`` does, one full round then streaming, but streaming until the
    answering nodes have sent ``lines`` lines each on average rather than for a number of seconds:
    a busy machine takes longer to start the agents, and would leave the rules less."""
    first = await Collector(inventory, writer, settings=SETTINGS).run_once()
    answering = sum(1 for host in inventory.nodes if not first.states[host.name].state.is_failure)
    collector = Collector(inventory, writer, settings=SETTINGS)
    task = asyncio.ensure_future(collector.run())
    try:
        while collector.stats.lines < lines * answering and not task.done():
            await asyncio.sleep(0.1)  # the count moves with every line; no event tells of a number reached
    finally:
        await collector.close()
        await task


async def _diagnose(scenario: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
                    running_for_s: float = 0.0, collect_lines: int = COLLECT_LINES,
                    leave_out: str = "") -> list[Finding]:
    """Collect a scenario that has been running for ``running_for_s``, its faults of kind
    ``leave_out`` left out, and diagnose what was stored."""
    loaded = load_scenario(scenario)
    loaded = dataclasses.replace(loaded, faults=tuple(f for f in loaded.faults if f.kind != leave_out))
    if running_for_s:
        started = functools.partial(FleetModel, start_unix=time.time() - running_for_s)
        monkeypatch.setattr(fleet.simulator.main, "FleetModel", started)
    db = tmp_path / "fleet.db"
    writer = StoreWriter(db).start()
    try:
        async with running_fleet(loaded, tmp_path / "sim") as inventory_path:
            inventory = load_inventory(inventory_path)
            await asyncio.wait_for(_collect(inventory, writer, collect_lines), timeout=HANG_S - 60)
        assert writer.flush(timeout=30)
        findings = [life.finding for life in diagnose_store(db, window_s=300.0, cabling=inventory.cabling,
                                                                 writer=writer)]
        assert writer.flush(timeout=30)
    finally:
        writer.close()
    keys = [key(f) for f in findings]
    assert len(keys) == len(set(keys)), f"one finding per part and kind: {keys}"
    if not findings:
        return findings
    reader = StoreReader(db)
    try:
        slow = [e.message for e in reader.events(kind="host_state") if "slow" in e.message]
    finally:
        reader.close()
    print("slow:", *slow, sep="\n")  # shown when a test fails: the collector's view of slowness
    return findings


@pytest.mark.timeout(HANG_S)
async def test_healthy_fleet_has_no_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _diagnose("healthy", tmp_path, monkeypatch) == []


@pytest.mark.timeout(HANG_S)
async def test_cabling_faults_are_named_at_the_right_cables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    findings = await _diagnose("cabling", tmp_path, monkeypatch)
    assert {key(f) for f in findings} == {
        ("miswired", "gpu002", "mlx5_3"), ("miswired", "gpu005", "mlx5_3"),
        ("link_down", "gpu010", "mlx5_6"), ("degraded_rate", "gpu013", "mlx5_1"),
    }
    down = next(f for f in findings if f.kind == "link_down")
    assert (down.switch, down.port) == ("leaf15", "swp2")  # the planned leaf port of gpu010's rail 6
    swapped = {f.node: (f.switch, f.port) for f in findings if f.kind == "miswired"}
    assert swapped == {"gpu002": ("leaf04", "swp5"), "gpu005": ("leaf04", "swp2")}


@pytest.mark.timeout(HANG_S)
async def test_congestion_faults_storm_ecn_and_a_silent_spine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    findings = await _diagnose("congestion", tmp_path, monkeypatch)
    assert {key(f) for f in findings} == {
        ("pfc_storm", "gpu005", "mlx5_4"), ("ecn_not_working", "gpu014", "mlx5_2"), ("spine_loss", "spine03", ""),
    }
    spine = next(f for f in findings if f.kind == "spine_loss")
    assert spine.evidence["estimated_loss_ratio"] == pytest.approx(1e-3, rel=0.3)  # the scenario's 0.1 %


@pytest.mark.timeout(HANG_S)
async def test_gpu_and_nic_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    findings = await _diagnose("gpus", tmp_path, monkeypatch)
    assert {key(f) for f in findings} == {
        ("gpu_xid", "gpu004", "gpu2"), ("gpu_thermal", "gpu009", "gpu6"), ("qp_errors", "gpu012", "mlx5_0"),
        ("high_ber", "gpu015", "mlx5_5"),
    }


INCIDENT_ALWAYS: set[Key] = {
    ("optics_low_rx_power", "gpu003", "mlx5_2"), ("gpu_thermal", "gpu014", "gpu5"),
    ("node_unreachable", "gpu031", ""), ("node_unresponsive", "gpu032", ""), ("node_slow", "gpu030", ""),
}


@pytest.mark.slow
@pytest.mark.timeout(HANG_S)
async def test_incident_before_the_storm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At ~100 s: the XID (60 s), the NIC without ECN and spine02's loss (90 s). The link flapping since
    30 s is up, and last went down at 75 s: not in these seconds of counters, so not named now.

    The pause storm (from 120 s) is left out: how long the collection takes on a busy machine must
    not decide whether it has begun (test_incident_after_the_storm has it)."""
    findings = await _diagnose("incident", tmp_path, monkeypatch, running_for_s=100.0, leave_out="pfc_storm")
    assert {key(f) for f in findings} == INCIDENT_ALWAYS | {
        ("gpu_xid", "gpu007", "gpu3"), ("ecn_not_working", "gpu020", "mlx5_1"), ("spine_loss", "spine02", ""),
    }


@pytest.mark.slow
@pytest.mark.timeout(HANG_S)
async def test_incident_while_the_link_flaps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From ~71 s for 10 lines a node (10 s on a quiet machine): gpu011 mlx5_5 goes down at 75 s and
    comes back at 80 s, inside the window."""
    findings = await _diagnose("incident", tmp_path, monkeypatch, running_for_s=71.0, collect_lines=10)
    assert {key(f) for f in findings} == INCIDENT_ALWAYS | {
        ("link_flapping", "gpu011", "mlx5_5"), ("gpu_xid", "gpu007", "gpu3"), ("ecn_not_working", "gpu020", "mlx5_1"),
    }


@pytest.mark.slow
@pytest.mark.timeout(HANG_S)
async def test_incident_after_the_storm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At ~190 s the pause storm (from 120 s; its watchdog disabled pause at 128 s and the NIC drops) has
    stalled job 4102, the only job whose rings cross the spines: spine02's loss costs almost nothing now
    and is not named; the NIC without ECN is in another job and still shows."""
    findings = await _diagnose("incident", tmp_path, monkeypatch, running_for_s=190.0)
    assert {key(f) for f in findings} == INCIDENT_ALWAYS | {
        ("gpu_xid", "gpu007", "gpu3"), ("pfc_storm", "gpu024", "mlx5_6"), ("ecn_not_working", "gpu020", "mlx5_1"),
    }
    storm = next(f for f in findings if f.kind == "pfc_storm")
    assert storm.evidence["pause_disabled_by_watchdog"] is True


def test_cli_json_lists_the_findings_and_the_events_screen_gets_them(tmp_path: Path) -> None:
    """`fleet diagnose --json` on a stored history: a JSON list, exit 0, findings stored as events."""
    from fleet.fabric.samples import HostSample

    db = tmp_path / "fleet.db"
    with StoreWriter(db) as writer:
        for k in range(5):
            ts = time.time() - 20 + 5 * k
            writer.put_samples(HostSample("gpu001", ts, {("gpu_temp_c", "gpu3", ""): 91.0,
                                                         ("gpu_throttle_reasons", "gpu3", ""): 0.0}))
            writer.put_samples(HostSample("gpu002", ts, {("gpu_temp_c", "gpu3", ""): 60.0}))
    result = CliRunner().invoke(main, ["diagnose", "--db", str(db), "--window", "60", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [(d["kind"], d["node"], d["evidence"]["gpu"]) for d in document] == [("gpu_thermal", "gpu001", "gpu3")]
    assert {"kind", "severity", "node", "nic", "switch", "port", "evidence", "job", "next_step", "basis",
            "opened_at", "last_seen", "closed_at", "active", "reopened"} <= set(document[0])
    assert document[0]["active"] is True and document[0]["closed_at"] is None
    reader = StoreReader(db)
    try:
        [event] = reader.events(kind="gpu_thermal")
    finally:
        reader.close()
    assert event.host == "gpu001" and event.data["evidence"]["gpu_temp_c"] == 91.0
    text = CliRunner().invoke(main, ["diagnose", "--db", str(db), "--window", "60"])
    assert text.exit_code == 0 and "gpu_thermal" in text.output and "gpu001 gpu3" in text.output
    assert "evidence: gpu_temp_c=91.0" in text.output and "next: Check the node's fans" in text.output
    again = json.loads(CliRunner().invoke(main, ["diagnose", "--db", str(db), "--window", "60", "--json"]).output)
    assert again[0]["opened_at"] == document[0]["opened_at"]  # the same finding, still open: one event
    calmer = CliRunner().invoke(main, ["diagnose", "--db", str(db), "--window", "60", "--threshold",
                                       "gpu_temp_warn_c=95", "--json"])
    assert calmer.exit_code == 0 and json.loads(calmer.output) == []
    wrong = CliRunner().invoke(main, ["diagnose", "--db", str(db), "--threshold", "gpu_temp_warn_c"])
    assert wrong.exit_code == 2 and "NAME=VALUE" in wrong.output  # a bad option (docs/exit-codes.md)
