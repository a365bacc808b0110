"""`W`: the acceptance walkthrough, run in front of the customer on the high-contrast theme.

Opening it measures once (the criteria's suite through
``fleet.collectors.accept_run.run_acceptance``, progress shown as it goes), then
each ``space`` turns the next agreed check PASS or FAIL with its evidence:
what was checked (the claim generated from what the suite measured), the
measured numbers (min / median / max) against the threshold, and every
failing part. ``a`` shows the rest at once, ``w`` writes the report (HTML,
Markdown, and a PDF when Chromium is here) into the reports folder, whose path
the toast names. The suite is stored as a baseline labelled with the
criteria's title, and the report's data as an ``acceptance`` record, as
``fleet accept`` does, through the console's one store writer.

In read-only mode nothing is measured (the suite is traffic on the fleet):
the screen shows the newest acceptance run stored, checks and all, and ``w``
exports it (the same data, so the same SHA-256). The screen draws the
report's own data, so what it shows is what the report says. Everything from
the file or the machines is drawn as ``Text``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fleet.collectors.accept_run import (
    AcceptanceRun,
    acceptance_record,
    run_acceptance,
    stored_acceptance,
)
from fleet.collectors.baseline_run import SuiteProgress
from fleet.collectors.inventory import Inventory
from fleet.console.actions import READ_ONLY_RULE
from fleet.console.messages import SuiteProgressed
from fleet.console.report_write import WrittenReport, default_report_path, write_report_files
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.path_prompt import PathPrompt
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.acceptance import Criteria, CriteriaError, parse_criteria
from fleet.fabric.report_model import Report, acceptance_report
from fleet.store.reader import audit_head_at

WALKTHROUGH_THEME = "fleet-high-contrast"
"""Readable on a projector; the theme in use before is restored when the screen closes."""

CHECK_COLUMNS = (
    Col("verdict", "verdict", 7), Col("check", "check", 18), Col("threshold", "threshold", 24, 1),
    Col("measured", "measured min / median / max", 26, 2), Col("evidence", "evidence", 24, flex=True),
)
"""The agreed checks: the verdict, the check and its evidence stay at 80 columns (the evidence
names the worst part's number, or each failing part's against the threshold); the measured spread
gives way first, then the threshold. The pane below says all of it."""


def _num(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value:,.4g}"


def measured_words(check: Mapping[str, Any]) -> str:
    """min / median / max of what was measured, in the check's unit (a check of the report's data)."""
    m = check.get("measured") or {}
    if not m:
        return "-"
    unit = str(check.get("unit", ""))
    if not {"min", "median", "max"} <= set(m):  # counts (cables matching of all compared)
        return ", ".join(f"{key} {_num(float(value))}" for key, value in m.items())
    if m.get("count", 0) <= 1:
        return f"{_num(float(m['max']))} {unit}".rstrip()
    return f"{_num(float(m['min']))} / {_num(float(m['median']))} / {_num(float(m['max']))} {unit}".rstrip()


def evidence_text(check: Mapping[str, Any], theme_variables: Mapping[str, str]) -> Text:
    """The whole evidence of one check: what it checked, the numbers, the worst part, every failure."""
    passed = bool(check.get("passed"))
    verdict_style = theme_variables.get("health-ok" if passed else "health-down", "")
    text = Text(f"{'PASS' if passed else 'FAIL'}  ", style=f"bold {verdict_style}".strip())
    text.append(f"{check.get('id')}: {check.get('claim') or check.get('description', '')}\n", style="bold")
    if check.get("description"):
        text.append(f"agreed wording: {check['description']}\n")
    text.append(f"threshold: {check.get('threshold_words')}   scope: {check.get('scope')}   "
                f"parts checked: {check.get('parts_checked')}\n")
    text.append(f"measured (min / median / max): {measured_words(check)}\n")
    worst = check.get("worst")
    if worst:
        value = "not measured" if worst.get("measured") is None else _num(float(worst["measured"]))
        text.append(f"closest to the threshold: {worst.get('part')} = {value} {worst.get('note', '')}\n")
    text.append(f"{check.get('summary', '')}\n")
    failures = list(check.get("failures", []))
    for failure in failures[:20]:
        value = "not measured" if failure.get("measured") is None else _num(float(failure["measured"]))
        text.append(f"  FAIL {failure.get('part')}: {value} {failure.get('note', '')}\n", style=verdict_style)
    if len(failures) > 20:
        text.append(f"  ... and {len(failures) - 20} more\n")
    return text


class WalkthroughScreen(FleetScreenBase):
    TITLE_TEXT = "Acceptance walkthrough"
    DEFAULT_CSS = """
    #walk-title { height: auto; padding: 0 1; }
    #walk-progress { height: auto; max-height: 2; padding: 0 1; background: $surface; }
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

    def __init__(self, criteria_path: Path | None, *, run: AcceptanceRun | None = None,
                 inventory: Inventory | None = None) -> None:
        """``run`` given: its results are walked through as they are (tests, screenshots); else the
        suite is measured when the screen opens, on ``inventory`` (default: the app's); in read-only
        mode (or with no ``criteria_path``) the newest stored acceptance run is shown instead."""
        super().__init__()
        self._inventory = inventory
        self.criteria_path = criteria_path
        self.criteria: Criteria | None = run.criteria if run is not None else None
        self.run: AcceptanceRun | None = run
        self.report: Report | None = None
        """The report of what is shown: measured now, given, or stored. The screen draws its data."""
        self.stored = False
        """True when the report shown was read from the store (read-only mode), not measured here."""
        self.shown = 0
        """How many checks have been turned PASS/FAIL on screen, in the file's order."""
        self.measured = asyncio.Event()
        """Set when every verdict is known (measured, given or read back), not yet all shown."""
        self.report_written: WrittenReport | None = None
        self._theme_before = ""

    def compose_body(self) -> ComposeResult:
        yield Static(id="walk-title")
        yield Static(id="walk-progress")
        yield FitTable(CHECK_COLUMNS, id="walk-checks")
        with VerticalScroll(id="walk-scroll"):
            yield Static(id="walk-evidence")
        yield Static(id="walk-summary")

    def build(self) -> None:
        self._theme_before = self.app.theme
        self.app.theme = WALKTHROUGH_THEME
        self.query_one("#walk-checks", DataTable).focus()
        if self.run is not None:
            self._show_report(acceptance_report(self.run.criteria, self.run.suite.baseline, self.run.results,
                                                self.run.findings, time.time()))
            return
        if self.fleet_app.config.read_only or self.criteria_path is None:
            self._progress(Text(f"Read-only mode: nothing is measured ({READ_ONLY_RULE}); reading the newest "
                                "acceptance run stored ..."))
            self.load_stored()
            return
        try:
            self.criteria = parse_criteria(self.criteria_path.read_text(encoding="utf-8"),
                                           source=str(self.criteria_path))
        except (OSError, UnicodeDecodeError, CriteriaError) as error:
            self.query_one("#walk-title", Static).update(Text(f"cannot use {self.criteria_path}: {error}"))
            return
        self._fill_pending(self.criteria)
        if self._inventory is None and self.fleet_app.inventory is None:
            self._progress(Text("No inventory: nothing to measure (start the console with --inventory)."))
        else:
            self.measure(self.criteria)

    def on_unmount(self) -> None:
        if self._theme_before:
            self.app.theme = self._theme_before

    def _title(self, title: str, customer: str, words: str) -> None:
        text = Text(title, style="bold")
        text.append(f"  for {customer}" if customer else "")
        text.append(f"\n{words}")
        self.query_one("#walk-title", Static).update(text)

    def _fill_pending(self, criteria: Criteria) -> None:
        """The agreed checks before anything is measured: each one pending."""
        self._title(criteria.title, criteria.customer,
                    f"{len(criteria.checks)} checks from {criteria.source}; the numbers are measured once, "
                    "then each check is judged in turn (space).")
        self.query_one("#walk-checks", FitTable).fill(
            [(Text("…"), Text(check.id), Text(check.threshold_words()), Text(""), Text(check.description))
             for check in criteria.checks], [check.id for check in criteria.checks])

    def _progress(self, text: Text) -> None:
        self.query_one("#walk-progress", Static).update(text)

    # --- the report shown: measured here, given, or stored
    def _show_report(self, report: Report) -> None:
        data = report.data
        self.report = report
        self.shown = 0
        checks = list(data.get("checks", []))
        source = data.get("criteria_source", "")
        how = (f"the newest acceptance run stored, measured from {data.get('measured_from')}" if self.stored
               else f"measured from {data.get('measured_from')}")
        self._title(str(data.get("title", "")), str(data.get("customer", "")),
                    f"{len(checks)} checks from {source}; {how}; each check is judged in turn (space).")
        self._draw_checks()
        shape = data.get("shape", {})
        self._progress(Text(
            f"{'stored run' if self.stored else 'measured'}: {shape.get('nodes')} nodes, {shape.get('nics')} RDMA "
            f"NICs ({len(shape.get('unreachable', {}))} unreachable), {len(data.get('findings', []))} findings; "
            "space: next check, a: all, w: write the report"))
        self.measured.set()

    @work(group="walkthrough", exclusive=True, exit_on_error=False)
    async def load_stored(self) -> None:
        stored = await self.fleet_app.feed.read(stored_acceptance)
        if stored is None:
            self._progress(Text(f"Read-only mode: nothing is measured ({READ_ONLY_RULE}), and the store holds no "
                                "acceptance run to show (run `fleet accept` or the walkthrough without "
                                "--read-only first)."))
            return
        self.stored = True
        self._show_report(stored)

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
        head = await asyncio.to_thread(audit_head_at, db_path)  # the report names the audit it follows
        report = acceptance_report(criteria, baseline, run.results, run.findings, time.time(),
                                   head.as_json() if head is not None else None)
        writer.put_probe(acceptance_record(report, run.suite.run_id))
        await asyncio.to_thread(writer.flush, 60.0)
        self.run = run
        self._show_report(report)

    def _progress_told(self, progress: SuiteProgress) -> None:
        self.post_message(SuiteProgressed(progress.step, progress.done, progress.total, progress.detail))

    def on_suite_progressed(self, message: SuiteProgressed) -> None:
        width = 30
        filled = int(width * message.done / message.total) if message.total else 0
        self._progress(Text(f"measuring {message.step:<10} [{'#' * filled}{'.' * (width - filled)}] "
                            f"{message.done}/{message.total} {message.detail}"))

    # --- the checks, one by one
    def _checks(self) -> list[Mapping[str, Any]]:
        return list(self.report.data.get("checks", [])) if self.report is not None else []

    def action_next_check(self) -> None:
        checks = self._checks()
        if self.shown >= len(checks):
            return
        self.shown += 1
        self._draw_checks()
        self.query_one("#walk-checks", FitTable).move_cursor(row=self.shown - 1)
        self.query_one("#walk-evidence", Static).update(evidence_text(checks[self.shown - 1],
                                                                      self.app.theme_variables))
        if self.shown == len(checks):
            self._show_summary(checks)

    def action_all_checks(self) -> None:
        while self.report is not None and self.shown < len(self._checks()):
            self.action_next_check()

    def _draw_checks(self) -> None:
        """Every check of the report: the first ``shown`` judged (PASS/FAIL, the numbers, the evidence),
        the rest pending with their claim."""
        v = self.app.theme_variables
        rows = []
        for index, check in enumerate(self._checks()):
            threshold = Text(str(check["threshold_words"]))
            if index >= self.shown:
                rows.append((Text("…"), Text(str(check["id"])), threshold, Text(""),
                             Text(str(check.get("claim") or check.get("description", "")))))
                continue
            passed = bool(check["passed"])
            style = f"bold {v.get('health-ok' if passed else 'health-down', '')}".strip()
            rows.append((Text("PASS" if passed else "FAIL", style=style), Text(str(check["id"])), threshold,
                         Text(measured_words(check)), Text(str(check["summary"]), style="" if passed else style)))
        self.query_one("#walk-checks", FitTable).fill(rows, [str(check["id"]) for check in self._checks()])

    @on(DataTable.RowHighlighted, "#walk-checks")
    def _row_moved(self, event: DataTable.RowHighlighted) -> None:
        index = event.cursor_row
        if index < self.shown:
            self.query_one("#walk-evidence", Static).update(evidence_text(self._checks()[index],
                                                                          self.app.theme_variables))

    def _show_summary(self, checks: list[Mapping[str, Any]]) -> None:
        v = self.app.theme_variables
        failed = [str(c["id"]) for c in checks if not c["passed"]]
        if failed:
            text = Text(f"NOT ACCEPTED: {len(failed)} of {len(checks)} checks failed: {', '.join(failed)}",
                        style=f"bold {v.get('health-down', '')}".strip())
        else:
            text = Text(f"ACCEPTED: all {len(checks)} checks pass", style=f"bold {v.get('health-ok', '')}".strip())
        text.append("   w: write the report")
        self.query_one("#walk-summary", Static).update(text)

    # --- report
    def action_write_report(self) -> None:
        report = self.report
        if report is None:
            self.notify("nothing measured yet", severity="warning")
            return
        default = default_report_path(self.fleet_app.config.reports_folder, "acceptance")

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.write(report, path)

        self.app.push_screen(PathPrompt("Write the acceptance report (HTML, with Markdown and PDF beside it) to:",
                                        default), chosen)

    @work(group="walkthrough-report", exit_on_error=False)
    async def write(self, report: Report, path: Path) -> None:
        written = await asyncio.to_thread(write_report_files, report, path)
        self.report_written = written
        self.notify(written.words(), title="acceptance", timeout=15, markup=False)

    def action_back(self) -> None:
        self.app.pop_screen()
