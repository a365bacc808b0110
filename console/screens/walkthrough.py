"""`W`: the acceptance walkthrough, run in front of the customer on the high-contrast theme.

Opening it measures once (the criteria's suite through
``fleet.collectors.accept_run.run_acceptance``, progress shown as it goes), then
each ``space`` turns the next agreed check PASS or FAIL with its evidence:
the measured numbers (min / median / max) against the threshold, and every
failing part. ``a`` shows the rest at once, ``w`` writes the report (HTML and
Markdown) the customer keeps. The suite is stored as a baseline labelled
with the criteria's title, as ``fleet accept`` does, through the console's
one store writer. Everything from the
file or the machines is drawn as ``Text``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fleet.collectors.accept_run import AcceptanceRun, run_acceptance
from fleet.collectors.baseline_run import SuiteProgress
from fleet.collectors.inventory import Inventory
from fleet.console.messages import SuiteProgressed
from fleet.console.report_write import write_report
from fleet.console.screens.base import FleetScreenBase, fixed_columns
from fleet.console.screens.path_prompt import PathPrompt
from fleet.fabric.acceptance import CheckResult, Criteria, CriteriaError, parse_criteria
from fleet.fabric.report_model import acceptance_report
from fleet.store.reader import audit_head_at

WALKTHROUGH_THEME = "fleet-high-contrast"
"""Readable on a projector; the theme in use before is restored when the screen closes."""


def _num(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value:,.4g}"


def measured_words(result: CheckResult) -> str:
    """min / median / max of what was measured, in the check's unit."""
    m = result.measured
    if not m:
        return "-"
    unit = result.check.spec.unit
    if not {"min", "median", "max"} <= set(m):  # counts (cables matching of all compared)
        return ", ".join(f"{key} {_num(value)}" for key, value in m.items())
    if m.get("count", 0) <= 1:
        return f"{_num(m['max'])} {unit}".rstrip()
    return f"{_num(m['min'])} / {_num(m['median'])} / {_num(m['max'])} {unit}".rstrip()


def evidence_text(result: CheckResult, theme_variables: Mapping[str, str]) -> Text:
    """The whole evidence of one check: what it promises, the numbers, the worst part, every failure."""
    verdict_style = theme_variables.get("health-ok" if result.passed else "health-down", "")
    check = result.check
    text = Text(f"{'PASS' if result.passed else 'FAIL'}  ", style=f"bold {verdict_style}".strip())
    text.append(f"{check.id}: {check.description}\n", style="bold")
    text.append(f"threshold: {check.threshold_words()}   scope: {check.scope.words()}   "
                f"parts checked: {result.parts_checked}\n")
    text.append(f"measured (min / median / max): {measured_words(result)}\n")
    if result.worst is not None:
        worst = result.worst
        value = "not measured" if worst.measured is None else _num(worst.measured)
        text.append(f"closest to the threshold: {worst.part} = {value} {worst.note}\n")
    text.append(f"{result.summary}\n")
    for failure in result.failures[:20]:
        value = "not measured" if failure.measured is None else _num(failure.measured)
        text.append(f"  FAIL {failure.part}: {value} {failure.note}\n", style=verdict_style)
    if len(result.failures) > 20:
        text.append(f"  ... and {len(result.failures) - 20} more\n")
    return text


class WalkthroughScreen(FleetScreenBase):
    TITLE_TEXT = "Acceptance walkthrough"
    DEFAULT_CSS = """
    #walk-title { height: auto; padding: 0 1; }
    #walk-progress { height: 1; padding: 0 1; background: $surface; }
    #walk-checks { height: 1fr; }
    #walk-scroll { height: 12; border-top: solid $primary; padding: 0 1; }
    #walk-summary { height: auto; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "next_check", "Next check", id="walkthrough.next"),
        Binding("a", "all_checks", "All checks", id="walkthrough.all"),
        Binding("w", "write_report", "Write report", id="walkthrough.report"),
        Binding("escape", "back", "Back", id="walkthrough.back"),
    ]

    def __init__(self, criteria_path: Path, *, run: AcceptanceRun | None = None,
                 inventory: Inventory | None = None) -> None:
        """``run`` given: its results are walked through as they are (tests, screenshots); else the
        suite is measured when the screen opens, on ``inventory`` (default: the app's)."""
        super().__init__()
        self._inventory = inventory
        self.criteria_path = criteria_path
        self.criteria: Criteria | None = run.criteria if run is not None else None
        self.run: AcceptanceRun | None = run
        self.shown = 0
        """How many checks have been turned PASS/FAIL on screen, in the file's order."""
        self.measured = asyncio.Event()
        """Set when the suite is measured and every verdict is known (not yet all shown)."""
        self.report_written: tuple[Path, Path] | None = None
        self._theme_before = ""

    def compose_body(self) -> ComposeResult:
        yield Static(id="walk-title")
        yield Static(id="walk-progress")
        yield DataTable(id="walk-checks", cursor_type="row")
        with VerticalScroll(id="walk-scroll"):
            yield Static(id="walk-evidence")
        yield Static(id="walk-summary")

    def build(self) -> None:
        self._theme_before = self.app.theme
        self.app.theme = WALKTHROUGH_THEME
        fixed_columns(self.query_one("#walk-checks", DataTable), ("verdict", 8), ("check", 18),
                      ("threshold", 22), ("measured min / median / max", 34), ("evidence", 60))
        self.query_one("#walk-checks", DataTable).focus()
        if self.criteria is None:
            try:
                self.criteria = parse_criteria(self.criteria_path.read_text(encoding="utf-8"),
                                               source=str(self.criteria_path))
            except (OSError, UnicodeDecodeError, CriteriaError) as error:
                self.query_one("#walk-title", Static).update(Text(f"cannot use {self.criteria_path}: {error}"))
                return
        self._fill_checks()
        if self.run is not None:
            self._measured(self.run)
        elif self._inventory is None and self.fleet_app.inventory is None:
            self._progress(Text("No inventory: nothing to measure (start the console with --inventory)."))
        else:
            self.measure(self.criteria)

    def on_unmount(self) -> None:
        if self._theme_before:
            self.app.theme = self._theme_before

    def _fill_checks(self) -> None:
        assert self.criteria is not None
        criteria = self.criteria
        title = Text(f"{criteria.title}", style="bold")
        title.append(f"  for {criteria.customer}" if criteria.customer else "")
        title.append(f"\n{len(criteria.checks)} checks from {criteria.source}; the numbers are measured once, "
                     f"then each check is judged in turn (space).")
        self.query_one("#walk-title", Static).update(title)
        table = self.query_one("#walk-checks", DataTable)
        table.clear()
        for check in criteria.checks:
            table.add_row(Text("…"), Text(check.id), Text(check.threshold_words()), Text(""),
                          Text(check.description), key=check.id)

    def _progress(self, text: Text) -> None:
        self.query_one("#walk-progress", Static).update(text)

    # --- measuring
    @work(group="walkthrough", exclusive=True, exit_on_error=False)
    async def measure(self, criteria: Criteria) -> None:
        probes = self.fleet_app.probes  # the console's one store writer, and its SSH pool for its inventory
        inventory = self._inventory or self.fleet_app.inventory
        pool = probes.pool() if self._inventory is None else None
        db_path = self.fleet_app.config.db_path
        self._progress(Text("measuring: starting the suite ..."))
        writer = probes.writer()
        run = await run_acceptance(inventory, criteria, writer=writer, db_path=db_path,
                                   on_progress=self._progress_told, pool=pool)
        baseline = run.suite.baseline
        writer.put_baseline(baseline.label, baseline.ts, baseline.to_json())
        await asyncio.to_thread(writer.flush, 60.0)
        self.run = run
        self._measured(run)

    def _progress_told(self, progress: SuiteProgress) -> None:
        self.post_message(SuiteProgressed(progress.step, progress.done, progress.total, progress.detail))

    def on_suite_progressed(self, message: SuiteProgressed) -> None:
        width = 30
        filled = int(width * message.done / message.total) if message.total else 0
        self._progress(Text(f"measuring {message.step:<10} [{'#' * filled}{'.' * (width - filled)}] "
                            f"{message.done}/{message.total} {message.detail}"))

    def _measured(self, run: AcceptanceRun) -> None:
        baseline = run.suite.baseline
        self._progress(Text(f"measured {len(baseline.parts)} parts of {len(baseline.shape.nodes)} nodes "
                            f"({len(baseline.unreachable)} unreachable, {len(run.findings)} findings); "
                            f"space: next check, a: all"))
        self.measured.set()

    # --- the checks, one by one
    def action_next_check(self) -> None:
        if self.run is None or self.shown >= len(self.run.results):
            return
        self._show_check(self.shown)
        self.shown += 1
        if self.shown == len(self.run.results):
            self._show_summary(self.run)

    def action_all_checks(self) -> None:
        while self.run is not None and self.shown < len(self.run.results):
            self.action_next_check()

    def _show_check(self, index: int) -> None:
        assert self.run is not None
        result = self.run.results[index]
        v = self.app.theme_variables
        style = f"bold {v.get('health-ok' if result.passed else 'health-down', '')}".strip()
        table = self.query_one("#walk-checks", DataTable)
        row = result.check.id
        columns = list(table.columns)
        table.update_cell(row, columns[0], Text("PASS" if result.passed else "FAIL", style=style))
        table.update_cell(row, columns[3], Text(measured_words(result)))
        table.update_cell(row, columns[4], Text(result.summary, style="" if result.passed else style))
        table.move_cursor(row=index)
        self.query_one("#walk-evidence", Static).update(evidence_text(result, v))

    @on(DataTable.RowHighlighted, "#walk-checks")
    def _row_moved(self, event: DataTable.RowHighlighted) -> None:
        if self.run is None:
            return
        index = event.cursor_row
        if index < self.shown:
            self.query_one("#walk-evidence", Static).update(
                evidence_text(self.run.results[index], self.app.theme_variables))

    def _show_summary(self, run: AcceptanceRun) -> None:
        v = self.app.theme_variables
        failed = [r.check.id for r in run.results if not r.passed]
        if failed:
            text = Text(f"NOT ACCEPTED: {len(failed)} of {len(run.results)} checks failed: {', '.join(failed)}",
                        style=f"bold {v.get('health-down', '')}".strip())
        else:
            text = Text(f"ACCEPTED: all {len(run.results)} checks pass", style=f"bold {v.get('health-ok', '')}".strip())
        text.append("   w: write the report")
        self.query_one("#walk-summary", Static).update(text)

    # --- report
    def action_write_report(self) -> None:
        run = self.run
        if run is None:
            self.notify("nothing measured yet", severity="warning")
            return
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        default = self.fleet_app.config.db_path.parent / f"acceptance-{stamp}.html"

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.write(run, path)

        self.app.push_screen(PathPrompt("Write the acceptance report (HTML, Markdown beside it) to:", default),
                             chosen)

    @work(group="walkthrough-report", exit_on_error=False)
    async def write(self, run: AcceptanceRun, path: Path) -> None:
        head = await asyncio.to_thread(audit_head_at, self.fleet_app.config.db_path)
        report = acceptance_report(run.criteria, run.suite.baseline, run.results, run.findings, time.time(),
                                   head.as_json() if head is not None else None)
        written = await asyncio.to_thread(write_report, report, path)
        self.report_written = written
        self.notify(f"report written: {written[0]} and {written[1].name}", title="acceptance", markup=False)

    def action_back(self) -> None:
        self.app.pop_screen()
