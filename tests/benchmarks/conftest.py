"""Import the checkout's ``benchmarks`` package, which is not installed.

It is loaded by its path rather than by putting the repository root on ``sys.path``: the root also
holds ``console/``, ``fabric/`` and the other folders, which must only ever import as ``fleet.…``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]

if "benchmarks" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "benchmarks", _ROOT / "benchmarks" / "__init__.py",
        submodule_search_locations=[str(_ROOT / "benchmarks")])
    assert _spec is not None and _spec.loader is not None
    sys.modules["benchmarks"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["benchmarks"])
