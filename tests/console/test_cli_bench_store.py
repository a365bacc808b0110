"""`fleet bench store` end to end on a tiny fleet: every number is measured and reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleet.console.cli import main


@pytest.mark.slow
def test_bench_store_reports_every_target(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "bench", "store", "--nodes", "3", "--minutes", "12", "--day-nodes", "1", "--day-hours", "2.5",
        "--repeats", "3", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    results = report["results"]
    assert set(results) == set(report["targets"]) == set(report["met"])
    assert results["ingest_samples_per_s"] > 0
    assert 0 < results["bytes_per_sample"] < 8  # sealed chunks exist and are compressed
    assert report["fleet_phase"]["samples_offered"] == 3 * 424 * 72
    assert report["fleet_phase"]["latest_points"] == 3 * 424
    assert report["day_phase"]["rollup_1m_bytes_per_series_day"] > 0
    assert (tmp_path / "bench-fleet.db").exists()


def test_a_day_phase_too_short_for_old_as_of_moments_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["bench", "store", "--day-hours", "1.5", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 2 and "--day-hours" in result.output


def test_a_fleet_phase_too_short_to_seal_a_block_is_refused(tmp_path: Path) -> None:
    """Bytes per sample come from sealed blocks: a shorter run once ended in a TypeError."""
    result = CliRunner().invoke(main, ["bench", "store", "--minutes", "5", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 2 and "--minutes" in result.output
