"""``python -m benchmarks ui`` on a store of four nodes: the console's frames, refreshes and memory."""

from __future__ import annotations

from helpers.benchmark_runs import run_benchmark


def test_ui_reports_first_frames_refreshes_and_memory() -> None:
    run = run_benchmark("ui", "--nodes", "4", "--refreshes", "5")
    results = run.results
    assert results["nodes"] == 4 and results["terminal"] == "200x60"
    assert 0 < results["first_frame_s"] <= results["first_frame_with_values_s"]
    assert 0 < results["refresh_apply_p50_ms"] <= results["refresh_apply_p99_ms"]
    assert 0 < results["refresh_read_build_p50_ms"] <= results["refresh_read_build_p99_ms"]
    assert results["cells_redrawn_per_refresh_p50"] >= 0
    assert results["rss_mib"] > 0 and results["store_fill_s"] >= 0
    assert set(run.doc["targets"]) == {"first_frame_s", "refresh_apply_p99_ms", "rss_mib"}
