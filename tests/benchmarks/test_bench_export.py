"""``python -m benchmarks export`` on a small store: a scrape that carries every series, and a shard's figures."""

from __future__ import annotations

from helpers.benchmark_runs import run_benchmark

from benchmarks._synthetic_fleet import host_keys


def test_export_scrapes_every_series_of_four_nodes() -> None:
    run = run_benchmark("export", "--nodes", "4", "--scrapes", "2")
    results = run.results
    assert results["nodes"] == 4
    # Every series of the synthetic fleet; per node its state (fleet_host_up, fleet_host_state_time_seconds),
    # its inventory entry (fleet_host_info) and its job (fleet_slurm_job_node_info); the one job's start time.
    assert results["samples"] == 4 * len(host_keys()) + 4 * 4 + 1
    assert 0 < results["gzip_bytes"] < results["bytes"]
    assert results["openmetrics_scrape_cpu_s_p50"] >= 0 and results["first_scrape_cpu_s"] > 0
    assert results["series_per_node"] == len(host_keys()) + 4 and results["store"] == "synthetic"
    assert (results["node_series"], results["switch_series"], results["other_series"]) == (results["samples"] - 1, 0, 1)
    assert results["samples_per_s"] == round(results["samples"] / 30)  # each series once a 30 s scrape
    assert run.doc["targets"] == {} and run.returncode == 0


def test_export_of_a_simulated_shard_counts_what_a_real_node_and_switch_serve() -> None:
    run = run_benchmark("export", "--nodes", "2", "--simulated", "--collect-s", "2", "--scrapes", "1",
                        "--scrape-interval", "15")
    results = run.results
    assert results["store"] == "simulated" and run.returncode == 0
    # 8 NICs with their port, RDMA and netdev counters, 4 optics lanes each, 8 GPUs: hundreds per node
    assert 500 < results["series_per_node"] < 2000
    assert results["series_per_switch"] > 0 and results["node_series"] >= 2 * results["series_per_node"]
    assert results["node_series"] + results["switch_series"] + results["other_series"] == results["samples"]
    assert results["samples_per_s"] == round(results["samples"] / 15)
