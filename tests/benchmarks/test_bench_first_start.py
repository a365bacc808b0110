"""``python -m benchmarks first_start``: a clone of a checkout that is not a repository cannot be
measured, and says why (the benchmark itself clones, installs and runs `make demo`: minutes, run by
`make bench`, not by the suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.benchmark_runs import ROOT


def test_first_start_says_why_it_cannot_measure(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "first_start", "--source", str(tmp_path / "none"),
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3 and done.stdout == ""
    assert "git clone" in done.stderr.strip().splitlines()[-1]  # the one-line reason, after the progress
