"""Slurm node changes on the simulated head: ``scontrol update NodeName=N State=DRAIN|RESUME [Reason=...]``.

As Slurm 22.05's ``scontrol`` answers them (tests/fixtures/slurm, the
``debian12-slurm22.05.8-scontrol-update-and-show-answers.txt`` capture): nothing on success; a drain
without a reason is refused with "You must specify a reason when DOWNING or DRAINING a node. Request
denied"; an unknown node is "slurm_update error: Invalid node name specified"; resuming a node that
is not drained is "slurm_update error: Invalid node state specified"; each exits 1. A drain keeps
the reason, the user who set it (the SSH login, as Slurm keeps the caller) and when, until the node
is resumed; ``scontrol show node`` (``fleet.simulator.tools.slurm``) shows it.
"""

from __future__ import annotations

from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.state import NodeDrainView

CALLER = "fleet"
"""The user the simulator's SSH logins are (the inventory ``fleet sim`` writes)."""


def is_scontrol_update(argv: list[str]) -> bool:
    return len(argv) > 1 and argv[0] == "scontrol" and argv[1].lower() == "update"


def _fields(words: list[str]) -> dict[str, str]:
    """``Key=Value`` words, keys as Slurm matches them (without regard to case)."""
    fields = {}
    for word in words:
        key, sep, value = word.partition("=")
        if sep:
            fields[key.lower()] = value
    return fields


async def run_scontrol_update(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``scontrol update NodeName=... State=DRAIN|RESUME [Reason=...]`` on the head."""
    model = machine.model
    fields = _fields(argv[2:])
    node = fields.get("nodename", "")
    state = fields.get("state", "").upper()
    if not node or state not in ("DRAIN", "RESUME"):
        io.stderr(f"invalid update request: {' '.join(argv[2:])}\n")
        return 1
    if node not in model.topology.nodes:
        io.stderr("slurm_update error: Invalid node name specified\n")
        return 1
    if state == "DRAIN":
        reason = fields.get("reason", "")
        if not reason:
            io.stderr("You must specify a reason when DOWNING or DRAINING a node. Request denied\n")
            return 1
        model.drains[node] = NodeDrainView(reason, CALLER, model.unix(model.now()))
        return 0
    if node not in model.drains:
        io.stderr("slurm_update error: Invalid node state specified\n")
        return 1
    del model.drains[node]
    return 0
