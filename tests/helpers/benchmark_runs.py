"""``python -m benchmarks NAME ... --json`` as a person runs it, from the checkout's root.

Tests of the benchmarks run them this way, on sizes small enough for a test, and check the document
they print (its shape and the sense of its figures), never a timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class BenchmarkRun:
    """What one run left: its exit status, its document and its stderr (the progress lines)."""

    returncode: int
    doc: dict[str, Any]
    stderr: str

    @property
    def results(self) -> dict[str, Any]:
        return dict(self.doc["results"])


def check_shape(doc: dict[str, Any], name: str) -> None:
    """The common shape: every key there, every target judged, every target's figure reported."""
    assert {"name", "machine", "results", "targets", "met"} <= set(doc)
    assert doc["name"] == name
    assert set(doc["machine"]) == {"cpus", "load_before", "load_after"}
    assert set(doc["targets"]) == set(doc["met"]) <= set(doc["results"])
    for bound in doc["targets"].values():
        assert len(bound) == 1 and ("max" in bound or "min" in bound)


def run_benchmark(name: str, *args: str, timeout_s: float = 100.0) -> BenchmarkRun:
    """Run one benchmark with ``--json``. Exit status 0 (every target met) and 1 (some missed:
    tiny sizes miss most) both print the document; any other fails with the benchmark's stderr."""
    done = subprocess.run([sys.executable, "-m", "benchmarks", name, *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    check_shape(doc, name)
    assert done.returncode == (0 if all(doc["met"].values()) else 1)
    return BenchmarkRun(done.returncode, doc, done.stderr)


def run_refused(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one benchmark expected to stop before measuring; what it left."""
    return subprocess.run([sys.executable, "-m", "benchmarks", name, *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
