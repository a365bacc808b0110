"""`B`: the stored baselines; pick two and see what regressed or improved, and write the report.

``space`` marks the highlighted baseline as "before", the next ``space`` marks
"after" and the diff (``fleet.fabric.baseline.diff``: worst first, new and gone
parts, software and cabling changes) is shown below; ``w`` writes the diff's
HTML report and the Markdown beside it. Labels and part names come from
machines and the user: ``Text`` only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from fleet.console.report_write import default_report_path, write_report
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.path_prompt import PathPrompt
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.baseline import Baseline, BaselineDiff, Rank, diff
from fleet.fabric.report_model import diff_report, utc_words
from fleet.store.reader import StoreReader, audit_head_at


def stored_baselines(db_path: Path) -> list[Baseline]:
    """Every baseline the store holds that this version can read, oldest first."""
    if not db_path.exists():
        return []
    found = []
    with StoreReader(db_path) as reader:
        for _ts, _name, data in reader.baselines():
            try:
                found.append(Baseline.from_json(data))
            except (ValueError, KeyError, TypeError):
                continue  # another format version: `fleet baseline list` skips it too
    return found


def _number(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def summary_text(result: BaselineDiff, theme_variables: Mapping[str, str]) -> Text:
    """The counts, then new/gone parts, lost metrics, software and cabling changes, in words."""
    down = theme_variables.get("health-down", "")
    text = Text(f"{result.before.label} ({utc_words(result.before.ts)}) -> "
                f"{result.after.label} ({utc_words(result.after.ts)}): ", style="bold")
    text.append(f"{len(result.regressions)} regression(s)", style=down if result.regressions else "")
    text.append(f", {len(result.improvements)} improvement(s), {len(result.new_parts)} new, "
                f"{len(result.gone_parts)} gone\n")
    for label, items in (("gone", result.gone_parts), ("new", result.new_parts),
                         ("no longer measured", result.lost_metrics)):
        if items:
            text.append(f"{label}: {', '.join(items[:12])}{' ...' if len(items) > 12 else ''}\n",
                        style=down if label != "new" else "")
    for change in (*result.software, *result.cabling, *result.configuration):
        text.append(f"{change.rank.name.lower()}: {change.subject}: {change.before or '-'} -> "
                    f"{change.after or '-'}\n")
    text.rstrip()
    return text


BASELINE_COLUMNS = (
    Col("index", "#", 3), Col("pick", "pick", 6), Col("taken", "taken", 23, 2), Col("label", "label", 16, flex=True),
    Col("nodes", "nodes", 5, 3), Col("parts", "parts", 6, 4), Col("unreachable", "unreachable", 11, 5),
    Col("tool", "tool", 12, 6),
)
DIFF_COLUMNS = (
    Col("severity", "severity", 8), Col("change", "change", 11, 3), Col("part", "part", 20, flex=True),
    Col("metric", "metric", 22, 1), Col("before", "before", 10), Col("after", "after", 10),
    Col("delta", "delta", 16, 2),
)


class BaselinesScreen(FleetScreenBase):
    TITLE_TEXT = "Baselines"
    DEFAULT_CSS = """
    #baselines-table { height: auto; max-height: 8; }
    #baseline-picks { height: 1; padding: 0 1; background: $surface; }
    #diff-summary { height: auto; max-height: 8; padding: 0 1; }
    #diff-table { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "pick", "Pick before/after", id="baselines.pick"),
        Binding("w", "write_report", "Write report", id="baselines.report"),
        Binding("r", "reload", "Reload", id="baselines.reload"),
        Binding("escape", "back", "Back", id="baselines.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.baselines: list[Baseline] = []
        self.picks: list[int] = []
        """Indexes into ``baselines``: before, then after."""
        self.result: BaselineDiff | None = None
        self.loaded = asyncio.Event()
        self.report_written: tuple[Path, Path] | None = None

    def compose_body(self) -> ComposeResult:
        yield FitTable(BASELINE_COLUMNS, id="baselines-table")
        yield Static(id="baseline-picks")
        yield Static(id="diff-summary")
        yield FitTable(DIFF_COLUMNS, id="diff-table")

    def build(self) -> None:
        self.query_one("#baselines-table", DataTable).focus()
        self._show_picks()
        self.load()

    @work(group="baselines", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.loaded.clear()
        self.baselines = await asyncio.to_thread(stored_baselines, self.fleet_app.config.db_path)
        self.picks = [i for i in self.picks if i < len(self.baselines)]
        self._fill_list()
        self.loaded.set()

    def _fill_list(self) -> None:
        picks = {index: word for index, word in zip(self.picks, ("before", "after"), strict=False)}
        self.query_one("#baselines-table", FitTable).fill(
            [(Text(str(i + 1)), Text(picks.get(i, ""), style="bold"), Text(utc_words(b.ts)), Text(b.label),
              Text(str(len(b.shape.nodes))), Text(str(len(b.parts))), Text(str(len(b.unreachable))),
              Text(b.tool_version)) for i, b in enumerate(self.baselines)],
            [str(i) for i in range(len(self.baselines))])
        if not self.baselines:
            self.query_one("#diff-summary", Static).update("no baselines stored yet: run `fleet baseline take`")

    def _show_picks(self) -> None:
        words = {0: "space: pick the BEFORE baseline", 1: "space: pick the AFTER baseline"}
        line = words.get(len(self.picks), "w: write the report; space: start a new pair")
        self.query_one("#baseline-picks", Static).update(Text(line))

    def pick(self, before: int, after: int) -> None:
        """Diff ``baselines[before]`` against ``baselines[after]`` (indexes, oldest first)."""
        self.picks = [before, after]
        self.result = diff(self.baselines[before], self.baselines[after])
        self._fill_list()
        self._show_picks()
        self._show_diff(self.result)

    def action_pick(self) -> None:
        table = self.query_one("#baselines-table", DataTable)
        if not self.baselines:
            return
        row = table.cursor_row
        if len(self.picks) != 1:
            self.picks = [row]
            self.result = None
            self._fill_list()
            self._show_picks()
            return
        self.pick(self.picks[0], row)

    def _show_diff(self, result: BaselineDiff) -> None:
        v = self.app.theme_variables
        self.query_one("#diff-summary", Static).update(summary_text(result, v))
        styles = {Rank.CRITICAL: v.get("health-down", ""), Rank.WARNING: v.get("health-degraded", "")}
        rows = []
        for change in result.changes:
            pct = change.delta_pct
            delta = f"{change.delta:+,.3g}" + (f" ({pct:+.1f} %)" if pct is not None else "")
            style = styles.get(change.rank, "") if change.regression else v.get("health-ok", "")
            rows.append((Text(change.rank.name.lower(), style=style),
                         Text("regression" if change.regression else "improvement", style=style),
                         Text(change.part), Text(change.metric), Text(_number(change.before)),
                         Text(_number(change.after)), Text(delta)))
        self.query_one("#diff-table", FitTable).fill(rows)

    def action_write_report(self) -> None:
        result = self.result
        if result is None:
            self.notify("pick two baselines first (space, space)", severity="warning")
            return
        default = default_report_path(self.fleet_app.config.reports_folder, "baseline-diff")  # kept, not beside a
        # temporary history

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.write(result, path)

        self.app.push_screen(PathPrompt("Write the diff report (HTML, Markdown beside it) to:", default), chosen)

    @work(group="baselines-report", exit_on_error=False)
    async def write(self, result: BaselineDiff, path: Path) -> None:
        """Write the report off the event loop; the paths are told and kept in ``report_written``."""
        head = await asyncio.to_thread(audit_head_at, self.fleet_app.config.db_path)
        report = diff_report(result, time.time(), head.as_json() if head is not None else None)
        written = await asyncio.to_thread(write_report, report, path)
        self.report_written = written
        self.notify(f"report written: {written[0]} and {written[1].name}", title="baseline diff", markup=False)

    def action_reload(self) -> None:
        self.load()

    def action_back(self) -> None:
        self.app.pop_screen()
