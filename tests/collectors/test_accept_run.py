"""Acceptance and baselines end to end against the simulator: the shipped scenarios and the example criteria.

The ``acceptance`` and ``acceptance-broken`` scenarios are 64-node fleets; the
tests run them with 5 nodes (same fabric, seed and faults) so the suite takes
seconds: the example criteria must pass on the first and fail exactly the
broken optic and the throttled node on the second; two baselines, before and
after the faults, must differ in exactly those parts.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from fleet.collectors.accept_run import AcceptanceRun, run_acceptance
from fleet.collectors.baseline_run import SuiteProgress, SuiteSettings, run_suite
from fleet.collectors.inventory import Inventory, load_inventory
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.fabric.acceptance import parse_criteria
from fleet.fabric.baseline import Baseline, diff
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import SCENARIO_DIR, parse_scenario
from fleet.simulator.server import FleetServer
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"
NODES = 5


def scenario_text(name: str) -> str:
    text = (SCENARIO_DIR / f"{name}.toml").read_text()
    shrunk, count = re.subn(r"(?m)^nodes = 64\b", f"nodes = {NODES}", text)
    assert count == 1
    return shrunk


@asynccontextmanager
async def fleet(tmp_path: Path, name: str) -> AsyncIterator[tuple[Inventory, SshPool]]:
    server = FleetServer(FleetModel(parse_scenario(scenario_text(name), source=f"{name}.toml")))
    await server.start()
    inventory = load_inventory(write_state(server, tmp_path / name))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts,
                   settings=PoolSettings(ssh_config=(), connect_timeout_s=5.0))
    try:
        yield inventory, pool
    finally:
        await pool.close()
        await server.close()


async def accept(tmp_path: Path, name: str) -> tuple[AcceptanceRun, list[SuiteProgress], list[str]]:
    criteria = parse_criteria(EXAMPLE.read_text(), source=str(EXAMPLE))
    progress: list[SuiteProgress] = []
    judged: list[str] = []
    db = tmp_path / f"{name}.db"
    async with fleet(tmp_path, name) as (inventory, pool):
        with StoreWriter(db) as writer:
            run = await run_acceptance(inventory, criteria, writer=writer, db_path=db, pool=pool,
                                       on_progress=progress.append, on_check=lambda r: judged.append(r.check.id))
    return run, progress, judged


async def test_the_acceptance_scenario_passes_every_example_check(tmp_path: Path) -> None:
    run, progress, judged = await accept(tmp_path, "acceptance")
    failed = {r.check.id: r.summary for r in run.results if not r.passed}
    assert failed == {} and run.passed
    assert run.findings == ()
    assert judged == [c.id for c in run.criteria.checks]
    steps = [p.step for p in progress]
    assert steps[0] == "snapshot" and steps[-1] == "done"
    assert {"linktest", "bandwidth", "allreduce", "counters"} <= set(steps)
    baseline = run.suite.baseline
    assert baseline.shape.nodes == tuple(f"gpu{i:03d}" for i in range(1, NODES + 1))
    assert len(baseline.shape.nics) == NODES * 8 and baseline.unreachable == {}
    assert baseline.software["gpu001"]["gpu_model"].startswith("NVIDIA H100")
    assert all(baseline.metric(f"nic/{n.replace(':', '/')}", "bw_avg_gbps") for n in baseline.shape.nics)
    by_id = {r.check.id: r for r in run.results}
    assert by_id["allreduce-node"].parts_checked == NODES and by_id["cabling"].parts_checked == NODES * 8
    assert by_id["link-loss"].parts_checked == NODES * 8


async def test_the_broken_scenario_fails_exactly_the_optic_and_the_throttled_node(tmp_path: Path) -> None:
    run, _, _ = await accept(tmp_path, "acceptance-broken")
    failed = {r.check.id: r for r in run.results if not r.passed}
    # the throttled node gates the fleet-wide ring and all-to-all too (85 % of their healthy figures), which
    # still meets the 82 % scaling standard and the 70 % all-to-all check: only the node's own check fails
    assert set(failed) == {"optics", "allreduce-node"}
    [optic] = failed["optics"].failures
    assert optic.part == "nic/gpu003/mlx5_2" and optic.measured is not None and optic.measured < -3.0
    [node] = failed["allreduce-node"].failures
    assert node.part == "node/gpu005" and node.measured is not None and 0.75 < node.measured < 0.9
    assert "gpu005 0.8" in failed["allreduce-node"].summary and "< 0.94" in failed["allreduce-node"].summary
    # the diagnosis over the suite's history names both parts with their numbers
    found = {(f.kind, f.node, f.nic): f.evidence for f in run.findings}
    assert set(found) == {("optics_low_rx_power", "gpu003", "mlx5_2"), ("gpu_thermal", "gpu005", "")}
    assert found[("gpu_thermal", "gpu005", "")]["gpu_temp_c"] == 94.0


async def test_a_nic_trained_slow_fails_the_all_to_all_check_and_is_named(tmp_path: Path) -> None:
    healthy, _, _ = await accept(tmp_path, "acceptance")
    slow, _, _ = await accept(tmp_path, "acceptance-slow-nic")
    good = next(r for r in healthy.results if r.check.id == "alltoall-fleet")
    bad = next(r for r in slow.results if r.check.id == "alltoall-fleet")
    assert good.passed and good.worst is not None and good.worst.measured is not None and good.worst.measured > 0.9
    assert not bad.passed and bad.worst is not None and bad.worst.measured is not None and bad.worst.measured < 0.35
    assert bad.summary.startswith("1 of 1 failed; fleet ") and "< 0.7" in bad.summary
    assert "One alltoall_perf across the 5 reachable nodes (ran)" in bad.claim
    assert any("all-to-all fleet held back by nic gpu003 mlx5_2" in n for n in slow.suite.baseline.notes)
    assert ("alltoall_nic", "gpu003", "mlx5_2") in {(f.kind, f.node, f.nic) for f in slow.findings}


async def test_baselines_before_and_after_the_faults_differ_in_exactly_those_parts(tmp_path: Path) -> None:
    settings = SuiteSettings(rails=(1, 2), linktest_mode="sample", sample_rounds=1)
    taken: list[Baseline] = []
    for name in ("acceptance", "acceptance-broken"):
        db = tmp_path / "history.db"
        async with fleet(tmp_path, name) as (inventory, pool):
            with StoreWriter(db) as writer:
                run = await run_suite(inventory, settings, writer=writer, db_path=db, label=name, pool=pool)
                writer.put_baseline(run.baseline.label, run.baseline.ts, run.baseline.to_json())
        taken.append(run.baseline)
    with StoreReader(tmp_path / "history.db") as reader:
        stored = [Baseline.from_json(data) for _, _, data in reader.baselines()]
    assert [b.label for b in stored] == ["acceptance", "acceptance-broken"] and stored == taken
    result = diff(stored[0], stored[1])
    # the throttled node paces every collective it takes part in: both all-reduces and both all-to-alls
    assert set(result.changed_parts()) == {"nic/gpu003/mlx5_2", "node/gpu005", "fleet/allreduce", "fleet/alltoall"}
    assert {(c.part, c.metric) for c in result.regressions} == {
        ("nic/gpu003/mlx5_2", "rx_power_dbm"), ("node/gpu005", "allreduce_busbw_gbytes_s"),
        ("node/gpu005", "allreduce_efficiency"), ("fleet/allreduce", "allreduce_busbw_gbytes_s"),
        ("fleet/allreduce", "allreduce_efficiency"), ("node/gpu005", "alltoall_busbw_gbytes_s"),
        ("node/gpu005", "alltoall_efficiency"), ("fleet/alltoall", "alltoall_busbw_gbytes_s"),
        ("fleet/alltoall", "alltoall_efficiency")}
    optic = next(c for c in result.regressions if c.metric == "rx_power_dbm")
    assert optic.delta == pytest.approx(-5.0, abs=0.2)
    assert result.new_parts == () and result.gone_parts == () and result.improvements == ()
