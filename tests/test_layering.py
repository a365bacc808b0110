"""The import rules of DESIGN.md section 2, checked in a fresh interpreter per package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "fabric": ("textual", "rich", "console", "collectors", "store", "simulator", "asyncssh", "sqlite3", "sqlite_utils"),
    "store": ("textual", "rich", "console", "collectors", "simulator", "asyncssh"),
    "collectors": ("textual", "rich", "console", "simulator"),
    "simulator": ("textual", "console", "collectors", "store"),
}


def _modules(package: str) -> list[str]:
    """Every module of ``package``, from the files (importing to walk would pick up test folders)."""
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_one_way(package: str) -> None:
    modules = _modules(package)
    forbidden = FORBIDDEN[package]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = sorted({{m.split('.')[0] for m in sys.modules}} & set({forbidden!r}))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"{package} pulls in {done.stdout.strip()}"


def test_only_cli_and_tests_import_the_simulator() -> None:
    offenders = []
    for package in ("console", "collectors", "store", "fabric"):
        for path in (ROOT / package).rglob("*.py"):
            if package == "console" and path.parent.name == "cli":
                continue
            text = path.read_text(encoding="utf-8")
            if "import simulator" in text or "from simulator" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
