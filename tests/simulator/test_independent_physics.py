"""The simulator follows hardware, not the rules that judge it: it neither imports nor copies their limits.

If the simulator took its numbers from ``fleet.fabric.rules`` (or the XID table the rules use), a fault
would always look exactly as the rules expect, and the tests of the rules against the simulator would
prove nothing. This test reads every simulator source file and fails on an import of the rules, and on
any number literal equal to one of the rules' distinctive limits.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from fleet.fabric.rules.thresholds import Thresholds

SIMULATOR = Path(__file__).parents[2] / "simulator"
FORBIDDEN_MODULES = ("fleet.fabric.rules", "fleet.fabric.diagnosis", "fleet.fabric.xid", "fleet.fabric.health")
GENERIC = {0.5, 0.1, 0.01, 0.05, 0.8, 1.5}
"""Ratios too generic to say anything (halves, tenths, "one and a half times")."""


def _limits() -> dict[float, str]:
    """The rules' distinctive limits: every negative one (dBm levels), every fraction that is not generic
    (2.4e-4, 1e-4). Counts and round integers (256 QPs, a 4096-byte MTU, 10,000 pauses) are left out: they
    recur in the simulator for reasons of their own (QP windows, pids, MTUs)."""
    found: dict[float, str] = {}
    for spec in fields(Thresholds):
        value = getattr(Thresholds(), spec.name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
            if number < 0 or (number != int(number) and number not in GENERIC):
                found[number] = spec.name
    return found


def _number(node: ast.AST) -> float | None:
    """The value of a number literal, a negative one included (``-8.0`` is ``-(8.0)`` in the tree)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _sources() -> list[Path]:
    return sorted(SIMULATOR.rglob("*.py"))


def test_the_simulator_imports_nothing_of_the_rules() -> None:
    for path in _sources():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad = [n for n in names if n.startswith(FORBIDDEN_MODULES)]
            assert not bad, f"{path.name}:{node.lineno} imports {bad}: the simulator must not judge by the rules"


def test_no_simulator_number_is_one_of_the_rules_limits() -> None:
    limits = _limits()
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            number = _number(node)
            if number is not None and number in limits:
                raise AssertionError(f"{path.name}:{getattr(node, 'lineno', 0)}: {number} is the rules' "
                                     f"{limits[number]}; derive the simulator's physics from the hardware "
                                     "(specifications, captures), not from the rules")


def test_the_simulators_modules_publish_thresholds_that_differ_from_module_to_module() -> None:
    from fleet.simulator.optics_modules import MODULE_TYPES

    assert len({m.rx_power_dbm for m in MODULE_TYPES}) == len(MODULE_TYPES) > 1
    for module in MODULE_TYPES:
        high_alarm, low_alarm, high_warning, low_warning = module.rx_power_dbm
        assert low_alarm < low_warning < high_warning < high_alarm
        low, high = module.bias_range_ma
        assert module.bias_ma[3] < low and high < module.bias_ma[2]  # healthy units sit inside their own limits
