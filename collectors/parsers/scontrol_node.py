"""Parser for ``scontrol show node [NAME]``: each node's state, its flags (``DRAIN``) and the reason.

Layout (Slurm 22.05, ``scontrol/info_node.c``, as captured in tests/fixtures/slurm): a record
starts with a ``NodeName=`` line; the next lines are indented ``Key=Value`` pairs separated by
blanks, except that a value may hold blanks (``OS=Linux 6.1.0 #1 SMP ...``: it runs to the next
``Key=``) and ``Reason=`` always ends its line (``Reason=link flapping on mlx5_1
[root@2026-12-03T16:10:44]``: the text, who set it and when). ``State=`` is the base state with
its flags joined by ``+`` (``IDLE``, ``ALLOCATED+DRAIN``, ``DOWN+NOT_RESPONDING``). A blank line ends
a record. Lines that are not part of a record are Slurm's words about the request (``Node gpu9
not found``): kept in ``errors`` for the message, and counted and listed as lines this parser did
not read, as every parser lists them (``docs/parsers.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog

_KEY = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=")
"""Where a key starts: one quantifier, linear over any line."""


@dataclass(frozen=True, slots=True)
class ScontrolNode:
    name: str
    state: str
    """As printed: ``ALLOCATED+DRAIN``."""
    base_state: str
    """``ALLOCATED``."""
    flags: tuple[str, ...]
    """``("DRAIN",)``."""
    reason: str
    """Why it is drained or down, without who and when; "" without a reason."""
    reason_by: str
    reason_at: str
    """Slurm's local time as printed (``2026-12-03T16:10:44``)."""
    partitions: tuple[str, ...]
    fields: dict[str, str]
    """Every ``Key=Value`` of the record as printed."""

    @property
    def drained(self) -> bool:
        """Drained or draining: no new job starts on it (``DRAIN`` among its flags)."""
        return "DRAIN" in self.flags


@dataclass(frozen=True, slots=True)
class ScontrolNodes:
    nodes: tuple[ScontrolNode, ...]
    errors: tuple[str, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def node(self, name: str) -> ScontrolNode | None:
        return next((n for n in self.nodes if n.name == name), None)


def _pairs(line: str) -> list[tuple[str, str]]:
    """``Key=Value`` pairs of one line, values running to the next key; ``Reason=`` to the end."""
    starts = list(_KEY.finditer(line))
    pairs = []
    for index, match in enumerate(starts):
        key = match.group(1)
        end = len(line) if key == "Reason" or index + 1 == len(starts) else starts[index + 1].start()
        pairs.append((key, line[match.end():end].strip()))
        if key == "Reason":
            break
    return pairs


def _node(fields: dict[str, str]) -> ScontrolNode:
    state = fields.get("State", "")
    base, *flags = state.split("+") if state else [""]
    reason, by, at = fields.get("Reason", ""), "", ""
    opened = reason.rfind("[")
    if reason.endswith("]") and opened >= 0 and "@" in reason[opened:]:  # "text [user@time]"
        by, _, at = reason[opened + 1:-1].partition("@")
        reason = reason[:opened].rstrip()
    partitions = tuple(p for p in fields.get("Partitions", "").split(",") if p)
    return ScontrolNode(fields.get("NodeName", ""), state, base, tuple(flags), reason, by, at, partitions, fields)


@parser
def parse_scontrol_node(text: str) -> ScontrolNodes:
    """Parse ``scontrol show node`` for one node or all; never raises."""
    log = ProblemLog()
    records: list[dict[str, str]] = []
    errors: list[str] = []
    open_record = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            open_record = False
            continue
        pairs = _pairs(stripped)
        if pairs and pairs[0][0] == "NodeName" and stripped.startswith("NodeName="):
            records.append(dict(pairs))
            open_record = True
        elif open_record and pairs and stripped.startswith(pairs[0][0] + "="):
            records[-1].update(pairs)
        elif not open_record and not pairs:
            errors.append(stripped[:200])
            log.unknown(number, line, "not a node record: Slurm's words about the request")
        else:
            log.unknown(number, line)
    return ScontrolNodes(tuple(_node(fields) for fields in records), tuple(errors), log.freeze(), log.unknown_lines)
