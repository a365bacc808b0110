"""`fleet sim --list-scenarios`, the simulator launcher `fleet demo` uses, and the benchmark's scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from console.cli.bench_sim import bench_scenario
from console.cli.sim import sim
from console.cli.sim_process import SimulatorFailed, start_sim
from simulator.scenario import parse_scenario


def test_list_scenarios() -> None:
    result = CliRunner().invoke(sim, ["--list-scenarios"])
    assert result.exit_code == 0
    names = [line.split()[0] for line in result.output.splitlines()]
    assert names == ["acceptance", "ecmp", "healthy", "incident"]


def test_launcher_waits_for_ready_and_stops(tmp_path: Path) -> None:
    process = start_sim("acceptance", tmp_path / "state", nodes=2, timeout_s=60)
    try:
        assert process.inventory == tmp_path / "state" / "inventory.toml"
        assert process.inventory.is_file()
        assert process.process.poll() is None
    finally:
        assert process.stop() == 0


def test_launcher_reports_why_the_simulator_failed(tmp_path: Path) -> None:
    with pytest.raises(SimulatorFailed, match="no such scenario file or built-in scenario"):
        start_sim(str(tmp_path / "missing.toml"), tmp_path / "state", timeout_s=60)


def test_bench_scenario_has_64_switches_at_1024_nodes() -> None:
    scenario = parse_scenario(bench_scenario(1024))
    assert scenario.fabric.groups * 8 + scenario.fabric.spines == 64
    assert sum(len(job.nodes) for job in scenario.jobs) == 1024
