"""``scontrol show node``: real Slurm 22.05 captures, hostile input (the simulator's answer is in
tests/simulator/test_slurm_nodes.py, next to the drain it models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.collectors.parsers.problem_log import MAX_LISTED
from fleet.collectors.parsers.scontrol_node import parse_scontrol_node

SLURM = Path(__file__).parents[2] / "fixtures" / "slurm"
PREFIX = "debian12-slurm22.05.8-scontrol-show-node-"


def _one(name: str):  # type: ignore[no-untyped-def]
    parsed = parse_scontrol_node((SLURM / f"{PREFIX}{name}.txt").read_text())
    assert parsed.problems == () and parsed.unknown_lines == 0 and parsed.errors == ()
    assert len(parsed.nodes) == 1
    return parsed.nodes[0]


def test_an_allocated_node() -> None:
    node = _one("allocated")
    assert (node.name, node.state, node.base_state, node.flags) == ("node001", "ALLOCATED", "ALLOCATED", ())
    assert not node.drained and node.reason == "" and node.partitions == ("debug",)
    assert node.fields["OS"] == "Linux 6.18.44-fc-v1147 #1 SMP PREEMPT_DYNAMIC @0"  # a value with blanks
    assert node.fields["NodeAddr"] == "127.0.0.1" and node.fields["CPUTot"] == "2"


def test_a_drained_node_and_its_reason() -> None:
    node = _one("allocated-drain-reason")
    assert (node.state, node.base_state, node.flags, node.drained) == ("ALLOCATED+DRAIN", "ALLOCATED", ("DRAIN",), True)
    assert (node.reason, node.reason_by, node.reason_at) == ("link flapping on mlx5_1", "root", "2026-12-03T16:12:07")


def test_a_resumed_node() -> None:
    node = _one("resumed")
    assert not node.drained and node.reason == ""


def test_an_unknown_node_is_slurms_words() -> None:
    parsed = parse_scontrol_node("Node nope not found\n")
    assert parsed.nodes == () and parsed.errors == ("Node nope not found",)
    assert [(p.line, p.text) for p in parsed.problems] == [(1, "Node nope not found")] and parsed.unknown_lines == 1


def test_several_nodes_and_a_reason_that_looks_like_pairs() -> None:
    one = (SLURM / f"{PREFIX}allocated.txt").read_text()
    two = one.replace("node001", "node002").replace("State=ALLOCATED ", "State=DOWN+NOT_RESPONDING ").replace(
        "   ExtSensorsJoules", "   Reason=cable a=b c=d [slurm@2026-12-01T00:00:00]\n   ExtSensorsJoules")
    parsed = parse_scontrol_node(one + "\n" + two)
    assert [n.name for n in parsed.nodes] == ["node001", "node002"]
    down = parsed.nodes[1]
    assert (down.base_state, down.flags, down.reason, down.reason_by) == ("DOWN", ("NOT_RESPONDING",), "cable a=b c=d",
                                                                          "slurm")


@pytest.mark.parametrize("hostile", [
    "", "\n\n\n", "\x00\xff" * 500, "State=IDLE\n", "NodeName=\n", "NodeName=x State=\x1b[2J\n",
    "   CPUAlloc=2 stray words\n" * 10_000, (SLURM / f"{PREFIX}allocated.txt").read_text()[:137],
])
def test_hostile_input_never_raises(hostile: str) -> None:
    parsed = parse_scontrol_node(hostile)
    assert len(parsed.problems) <= MAX_LISTED + 1
    assert all(isinstance(n.state, str) for n in parsed.nodes)
    if hostile.startswith("State=IDLE"):
        assert parsed.nodes == () and parsed.unknown_lines == 1 and parsed.errors == ()  # a field of no record
