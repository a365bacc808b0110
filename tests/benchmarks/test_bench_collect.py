"""``python -m benchmarks collect --nodes 4``: every measurement is there, measured on a real simulator."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from helpers.benchmark_runs import run_benchmark

from benchmarks._fleet_complete import cause
from benchmarks._processes import thread_cpu_s
from benchmarks.collect import WRITER_THREAD, node_set, ssh_config_for
from fleet.collectors.inventory import InventoryHost
from fleet.store.writer import StoreWriter


def test_collect_reports_rounds_stream_and_clush_on_four_nodes() -> None:
    run = run_benchmark("collect", "--nodes", "4", "--window", "2", "--fleet-duration", "0")
    results = run.results
    assert results["nodes"] == 4
    assert results["round_command"] == "grep -H . /sys/class/infiniband/*/ports/*/counters/*"
    for side in ("round_new", "round_open"):
        assert results[f"{side}_hosts_ok"] == 4
        assert results[f"{side}_wall_s"] > 0 and results[f"{side}_collector_cpu_s"] >= 0
        assert results[f"{side}_output_bytes"] > 4 * 1000  # every node's counters came back
    assert results["stream_nodes_streaming"] == 4
    assert results["stream_lines_per_s"] > 0 and results["stream_samples_per_s"] > 0
    assert 0 < results["stream_collector_cpu_s_per_s"] < 2
    assert 0 <= results["stream_store_writer_cpu_s_per_s"] <= results["stream_collector_cpu_s_per_s"]
    assert results["stream_dropped_values_in_window"] == 0 and results["stream_writer_caught_up_s"] >= 0
    if results["clush_available"]:
        assert results["clush_hosts_ok"] == 4 and results["clush_exit_status"] == 0, results
        assert results["clush_over_open_wall_x"] > 0
    else:
        assert results["clush_reason"] and results["clush_over_open_wall_x"] is None
        assert run.doc["met"]["clush_over_open_wall_x"] is False
    assert set(run.doc["targets"]) == {"round_open_wall_s", "stream_collector_cpu_s_per_s_all_nodes_at_1s",
                                       "clush_over_open_wall_x"}


def test_collect_reports_the_whole_fleet_from_cold() -> None:
    run = run_benchmark("collect", "--nodes", "4", "--fleet-only", "--fleet-duration", "20")
    results = run.results
    assert (results["nodes"], results["fleet_switches"]) == (4, 64)  # the benchmark fleet's 64 switches
    complete = results["time_to_complete_fleet_s"]
    assert (complete is None) == (results["fleet_hosts_without_values"] > 0), results
    assert results["fleet_nodes_with_values_at_5_10_15_s"] == sorted(results["fleet_nodes_with_values_at_5_10_15_s"])
    assert results["fleet_collector_cpu_s_per_s"] > 0 and results["fleet_simulator_cpu_s_per_s"] > 0
    assert results["fleet_node_lines_per_s_mean"] > 0  # the agents' lines, read over the second half
    marks = results["fleet_hosts_marked_hung"] + results["fleet_hosts_marked_slow"]
    by_reason = results["fleet_marks_by_reason"]
    assert sum(by_reason.values()) == marks or len(by_reason) == 8, results
    assert len(results["fleet_simulator_cpus"]) == 1 and results["fleet_collector_cpus"]
    assert set(run.doc["targets"]) == {"time_to_complete_fleet_s", "fleet_hosts_marked_hung", "fleet_hosts_marked_slow",
                                       "fleet_switch_counters_max_gap_s", "fleet_rss_growth_after_first_minute_mib"}
    assert "round_command" not in results


def test_ssh_config_names_each_hosts_own_port() -> None:
    hosts = (InventoryHost("gpu001", "node", "127.42.0.1", 40001, "fleet", identity_file=Path("/k/id")),
             InventoryHost("gpu002", "node", "127.42.0.2", 40002, "fleet", identity_file=Path("/k/id")))
    text = ssh_config_for(hosts, Path("/k/known_hosts"))
    blocks = text.split("Host ")
    assert "gpu001\n  HostName 127.42.0.1\n  Port 40001\n  User fleet\n  IdentityFile /k/id" in blocks[1]
    assert "Port 40002" in blocks[2]
    assert "UserKnownHostsFile /k/known_hosts" in text and "StrictHostKeyChecking yes" in text


def test_node_set_keeps_each_padding_apart_for_clush() -> None:
    names = [f"gpu{i:03d}" for i in range(1, 1025)]
    assert node_set(names) == "gpu[001-999],gpu[1000-1024]"


def test_the_writer_thread_is_found_by_the_name_the_benchmark_looks_for(tmp_path: Path) -> None:
    """The benchmark reads the store writer's CPU on its thread's CPU clock, finding the thread by name."""
    writer = StoreWriter(tmp_path / "fleet.db").start()
    try:
        assert WRITER_THREAD in {thread.name for thread in threading.enumerate()}
        assert thread_cpu_s("no such thread") == 0.0
    finally:
        writer.close()


def test_a_threads_cpu_clock_is_the_one_that_thread_reads_itself() -> None:
    me = threading.current_thread().name
    before, began = thread_cpu_s(me), time.thread_time()
    while time.thread_time() - began < 0.05:  # burn some of this thread's own CPU
        pass
    spent, seen = time.thread_time() - began, thread_cpu_s(me) - before
    assert spent <= seen <= spent + 0.05  # the same clock, read a little later


def test_marks_of_one_cause_count_together_whatever_their_figures() -> None:
    late = ["agent lines 3.3 s apart (interval 1 s)", "agent lines 12.25 s apart (interval 1 s)"]
    assert {cause(reason) for reason in late} == {"agent lines # s apart (interval # s)"}
    assert cause("accepted TCP but SSH set-up did not finish within 10 s") != cause(late[0])
