"""``python -m benchmarks store_lag`` on four nodes and one rail: the header's lag around a link test,
and the store's size per node-hour."""

from __future__ import annotations

from helpers.benchmark_runs import run_benchmark


def test_store_lag_reports_the_lag_around_a_link_test_and_the_store_size() -> None:
    run = run_benchmark("store_lag", "--nodes", "4", "--warm", "8", "--after", "5", "--rails", "0",
                        timeout_s=300)
    results = run.results
    assert results["nodes"] == 4 and results["rails"] == 1 and results["scenario"] == "incident"
    assert results["linktest_s"] > 0 and results["recover_s"] >= 0
    assert results["lag_after_max_s"] is not None and results["lag_after_max_s"] >= 0
    assert results["probes_mib"] >= 0 and 0 < results["samples_mib"] <= results["store_mib"]
    assert set(run.doc["targets"]) == {"recover_s", "samples_mib_per_node_hour"}
