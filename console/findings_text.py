"""Findings as the console shows them: the open ones of a node, and a finding's evidence and next step.

Shared by the Fleet reasons line, the Node screen and the Events detail pane, so
the three say the same thing. What a finding says comes from machines (host
names, reasons): it is built into ``rich.text.Text`` as plain text, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from fleet.fabric.events import Event, Severity, evidence_text
from fleet.fabric.finding_life import open_findings

_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


def open_on(events: Iterable[Event], host: str) -> list[Event]:
    """The findings open now on ``host`` (a node or a switch) or naming it as a job's straggler, worst first."""
    found = [e for e in open_findings(events).values()
             if host in (e.host, e.switch) or (e.data.get("evidence") or {}).get("straggler") == host]
    return sorted(found, key=lambda e: (_RANK[e.severity], e.kind, e.device))


def finding_detail(event: Event) -> Text:
    """A finding event as the detail pane shows it: what and where, evidence, next step, and its life."""
    data = event.data
    text = Text()
    text.append(f"{event.kind.replace('_', ' ')}", style="bold")
    where = " ".join(p for p in (event.host, event.device, event.switch, event.port) if p) or event.job
    text.append(f"  {where}")
    if data.get("cleared"):
        text.append("  (closed)")
    elif data.get("finding"):
        text.append("  (open)")
    evidence = evidence_text(data.get("evidence") or {})
    if evidence:
        text.append("\nevidence: ")
        text.append(evidence)
    step = str(data.get("next_step", ""))
    if step:
        text.append("\nnext: ", style="bold")
        text.append(step)
    if not data.get("finding"):
        text.append(f"\n{event.message}")
    return text


def next_step_line(events: Iterable[Event], host: str) -> Text | None:
    """The worst open finding on ``host`` and its next step, in one line (the Fleet reasons line)."""
    found = open_on(events, host)
    if not found:
        return None
    worst = found[0]
    line = Text(f"{worst.kind.replace('_', ' ')} {worst.device}".strip() + ": ")
    line.append(str(worst.data.get("next_step", "")))
    if len(found) > 1:
        line.append(f"  (+{len(found) - 1} more)")
    return line
