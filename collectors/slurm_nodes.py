"""Drain and resume a node in Slurm: the exact ``scontrol`` command, run on the Slurm head, audited.

Draining a node tells Slurm to start no new job on it (those running finish): what an engineer
does to a node whose link flaps or whose GPU fell off the bus, before repairing it. Resuming it
returns it to service. Both are ``scontrol update NodeName=N State=DRAIN Reason=...`` /
``State=RESUME`` on the head (https://slurm.schedmd.com/scontrol.html, "update"); Slurm refuses a
drain without a reason. The command is built from the allow-list with every argument quoted
(``fleet.collectors.commands``), so a reason is text, never shell.

Each change reads the node before and after (``scontrol show node``), and writes one audit row
through the guarded change's ``Audit`` (``fleet.collectors.guarded_change``, the store's
hash-chained ``actions`` table, as ECMP apply and ``fleet check fix`` write theirs): who, which
node, the exact command, Slurm's answer, the state before and after, and the verdict. A change that
Slurm refuses, or that cannot reach the head, is audited too. There is nothing to roll back to
automatically: the reading before is in the audit, and the opposite change is one key away. Read-only
mode and the confirmation are the callers' (the CLI, the console).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleet.collectors.commands import Command, command
from fleet.collectors.guarded_change import Audit
from fleet.collectors.isolation import Unparsable, read_output
from fleet.collectors.parsers.scontrol_node import ScontrolNode, parse_scontrol_node
from fleet.collectors.ssh_names import hostname_problem
from fleet.collectors.sshpool import RunResult, SshPool, failure_reason
from fleet.fabric.records import ActionRecord
from fleet.fabric.text import clean_text

REASON_CHARS = 200
"""The longest reason fleet sends: one line an engineer reads in ``sinfo -R``."""
TIMEOUT_S = 30.0
"""An ``scontrol`` on a busy controller answers within seconds; this much is a controller in trouble."""


class NodeChangeError(ValueError):
    """A drain or resume that cannot be asked for (a node name or a reason Slurm should never see)."""


@dataclass(frozen=True, slots=True)
class NodeChange:
    """One change of a node's Slurm state: ``action`` ``drain`` or ``resume``, and its exact command."""

    action: str
    node: str
    reason: str
    command: Command

    @property
    def audit_action(self) -> str:
        return f"slurm.{self.action}"

    @property
    def done_word(self) -> str:
        return {"drain": "drained", "resume": "resumed"}[self.action]


def drain(node: str, reason: str) -> NodeChange:
    """``scontrol update NodeName=<node> State=DRAIN Reason=<reason>``; NodeChangeError for a bad name
    or reason (empty, more than one line or ``REASON_CHARS``, or text that cannot be shown)."""
    _check_node(node)
    reason = reason.strip()
    if not reason:
        raise NodeChangeError("a drain needs a reason (Slurm refuses one without): say why, e.g. "
                              "'link flapping on mlx5_1'")
    if clean_text(reason, one_line=True) != reason:
        raise NodeChangeError("the reason must be one line of printable text")
    if len(reason) > REASON_CHARS:
        raise NodeChangeError(f"the reason is {len(reason)} characters; at most {REASON_CHARS}")
    return NodeChange("drain", node, reason,
                      command("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"))


def resume(node: str) -> NodeChange:
    """``scontrol update NodeName=<node> State=RESUME``."""
    _check_node(node)
    return NodeChange("resume", node, "", command("scontrol", "update", f"NodeName={node}", "State=RESUME"))


def _check_node(node: str) -> None:
    problem = hostname_problem(node) if node else "empty"
    if problem is not None:
        raise NodeChangeError(f"{node!r} is not a node name: {problem}")


@dataclass(frozen=True, slots=True)
class NodeChangeOutcome:
    """What came of a change: ``done`` when Slurm took it and the node shows it."""

    change: NodeChange
    done: bool
    verdict: str
    """One line: ``gpu017: IDLE -> IDLE+DRAIN (link flapping on mlx5_1)``, or why not."""
    before: dict[str, Any]
    after: dict[str, Any]
    output: str

    def as_json(self) -> dict[str, Any]:
        return {"node": self.change.node, "action": self.change.action, "command": self.change.command.text,
                "done": self.done, "verdict": self.verdict, "before": self.before, "after": self.after}


async def read_node(pool: SshPool, head: str, node: str) -> tuple[ScontrolNode | None, str]:
    """The node as ``scontrol show node`` on the head shows it, or None and why not."""
    result = await pool.run(head, command("scontrol", "show", "node", node), timeout_s=TIMEOUT_S)
    if not result.ok:
        return None, _why(result)
    try:
        parsed = read_output("scontrol show node", parse_scontrol_node, result.stdout)
    except Unparsable as error:
        return None, error.reason
    found = parsed.node(node)
    return (found, "") if found is not None else (None, "; ".join(parsed.errors) or f"Slurm has no node {node}")


def _state(node: ScontrolNode | None, why: str) -> dict[str, Any]:
    if node is None:
        return {"unknown": why}
    return {"state": node.state, "reason": node.reason}


def _why(result: RunResult) -> str:
    if result.exit_status not in (None, 0):
        return failure_reason(result.exit_status, "", result.stderr or result.stdout)
    return f"{result.state.value}: {result.reason}"


async def change_node(pool: SshPool, head: str, change: NodeChange, *, actor: str,
                      put_action: Callable[[ActionRecord], Any]) -> NodeChangeOutcome:
    """Run ``change`` on the Slurm head ``head`` (an inventory host of ``pool``) and audit it."""
    before_node, before_why = await read_node(pool, head, change.node)
    before = _state(before_node, before_why)
    result = await pool.run(head, change.command, timeout_s=TIMEOUT_S)
    output = clean_text((result.stdout + result.stderr).strip())
    if not result.ok:
        after, done = before, False
        verdict = f"{change.node}: not {change.done_word}: {_why(result)}"
    else:
        after_node, after_why = await read_node(pool, head, change.node)
        after = _state(after_node, after_why)
        wanted = (after_node is not None and after_node.drained) if change.action == "drain" else \
            (after_node is not None and not after_node.drained)
        done = wanted
        was = before_node.state if before_node is not None else "?"
        now = after_node.state if after_node is not None else f"? ({after_why})"
        verdict = f"{change.node}: {was} -> {now}" + (f" ({change.reason})" if change.reason else "")
        if not done:
            verdict += f": Slurm took the command but the node is not {change.done_word}"
    Audit(put_action, actor, change.node, None, change.audit_action).row(
        "apply", commands=(change.command.text,), output=output, before=before, after=after, verdict=verdict)
    return NodeChangeOutcome(change, done, verdict, before, after, output)


__all__ = ["REASON_CHARS", "NodeChange", "NodeChangeError", "NodeChangeOutcome", "change_node", "drain", "read_node",
           "resume"]
