"""``python -m benchmarks``: its names, its exit statuses, a side-by-side run, and that it stays out
of the installed product."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from helpers.benchmark_runs import ROOT, run_benchmark, run_refused

PRODUCT = ("console", "collectors", "store", "fabric", "simulator", "themes")


def test_every_benchmark_is_listed() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0
    listed = done.stdout.split()
    assert {"collect", "export", "linktest", "sim", "store", "ui"} <= set(listed)
    assert not any(name.startswith("_") or name == "report" for name in listed)


def test_an_unknown_benchmark_and_a_bad_option_are_usage_errors() -> None:
    unknown = run_refused("nosuch")
    assert unknown.returncode == 2 and "no benchmark named 'nosuch'" in unknown.stderr
    bad = run_refused("export", "--nodes", "0")
    assert bad.returncode == 2 and "argument --nodes: 0 is not in 1..4096" in bad.stderr
    assert bad.stdout == ""


def test_a_benchmark_explains_its_options() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "store", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert "python -m benchmarks store" in done.stdout
    assert "--json" in done.stdout and "--minutes" in done.stdout


def test_the_table_for_a_person_names_each_target_and_its_outcome() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks", "ui", "--nodes", "2", "--refreshes", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=100, check=False)
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ui  (cpus ")
    first_frame = next(line for line in lines if line.split()[0] == "first_frame_s")
    assert "target <= 1.0:" in first_frame and ("met" in first_frame or "MISSED" in first_frame)


def test_another_tree_is_measured_side_by_side_in_one_run() -> None:
    run = run_benchmark("export", "--nodes", "2", "--scrapes", "1", "--compare-tree", str(ROOT))
    compared = run.doc["compared"]
    assert compared["tree"] == str(ROOT)
    assert set(compared["results"]) == set(run.results)
    assert compared["results"]["samples"] == run.results["samples"]  # the same store, measured twice
    assert run.doc["ratio_to_compared"]["samples"] == 1.0
    assert "nodes" in run.doc["ratio_to_compared"]
    assert run.stderr.count("filling a store with 2 nodes") == 2


def test_a_tree_without_the_benchmark_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run_refused("export", "--compare-tree", str(tmp_path))
    assert done.returncode == 3
    assert done.stderr.strip() == f"benchmarks export: {tmp_path} has no benchmarks/export.py"


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_the_product_never_imports_the_benchmarks() -> None:
    offenders = [f"{path.relative_to(ROOT)}: {name}"
                 for package in PRODUCT for path in sorted((ROOT / package).rglob("*.py"))
                 for name in _imports(path) if name.split(".")[0] == "benchmarks"]
    assert offenders == []


def test_the_benchmarks_are_not_installed_and_fleet_has_no_bench_command(tmp_path: Path) -> None:
    script = ("import importlib.util\n"
              "from click.testing import CliRunner\n"
              "from fleet.console.cli import main\n"
              "print(importlib.util.find_spec('benchmarks') is None)\n"
              "print(CliRunner().invoke(main, ['--help']).output)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    not_installed, help_text = done.stdout.split("\n", 1)
    assert not_installed == "True"
    commands = help_text.split("Commands:", 1)[1].split()
    assert "sim" in commands and "bench" not in commands
