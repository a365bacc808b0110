"""`fleet collect --once --json` against the `incident` scenario over real SSH: what one round must deliver."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet

from fleet.console.cli import main
from fleet.simulator.scenario import load_scenario
from fleet.store.reader import StoreReader


@pytest.mark.timeout(90)
async def test_one_round_of_the_incident_names_every_broken_host_and_reads_every_other(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("incident"), tmp_path / "sim") as inventory:
        result = await asyncio.to_thread(
            CliRunner().invoke, main, ["collect", "--once", "--json", "--inventory", str(inventory), "--db", str(db)],
            catch_exceptions=False)
    assert result.exit_code == 1, result.output  # some hosts failed (docs/exit-codes.md)
    assert "fleet: 1 hung:" in result.stderr and "fleet: 1 unreachable: connection refused (gpu031)" in result.stderr
    document = json.loads(result.stdout)
    states = {host: entry["state"] for host, entry in document["hosts"].items()}
    assert states["gpu031"] == "unreachable" and "refused" in document["hosts"]["gpu031"]["reason"]
    assert states["gpu032"] == "hung"
    assert states["gpu030"] == "slow"
    broken = {"gpu030", "gpu031", "gpu032"}
    assert all(state == "ok" for host, state in states.items() if host not in broken), states
    assert document["hosts_failed"] == {"hung": 1, "unreachable": 1}
    reader = StoreReader(db)
    try:
        latest = reader.latest()
    finally:
        reader.close()
    nodes = {f"gpu{i:03d}" for i in range(1, 33)} - {"gpu031", "gpu032"}
    nics = {(p.host, p.device) for p in latest if p.metric == "tx_bytes"}
    gpus = {(p.host, p.device) for p in latest if p.metric == "gpu_util_pct"}
    assert nics == {(n, f"mlx5_{r}") for n in nodes for r in range(8)}
    assert gpus == {(n, f"gpu{g}") for n in nodes for g in range(8)}
