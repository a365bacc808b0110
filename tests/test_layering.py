"""The import rules of docs/design.md, checked in a fresh interpreter per package.

Everything installs under one namespace, ``fleet.``: the folders stay at the repository's top
level, but no generic name (``console``, ``fabric``, ...) is ever importable on its own, so fleet
installs beside the Fabric SSH library or the ``console`` package without breaking either.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("console", "collectors", "store", "fabric", "simulator", "themes")

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "fabric": ("textual", "rich", "fleet.console", "fleet.collectors", "fleet.store", "fleet.simulator",
               "asyncssh", "sqlite3", "sqlite_utils"),
    "store": ("textual", "rich", "fleet.console", "fleet.collectors", "fleet.simulator", "asyncssh"),
    "collectors": ("textual", "rich", "fleet.console", "fleet.simulator"),
    "simulator": ("textual", "fleet.console", "fleet.collectors", "fleet.store"),
}


def _modules(package: str) -> list[str]:
    """Every module of ``fleet.<package>``, from the files (importing to walk would pick up test folders)."""
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = ("fleet", *path.relative_to(ROOT).with_suffix("").parts)
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_one_way(package: str, tmp_path: Path) -> None:
    modules = _modules(package)
    forbidden = FORBIDDEN[package]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = {p for m in sys.modules for p in (m.split('.')[0], '.'.join(m.split('.')[:2]))}\n"
        f"print(','.join(sorted(loaded & set({forbidden!r}))))\n"
    )
    # Run from an empty folder, so only the installed ``fleet`` namespace can be imported.
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"{package} pulls in {done.stdout.strip()}"


def _imported_names(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


_CODE_IN_STRING = re.compile(rf"\b(?:from|import) ({'|'.join(PACKAGES)})[.\s]")


def _imports_in_strings(tree: ast.AST) -> list[str]:
    """Python code held in strings (``python -c "from fleet.console.cli import main"``)."""
    return [m[1] for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            for m in _CODE_IN_STRING.finditer(node.value)]


def _python_files() -> list[Path]:
    roots = [ROOT / p for p in (*PACKAGES, "tests", "benchmarks")]
    return [path for root in roots if root.is_dir() for path in root.rglob("*.py")
            if "fixtures" not in path.relative_to(ROOT).parts]


def test_every_module_imports_the_project_as_fleet() -> None:
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in _python_files()
        for tree in [ast.parse(path.read_text(encoding="utf-8"))]
        for name in _imported_names(tree) + _imports_in_strings(tree)
        if name.split(".")[0] in PACKAGES
    )
    assert offenders == []


def test_the_generic_names_are_not_importable(tmp_path: Path) -> None:
    script = (
        "import importlib.util\n"
        f"print(','.join(n for n in {PACKAGES!r} if importlib.util.find_spec(n) is not None))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_only_cli_and_tests_import_the_simulator() -> None:
    offenders = []
    for package in ("console", "collectors", "store", "fabric"):
        for path in (ROOT / package).rglob("*.py"):
            if package == "console" and path.parent.name == "cli":
                continue
            if any(name.startswith("fleet.simulator") for name in
                   _imported_names(ast.parse(path.read_text(encoding="utf-8")))):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
