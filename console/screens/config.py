"""`C`: the newest configuration check (``fleet check``), its checks grouped, and a drill-down to a host.

Read from the store (the newest ``config_check`` event up to the console's time, so a replay shows the
run that was current then) on a fresh connection when the screen opens and on ``r``. The upper table
is one row per check, grouped (the NICs, the fleet alike, GPUDirect, the switches, the links) with its
pass/warn/fail counts and the odd ones out; the lower one lists the highlighted check's failed and
warned parts with what was expected, what was found and the fix. ``enter`` on a part opens its node
or switch: every check of that host and the settings the run read there.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from fleet.console.screens.base import FleetScreenBase
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.config_checks import (
    CHECKS,
    CONFIG_CHECK_EVENT,
    SPECS,
    CheckResult,
    ConfigReport,
    Verdict,
    report_of,
)
from fleet.fabric.text import clean_text
from fleet.store.reader import StoreReader

GROUPS = {"node": "NICs", "fleet": "fleet alike", "gpudirect": "GPUDirect", "switch": "switches", "link": "links"}
"""Check group -> its heading, in the order the table shows them."""

ODD_SHOWN = 5

CHECK_COLUMNS = (
    Col("group", "group", 11, 3), Col("check", "check", 17), Col("pass", "pass", 5, 2), Col("warn", "warn", 5, 1),
    Col("fail", "fail", 5), Col("odd", "odd ones out", 20, flex=True),
)
"""The checks: at 80 columns every one is drawn (the odd ones out get what is left); narrower, the
group headings and the pass and warn counts give way before the failures."""
PART_COLUMNS = (
    Col("part", "part", 28), Col("verdict", "verdict", 7), Col("expected", "expected", 34, 1),
    Col("found", "found", 18, flex=True),
)
"""A check's failed and warned parts: the expectation gives way first (the detail below says it)."""
HOST_COLUMNS = (Col("check", "check", 17), *PART_COLUMNS)
"""One host's results: the check beside its part's verdict and what was found."""


async def read_newest_check(db_path: Path, until: float | None) -> tuple[ConfigReport | None, dict[str, Any]]:
    """The newest stored check run up to ``until`` and the configuration it read (None, {} when there is none)."""

    def read() -> tuple[ConfigReport | None, dict[str, Any]]:
        if not db_path.exists():
            return None, {}
        with StoreReader(db_path) as reader:
            events = reader.events(until=until, kind=CONFIG_CHECK_EVENT, limit=1)
        if not events:
            return None, {}
        configuration = events[0].data.get("configuration")
        return report_of(events[0]), configuration if isinstance(configuration, dict) else {}

    return await asyncio.to_thread(read)


def host_of(part: str) -> str:
    """``gpu003:mlx5_1`` -> ``gpu003``; a link ``gpu003:mlx5_1<->leaf02:swp3`` names its node."""
    return part.split(" ", 1)[0].partition(":")[0]


def _verdict(result: CheckResult, variables: dict[str, str]) -> Text:
    style = {Verdict.PASS: variables.get("success", ""), Verdict.WARN: variables.get("warning", ""),
             Verdict.FAIL: variables.get("error", "")}[result.verdict]
    return Text(result.verdict.value.upper(), style=f"bold {style}")


class ConfigHostScreen(FleetScreenBase):
    """One node's or switch's results of the run, and the settings read from its parts."""

    TITLE_TEXT = "Config"
    DEFAULT_CSS = """
    #host-title { height: 1; padding: 0 1; }
    #host-results { height: 1fr; }
    #host-scroll { height: 12; border-top: solid $primary; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", id="config_host.back")]

    def __init__(self, host: str, report: ConfigReport, configuration: dict[str, Any]) -> None:
        super().__init__()
        self.host = host
        self.results = [r for r in report.results if host_of(r.target) == host or host in r.culprits]
        self.settings = {part: values for part, values in configuration.items() if host_of(part) == host}

    def compose_body(self) -> ComposeResult:
        yield Static(id="host-title")
        yield FitTable(HOST_COLUMNS, id="host-results")
        with VerticalScroll(id="host-scroll"):
            yield Static(id="host-settings")

    def build(self) -> None:
        failed = sum(r.verdict is Verdict.FAIL for r in self.results)
        title = Text()
        title.append(f"{self.host}: {len(self.results)} results, {failed} failed", style="bold")
        self.query_one("#host-title", Static).update(title)
        table = self.query_one("#host-results", FitTable)
        variables = self.app.theme_variables
        order = {spec.id: i for i, spec in enumerate(CHECKS)}
        table.fill([(Text(SPECS[result.check].title), Text(result.target), _verdict(result, variables),
                     Text(result.expected), Text(clean_text(result.found, one_line=True)))
                    for result in sorted(self.results,
                                         key=lambda r: (r.verdict is Verdict.PASS, order[r.check], r.target))])
        text = Text()
        for part, values in sorted(self.settings.items()):
            words = ", ".join(f"{k}={clean_text(str(v), one_line=True)}" for k, v in values.items())
            text.append(f"{part}: ", style="bold")
            text.append(words + "\n")
        self.query_one("#host-settings", Static).update(text or "no settings stored for this host")
        table.focus()

    def action_back(self) -> None:
        self.app.pop_screen()


class ConfigScreen(FleetScreenBase):
    TITLE_TEXT = "Config"
    DEFAULT_CSS = """
    #config-title { height: 1; padding: 0 1; }
    #config-checks { height: 1fr; }
    #config-parts { height: 1fr; border-top: solid $primary; }
    #config-scroll { height: 6; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", id="config.reload"),
        Binding("tab", "switch_table", "Checks/parts", id="config.switch_table"),
        Binding("escape", "back", "Back", id="config.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.report: ConfigReport | None = None
        self.configuration: dict[str, Any] = {}
        self.check_ids: list[str] = []
        self.parts: list[CheckResult] = []
        self.check_text = Text()
        """The highlighted check's expectation and source (the detail's first line)."""
        self.loaded = asyncio.Event()
        """Set each time the run on screen was read."""

    def compose_body(self) -> ComposeResult:
        yield Static(id="config-title")
        yield FitTable(CHECK_COLUMNS, id="config-checks")
        yield FitTable(PART_COLUMNS, id="config-parts")
        with VerticalScroll(id="config-scroll"):
            yield Static(id="config-detail")

    def build(self) -> None:
        self.query_one("#config-checks", DataTable).focus()
        self.load()

    @work(group="config", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.loaded.clear()
        until = self.fleet_app.config.at_ts if self.fleet_app.config.at_ts is not None else None
        self.report, self.configuration = await read_newest_check(self.fleet_app.config.db_path, until)
        self._fill()
        self.loaded.set()

    def _fill(self) -> None:
        title = self.query_one("#config-title", Static)
        table = self.query_one("#config-checks", FitTable)
        self.check_ids = []
        report = self.report
        if report is None:
            title.update("no configuration check stored yet: run `fleet check`")
            table.fill([])
            self.parts = []
            self.query_one("#config-parts", FitTable).fill([])
            return
        summaries = {s.check: s for s in report.summaries()}
        failed = sum(1 for s in summaries.values() if s.failed)
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(report.ts))
        words = f"{failed} of {len(summaries)} checks fail" if failed else f"all {len(summaries)} checks pass"
        if report.unreachable:
            words += f"; not read: {', '.join(sorted(report.unreachable))}"
        line = Text()
        line.append(f"fleet check at {when}, profile {report.profile}: {words}", style="bold")
        title.update(line)
        variables = self.app.theme_variables
        rows = []
        for group, heading in GROUPS.items():
            first = True
            for spec in CHECKS:
                summary = summaries.get(spec.id)
                if spec.group != group or summary is None:
                    continue
                odd = ", ".join(summary.odd[:ODD_SHOWN]) + (f" +{len(summary.odd) - ODD_SHOWN}"
                                                             if len(summary.odd) > ODD_SHOWN else "")
                fail_style = f"bold {variables.get('error', '')}" if summary.failed else ""
                warn_style = variables.get("warning", "") if summary.warned else ""
                rows.append((Text(heading if first else "", style="bold"), Text(spec.title),
                             Text(str(summary.passed)), Text(str(summary.warned), style=warn_style),
                             Text(str(summary.failed), style=fail_style), Text(odd)))
                self.check_ids.append(spec.id)
                first = False
        table.fill(rows, self.check_ids)
        first_failing = next((i for i, c in enumerate(self.check_ids) if summaries[c].failed), 0)
        if self.check_ids:
            table.move_cursor(row=first_failing)
            self._show_check(self.check_ids[first_failing])

    def _show_check(self, check: str) -> None:
        report = self.report
        if report is None:
            return
        spec = SPECS[check]
        self.parts = [r for r in report.results if r.check == check and r.verdict is not Verdict.PASS]
        variables = self.app.theme_variables
        self.query_one("#config-parts", FitTable).fill(
            [(Text(result.target), _verdict(result, variables), Text(result.expected),
              Text(clean_text(result.found, one_line=True))) for result in self.parts],
            [str(index) for index in range(len(self.parts))])
        text = Text()
        text.append(f"{spec.title}: ", style="bold")
        text.append(f"{spec.expectation}. Source: {spec.source} ({spec.url})")
        if not self.parts:
            text.append("\nevery part passes")
        self.check_text = text
        self.query_one("#config-detail", Static).update(text)

    @on(DataTable.RowHighlighted, "#config-checks")
    def _check_moved(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is not None and key in SPECS:
            self._show_check(key)

    @on(DataTable.RowHighlighted, "#config-parts")
    def _part_moved(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is not None and key.isdigit() and int(key) < len(self.parts):
            result = self.parts[int(key)]
            text = self.check_text.copy()
            text.append(f"\n{result.target}: ", style="bold")
            text.append(f"expected {result.expected}, found {clean_text(result.found, one_line=True)}")
            if result.fix:
                text.append(f"\nfix: {clean_text(result.fix, one_line=True)}")
            text.append(f"\nenter: every check of {host_of(result.culprits[0] if result.culprits else result.target)}")
            self.query_one("#config-detail", Static).update(text)

    @on(DataTable.RowSelected, "#config-parts")
    def _part_chosen(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if self.report is not None and key is not None and key.isdigit() and int(key) < len(self.parts):
            result = self.parts[int(key)]
            self.open_host(host_of(result.culprits[0] if result.culprits else result.target))

    @on(DataTable.RowSelected, "#config-checks")
    def _check_chosen(self, event: DataTable.RowSelected) -> None:
        if self.parts:
            self.query_one("#config-parts", DataTable).focus()

    def open_host(self, host: str) -> None:
        if self.report is not None:
            self.app.push_screen(ConfigHostScreen(host, self.report, self.configuration))

    def action_switch_table(self) -> None:
        checks = self.query_one("#config-checks", DataTable)
        (self.query_one("#config-parts", DataTable) if checks.has_focus else checks).focus()

    def action_reload(self) -> None:
        self.load()

    def action_back(self) -> None:
        self.app.pop_screen()
