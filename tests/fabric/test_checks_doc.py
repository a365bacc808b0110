"""docs/checks.md explains every check with its public source, and the simulator's docs list every
misconfiguration fault kind: the docs cannot fall behind the code."""

from __future__ import annotations

from pathlib import Path

from fleet.fabric.config_checks import CHECKS
from fleet.fabric.rules.config import EXPLAINS
from fleet.simulator.scenario import MISCONFIG_KINDS

DOCS = Path(__file__).parents[2] / "docs"


def test_every_check_is_explained_with_its_source() -> None:
    text = (DOCS / "checks.md").read_text(encoding="utf-8")
    for spec in CHECKS:
        assert f"| `{spec.id}` |" in text, spec.id
        assert spec.url in text, (spec.id, spec.url)
    for check in EXPLAINS:
        assert f"`{check}`" in text.split("## In the diagnosis", 1)[1].split("## `fleet check fix`", 1)[0], check


def test_every_misconfiguration_fault_kind_is_documented() -> None:
    simulator = (DOCS / "simulator.md").read_text(encoding="utf-8")
    checks = (DOCS / "checks.md").read_text(encoding="utf-8")
    for kind in MISCONFIG_KINDS:
        assert f"| `{kind}` |" in simulator, kind
        assert f"`{kind}`" in checks, kind
    assert "`roce-misconfig`" in simulator and "`roce-misconfig`" in checks
