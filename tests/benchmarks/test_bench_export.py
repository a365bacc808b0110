"""``python -m benchmarks export`` on a small store: a scrape that carries every series."""

from __future__ import annotations

from helpers.benchmark_runs import run_benchmark

from benchmarks._synthetic_fleet import host_keys


def test_export_scrapes_every_series_of_four_nodes() -> None:
    run = run_benchmark("export", "--nodes", "4", "--scrapes", "2")
    results = run.results
    assert results["nodes"] == 4
    # Every series of the synthetic fleet, and fleet_host_up once per node.
    assert results["samples"] == 4 * len(host_keys()) + 4
    assert 0 < results["gzip_bytes"] < results["bytes"]
    assert results["openmetrics_scrape_cpu_s_p50"] >= 0 and results["first_scrape_cpu_s"] > 0
    assert run.doc["targets"] == {} and run.returncode == 0
