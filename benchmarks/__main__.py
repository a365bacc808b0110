"""``python -m benchmarks NAME [OPTIONS] [--json] [--compare-tree TREE]``: run one benchmark.

``python -m benchmarks --list`` names them, one a line; ``python -m benchmarks NAME --help`` gives a
benchmark's options. Without ``--json`` the figures are printed as a table for a person; with it, one JSON
document (:mod:`benchmarks.report`) is the only output on stdout. Progress goes to stderr.

``--compare-tree TREE`` measures another checkout side by side, in one run: the same benchmark
with the same options, first in TREE (its own ``benchmarks/`` and its own ``fleet``, e.g. a
``git worktree add TREE REV`` of an earlier commit), then in this tree, each in a fresh interpreter.
The document is this tree's, with TREE's figures under ``compared`` and, for every number both
give, this tree's over TREE's under ``ratio_to_compared``.

Exit status: 0 every target met, 1 some target missed, 2 usage error, 3 the benchmark could not
measure (the reason is one line on stderr).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from benchmarks._options import fleet_path
from benchmarks.report import BenchmarkFailed, document, load_average

NOT_BENCHMARKS = {"report"}
ROOT = Path(__file__).resolve().parents[1]
"""The checkout this package belongs to."""

MISSED, USAGE, FAILED = 1, 2, 3


def names() -> list[str]:
    """Every benchmark module beside this file."""
    here = str(Path(__file__).parent)
    return sorted(m.name for m in pkgutil.iter_modules([here])
                  if not m.name.startswith("_") and m.name not in NOT_BENCHMARKS)


def _table(doc: dict[str, Any]) -> str:
    lines = [f"{doc['name']}  (cpus {doc['machine']['cpus']}, load {doc['machine']['load_before']}"
             f" -> {doc['machine']['load_after']})"]
    compared = doc.get("compared", {}).get("results", {})
    if compared:
        lines.append(f"  {'':<44} {'this tree':>14} {'compared':>14}   ({doc['compared']['tree']})")
    for key, value in doc["results"].items():
        target = doc["targets"].get(key)
        mark = ""
        if target is not None:
            bound = f"<= {target['max']}" if "max" in target else f">= {target['min']}"
            mark = f"   target {bound}: {'met' if doc['met'][key] else 'MISSED'}"
        other = f" {compared.get(key, '-')!s:>14}" if compared else ""
        lines.append(f"  {key:<44} {value!s:>14}{other}{mark}")
    return "\n".join(lines)


def _in_tree(tree: Path, name: str, argv: list[str]) -> dict[str, Any]:
    """``python -m benchmarks NAME ARGV --json`` with ``tree`` as the working directory and its
    ``fleet`` first on ``PYTHONPATH``, so that interpreter imports that tree's ``benchmarks`` and
    ``fleet``; its document."""
    print(f"benchmarks {name}: measuring {tree}...", file=sys.stderr)
    env = os.environ | {"PYTHONPATH": os.pathsep.join(
        p for p in (str(fleet_path(tree.resolve())), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-m", "benchmarks", name, *argv, "--json"], cwd=tree, env=env,
                          stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode not in (0, MISSED):
        raise BenchmarkFailed(f"{tree}: `python -m benchmarks {name}` exited {done.returncode}")
    try:
        doc: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise BenchmarkFailed(f"{tree}: `python -m benchmarks {name}` printed no JSON document") from None
    return doc


def _commit(tree: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def _side_by_side(name: str, argv: list[str], tree: Path) -> dict[str, Any]:
    """TREE's document, then this tree's, merged into this tree's (see the module's docstring)."""
    if not (tree / "benchmarks" / f"{name}.py").is_file():
        raise BenchmarkFailed(f"{tree} has no benchmarks/{name}.py")
    before = load_average()
    other = _in_tree(tree, name, argv)
    this = _in_tree(ROOT, name, argv)
    this["machine"]["load_before"] = before
    ratios = {}
    for key, value in this["results"].items():
        was = other["results"].get(key)
        if (isinstance(value, int | float) and isinstance(was, int | float)
                and not isinstance(value, bool) and not isinstance(was, bool) and was):
            ratios[key] = round(value / was, 3)
    this["compared"] = {"tree": str(tree), "commit": _commit(tree), "machine": other["machine"],
                        "results": other["results"], "met": other["met"]}
    this["ratio_to_compared"] = ratios
    return this


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        print("\n".join(names()))
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m benchmarks NAME [OPTIONS] [--json] [--compare-tree TREE]\n"
              "benchmarks: " + ", ".join(names()), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else USAGE
    name, rest = argv[0], argv[1:]
    if name not in names():
        print(f"no benchmark named {name!r}; there are: {', '.join(names())}", file=sys.stderr)
        return USAGE
    as_json = "--json" in rest
    rest = [a for a in rest if a != "--json"]
    tree: Path | None = None
    if "--compare-tree" in rest:
        at = rest.index("--compare-tree")
        if at + 1 >= len(rest):
            print("--compare-tree needs a TREE", file=sys.stderr)
            return USAGE
        tree, rest = Path(rest[at + 1]), rest[:at] + rest[at + 2:]
    try:
        if tree is not None:
            doc = _side_by_side(name, rest, tree)
        else:
            module = importlib.import_module(f"benchmarks.{name}")
            before = load_average()
            measured = module.run(rest)
            doc = document(name, measured, before, load_average())
    except BenchmarkFailed as error:
        print(f"benchmarks {name}: {error}", file=sys.stderr)
        return FAILED
    except Exception:  # a bug, not a missed target: the traceback, and the exit status that says so
        traceback.print_exc()
        print(f"benchmarks {name}: failed (the traceback is above)", file=sys.stderr)
        return FAILED
    print(json.dumps(doc, indent=2) if as_json else _table(doc))
    return 0 if all(doc["met"].values()) else MISSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
