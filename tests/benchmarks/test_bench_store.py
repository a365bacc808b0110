"""``python -m benchmarks store`` end to end on a tiny fleet: every figure measured and reported."""

from __future__ import annotations

from pathlib import Path

from helpers.benchmark_runs import run_benchmark, run_refused

from benchmarks._synthetic_fleet import SERIES_PER_NODE


def test_store_reports_every_target_on_a_tiny_fleet(tmp_path: Path) -> None:
    run = run_benchmark("store", "--nodes", "3", "--minutes", "12", "--day-nodes", "1", "--day-hours", "2.5",
                        "--repeats", "3", "--dir", str(tmp_path))
    results = run.results
    assert set(run.doc["targets"]) == {"ingest_samples_per_s", "bytes_per_sample", "growth_gb_per_day",
                                       "latest_fleet_p99_ms", "series_24h_p99_ms", "as_of_fleet_p99_ms"}
    assert all(isinstance(results[key], float) and results[key] > 0 for key in run.doc["targets"])
    assert 0 < results["bytes_per_sample"] < 8  # sealed chunks exist and are compressed
    assert results["fleet_samples_offered"] == 3 * SERIES_PER_NODE * 72  # 12 minutes of 10 s ticks
    assert results["fleet_latest_points"] == 3 * SERIES_PER_NODE
    assert results["fleet_sealed_samples"] > 0
    assert results["day_rollup_1m_bytes_per_series_day"] > 0
    assert results["steady_state_gb"] > results["raw_gb_per_day"] > 0
    assert (tmp_path / "bench-fleet.db").exists() and (tmp_path / "bench-day.db").exists()


def test_a_day_phase_too_short_for_old_as_of_moments_is_refused(tmp_path: Path) -> None:
    done = run_refused("store", "--day-hours", "1.5", "--dir", str(tmp_path))
    assert done.returncode == 2 and "argument --day-hours: 1.5 is less than 2.5" in done.stderr


def test_a_fleet_phase_too_short_to_seal_a_block_is_refused(tmp_path: Path) -> None:
    """Bytes per sample come from sealed blocks: a shorter run has none to measure."""
    done = run_refused("store", "--minutes", "5", "--dir", str(tmp_path))
    assert done.returncode == 2 and "argument --minutes: 5 is less than 12" in done.stderr
    assert not list(tmp_path.iterdir())
