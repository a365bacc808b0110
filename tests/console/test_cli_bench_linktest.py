"""`fleet bench linktest --nodes 4 --json`: a real simulator, a real link test, each process's CPU per pair."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from fleet.console.cli import main; main()", "bench", "linktest", "--nodes", "4",
         "--sample", "2", "--json", *options], capture_output=True, text=True, timeout=100, check=False,
    )  # fmt: skip


def _check(result: dict[str, object]) -> None:
    assert result["pairs"] == 6 and result["rounds"] == 3 and result["linktest_bad_pairs"] == 0
    assert result["sequential_sample_ok"] == 2
    assert isinstance(result["linktest_sim_cpu_ms_per_pair"], float) and result["linktest_sim_cpu_ms_per_pair"] > 0
    assert isinstance(result["linktest_console_cpu_ms_per_pair"], float)
    assert result["linktest_console_cpu_ms_per_pair"] > 0
    assert 0 < result["linktest_probes_s"] <= result["linktest_s"]  # type: ignore[operator]
    assert result["linktest_checks_s"] == pytest.approx(result["linktest_s"] - result["linktest_probes_s"], abs=0.02)  # type: ignore[operator]
    assert isinstance(result["speedup_bound"], float) and result["speedup_bound"] > 0


@pytest.mark.timeout(110)
def test_bench_linktest_side_by_side_with_another_simulator_tree() -> None:
    done = _bench("--compare-sim", str(ROOT))  # this tree against itself: both runs must complete
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    _check(result)
    other = result["compare_sim"]
    assert other["tree"] == str(ROOT)
    _check(other)
    assert result["linktest_faster_than_compare"] > 0


@pytest.mark.timeout(30)
def test_bench_linktest_refuses_a_tree_without_a_simulator(tmp_path: Path) -> None:
    done = _bench("--compare-sim", str(tmp_path))
    assert done.returncode == 2
    assert "has no simulator/main.py" in done.stderr
