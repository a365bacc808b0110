"""``python -m benchmarks NAME [OPTIONS] [--json]``: run one benchmark, print its figures.

``python -m benchmarks --list`` names them. Without ``--json`` the figures are printed as a table
for a person; with it, one JSON document (:mod:`benchmarks.report`) is the only output on stdout.
Exit status: 0 every target met, 1 some target missed, 2 usage error.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.report import document, load_average

NOT_BENCHMARKS = {"report"}


def names() -> list[str]:
    """Every benchmark module beside this file."""
    here = str(Path(__file__).parent)
    return sorted(m.name for m in pkgutil.iter_modules([here])
                  if not m.name.startswith("_") and m.name not in NOT_BENCHMARKS)


def _table(doc: dict[str, Any]) -> str:
    lines = [f"{doc['name']}  (cpus {doc['machine']['cpus']}, load {doc['machine']['load_before']}"
             f" -> {doc['machine']['load_after']})"]
    for key, value in doc["results"].items():
        target = doc["targets"].get(key)
        mark = ""
        if target is not None:
            bound = f"<= {target['max']}" if "max" in target else f">= {target['min']}"
            mark = f"   target {bound}: {'met' if doc['met'][key] else 'MISSED'}"
        lines.append(f"  {key:<40} {value}{mark}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: python -m benchmarks NAME [OPTIONS] [--json]\nbenchmarks: " + ", ".join(names()))
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in names():
        print(f"no benchmark named {name!r}; there are: {', '.join(names())}", file=sys.stderr)
        return 2
    as_json = "--json" in rest
    rest = [a for a in rest if a != "--json"]
    module = importlib.import_module(f"benchmarks.{name}")
    before = load_average()
    measured = module.run(rest)
    doc = document(name, measured, before, load_average())
    print(json.dumps(doc, indent=2) if as_json else _table(doc))
    return 0 if all(doc["met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
