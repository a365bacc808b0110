"""``python -m benchmarks sim`` on a tiny fleet, and the scenarios the benchmarks simulate."""

from __future__ import annotations

from helpers.benchmark_runs import run_benchmark

from benchmarks._simulated import busy_fleet, idle_fleet
from fleet.simulator.scenario import parse_scenario


def test_busy_fleet_has_64_switches_and_every_node_in_a_job_at_1024_nodes() -> None:
    scenario = parse_scenario(busy_fleet(1024))
    assert scenario.fabric.groups * 8 + scenario.fabric.spines == 64
    assert sum(len(job.nodes) for job in scenario.jobs) == 1024


def test_idle_fleet_has_no_jobs() -> None:
    scenario = parse_scenario(idle_fleet(128))
    assert scenario.jobs == ()
    assert scenario.fabric.nodes == 128 and scenario.fabric.spines == 8


def test_sim_measures_start_idle_and_first_commands_of_four_nodes() -> None:
    results = run_benchmark("sim", "--nodes", "4", "--window", "1").results
    assert results["nodes"] == 4
    assert results["ready_line"].startswith("fleet-sim ready: 4 nodes")
    assert results["start_to_ready_s"] > 0 and results["idle_window_s"] == 1.0
    assert results["idle_cpu_pct"] >= 0
    assert 0 < results["rss_idle_mib"] <= results["rss_after_commands_mib"] * 2
    assert min(results["first_command_s"], results["second_command_s"], results["switch_command_s"]) > 0
    assert results["sim_exit_status"] == 0  # stopped by SIGTERM, cleanly
