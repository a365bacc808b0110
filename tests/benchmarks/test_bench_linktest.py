"""``python -m benchmarks linktest --nodes 4``: a real simulator, a real link test, each process's CPU per pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.benchmark_runs import ROOT, run_benchmark, run_refused


def _check(results: dict[str, Any], prefix: str = "") -> None:
    def get(key: str) -> Any:
        return results[prefix + key]

    assert get("pairs") == 6 and get("rounds") == 3 and get("linktest_bad_pairs") == 0
    assert get("sequential_sample_ok") == 2 and get("sequential_extrapolated") is True
    assert get("linktest_sim_cpu_ms_per_pair") > 0 and get("linktest_console_cpu_ms_per_pair") > 0
    assert 0 < get("linktest_probes_s") <= get("linktest_s")
    assert get("linktest_checks_s") == pytest.approx(get("linktest_s") - get("linktest_probes_s"), abs=0.02)
    assert get("speedup_x") > 0 and get("speedup_bound_x") > 0


@pytest.mark.timeout(120)
def test_linktest_side_by_side_with_another_simulator_tree() -> None:
    run = run_benchmark("linktest", "--nodes", "4", "--sample", "2", "--compare-sim", str(ROOT), timeout_s=110)
    results = run.results
    _check(results)
    assert results["compare_sim_tree"] == str(ROOT)  # this tree against itself: both runs complete
    _check(results, "compare_sim_")
    assert results["linktest_faster_than_compare_x"] > 0
    assert set(run.doc["targets"]) == {"linktest_s", "speedup_x"}


def test_linktest_refuses_a_tree_without_a_simulator(tmp_path: Path) -> None:
    done = run_refused("linktest", "--nodes", "4", "--compare-sim", str(tmp_path))
    assert done.returncode == 2
    assert "has no fleet/simulator/main.py" in done.stderr
