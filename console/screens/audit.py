"""`A`: the append-only audit table, newest first: who changed which machine, how, and the verdict.

Read from the store on a fresh connection each time the screen opens or ``r``
is pressed; the highlighted row's commands, output and before/after numbers
are shown in full below the table. The line above the table is the hash
chain walked again (docs/audit.md): intact with its head, or BROKEN at the
first row that does not follow.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fleet.console.ecmp_ops import read_audit, verify_audit
from fleet.console.screens.base import FleetScreenBase
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.records import ActionRecord
from fleet.fabric.text import clean_text
from fleet.store.audit import ChainVerdict


def detail_text(row: ActionRecord) -> Text:
    """One audit row in full, every field as plain text; what a switch said (verdict, output) made
    inert, as stored by an older version it may not be (audit rows are read exactly as written)."""
    text = Text(f"{row.action} {row.step} on {row.target} by {row.actor}\n", style="bold")
    if row.verdict:
        text.append(f"verdict: {clean_text(row.verdict)}\n")
    for line in row.commands:
        text.append(f"  $ {line}\n")
    if row.output:
        text.append(f"output:\n{clean_text(row.output)}\n")
    for label, numbers in (("before", row.before), ("after", row.after)):
        if numbers:
            text.append(f"{label}: {json.dumps(numbers, sort_keys=True)[:600]}\n")
    return text


AUDIT_COLUMNS = (
    Col("time", "time (UTC)", 19, 3), Col("actor", "actor", 18, 4), Col("target", "target", 10),
    Col("action", "action", 13, 2), Col("step", "step", 9, 1), Col("what", "verdict / commands", 20, flex=True),
)
def chain_text(verdict: ChainVerdict | None, variables: dict[str, str]) -> Text:
    """The chain's state in one line: intact and its head, or BROKEN and the first break."""
    if verdict is None:
        return Text("no history yet")
    if verdict.intact:
        text = Text(" CHAIN INTACT ", style=f"bold reverse {variables.get('success', '')}")
        text.append(f" {verdict.head.words()}")
        return text
    text = Text(" CHAIN BROKEN ", style=f"bold reverse {variables.get('error', '')}")
    text.append(f" {verdict.problem} (fleet audit verify)")
    return text


class AuditScreen(FleetScreenBase):
    TITLE_TEXT = "Audit"
    DEFAULT_CSS = """
    #audit-chain { height: 1; padding: 0 1; }
    #audit-table { height: 2fr; }
    #audit-scroll { height: 1fr; min-height: 5; border-top: solid $primary; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", id="audit.reload"),
        Binding("escape", "back", "Back", id="audit.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[ActionRecord] = []
        self.loaded = asyncio.Event()
        """Set each time the rows on screen were read."""

    def compose_body(self) -> ComposeResult:
        yield Static(id="audit-chain")
        yield FitTable(AUDIT_COLUMNS, id="audit-table")
        with VerticalScroll(id="audit-scroll"):
            yield Static(id="audit-detail")

    def build(self) -> None:
        self.query_one("#audit-table", DataTable).focus()
        self.load()

    @work(group="audit", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.loaded.clear()
        self.rows = list(reversed(await read_audit(self.fleet_app.config.db_path)))
        self.query_one("#audit-chain", Static).update(chain_text(
            await verify_audit(self.fleet_app.config.db_path), self.app.theme_variables))
        self.query_one("#audit-table", FitTable).fill(
            [(Text(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row.ts))), Text(row.actor), Text(row.target),
              Text(row.action), Text(row.step), Text(clean_text(row.verdict, one_line=True) or "; ".join(row.commands)))
             for row in self.rows],
            [str(index) for index in range(len(self.rows))])
        if not self.rows:
            self.query_one("#audit-detail", Static).update("no change to a machine recorded yet")
        self.loaded.set()

    @on(DataTable.RowHighlighted, "#audit-table")
    def _row_moved(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is not None and key.isdigit() and int(key) < len(self.rows):
            self.query_one("#audit-detail", Static).update(detail_text(self.rows[int(key)]))

    def action_reload(self) -> None:
        self.load()

    def action_back(self) -> None:
        self.app.pop_screen()
