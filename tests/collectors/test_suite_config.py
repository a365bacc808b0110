"""The suite reads the configuration: a baseline keeps `fleet check`'s verdicts and the settings, the run is a
`config_check` event in the history, `baseline diff` shows a misconfiguration that appeared between two
baselines, and an acceptance criterion that requires the checks fails on it (5 nodes of `acceptance`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_accept_run import scenario_text

from fleet.collectors.baseline_run import SuiteSettings, run_suite
from fleet.collectors.inventory import load_inventory
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.fabric.acceptance import evaluate, parse_criteria
from fleet.fabric.baseline import Baseline, Rank, diff
from fleet.fabric.config_checks import CONFIG_CHECK_EVENT
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario
from fleet.simulator.server import FleetServer
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

MISCONFIGURED = '\n[[faults]]\nkind = "pfc_disabled"\ntarget = "gpu002:mlx5_1"\n'
CRITERIA = '[[check]]\nid = "roce"\nkind = "config_checks_pass"\nchecks = ["nic_pfc", "link_pfc"]\n'


async def take(tmp_path: Path, text: str, label: str) -> Baseline:
    server = FleetServer(FleetModel(parse_scenario(text, source=f"{label}.toml")))
    await server.start()
    inventory = load_inventory(write_state(server, tmp_path / label))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts,
                   settings=PoolSettings(ssh_config=(), connect_timeout_s=5.0))
    db = tmp_path / "history.db"
    settings = SuiteSettings(rails=(1,), linktest_mode="sample", sample_rounds=1, fleet_allreduce=False)
    try:
        with StoreWriter(db) as writer:
            run = await run_suite(inventory, settings, writer=writer, db_path=db, label=label, pool=pool)
    finally:
        await pool.close()
        await server.close()
    return run.baseline


async def test_a_misconfiguration_between_two_baselines_is_drift_and_fails_acceptance(tmp_path: Path) -> None:
    before = await take(tmp_path, scenario_text("acceptance"), "before")
    after = await take(tmp_path, scenario_text("acceptance") + MISCONFIGURED, "after")
    assert before.config_checks and all(c["fail"] == 0 for c in before.config_checks.values())
    assert before.configuration["gpu002:mlx5_1"]["pfc"] == "3"
    assert [f["part"] for f in after.config_checks["nic_pfc"]["failed"]] == ["gpu002:mlx5_1"]
    with StoreReader(tmp_path / "history.db") as reader:
        assert len(reader.events(kind=CONFIG_CHECK_EVENT)) == 2
    drift = {(c.subject, c.before, c.after): c.rank for c in diff(before, after).configuration}
    assert drift[("check nic_pfc", "passes", "gpu002:mlx5_1")] == Rank.CRITICAL
    assert drift[("gpu002:mlx5_1 pfc", "3", "")] == Rank.WARNING
    criteria = parse_criteria(CRITERIA)
    assert evaluate(criteria, before)[0].passed
    [failed] = evaluate(criteria, after)
    assert not failed.passed and {f.part for f in failed.failures} == {"config/nic_pfc/gpu002/mlx5_1",
                                                                       "config/link_pfc/gpu002/mlx5_1"}
