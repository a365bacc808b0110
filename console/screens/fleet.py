"""The Fleet screen: every node in one table, worst first, filterable; the start screen."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import Input, Static

from fleet.console.config_file import save_fleet_columns
from fleet.console.filtering import FilterError, NodeFilter, parse_filter
from fleet.console.findings_text import next_step_line
from fleet.console.formatting import health_text
from fleet.console.messages import NodeChosen
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.columns_dialog import ColumnsDialog
from fleet.console.screens.probe_keys import ProbeKeys
from fleet.console.view_model import ConsoleView, NodeRow
from fleet.console.widgets.fleet_columns import (
    COLUMN_BY_KEY,
    DEFAULT_COLUMNS,
    SORTABLE,
    SORTS_AS,
    known_columns,
)
from fleet.console.widgets.fleet_table import FleetTable
from fleet.console.widgets.legend import HealthLegend
from fleet.console.widgets.probe_panel import ProbePanel


class FleetScreen(ProbeKeys, FleetScreenBase):
    TITLE_TEXT = "Fleet"
    SCREEN_KEY = "app.fleet"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="fleet.filter"),
        Binding("s", "sort_next", "Sort", id="fleet.sort_next"),
        Binding("space", "toggle_mark", "Mark", id="fleet.mark"),
        Binding("S", "sort_reverse", "Reverse sort", id="fleet.sort_reverse"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="fleet.clear_filter"),
        Binding("l", "linktest", "Link test", id="fleet.linktest"),
        Binding("t", "latency", "Latency", id="fleet.latency"),
        Binding("b", "bandwidth", "Bandwidth", id="fleet.bandwidth"),
        Binding("a", "allreduce", "All-reduce", id="fleet.allreduce"),
        Binding("x", "alltoall", "All-to-all", id="fleet.alltoall"),
        Binding("c", "choose_columns", "Columns", id="fleet.columns"),
    ]

    sort_column: reactive[str] = reactive("state")
    """Key of the column the rows are ordered by (``fleet_columns.COLUMNS``)."""
    sort_descending: reactive[bool] = reactive(True)
    """True: largest (worst, busiest) first."""
    node_filter: reactive[NodeFilter] = reactive(parse_filter(""))
    """The `/` filter in effect; empty shows every node."""
    marked: reactive[tuple[str, ...]] = reactive(())
    """Nodes marked with space for a probe (``t``/``b`` between two, ``l`` over them), in marking order."""
    columns: reactive[tuple[str, ...]] = reactive(DEFAULT_COLUMNS)
    """Keys of the columns the user chose (``c``; saved in the config file); the width decides
    which of them are drawn."""

    def compose_body(self) -> ComposeResult:
        yield Input(placeholder="filter: gpu[001-064] state:degraded job:1234 tenant:acme group:2 !word",
                    id="filter")
        yield FleetTable(id="fleet-table")
        yield Static(id="reasons")
        yield ProbePanel(id="probe-panel")
        yield HealthLegend(id="legend")

    def build(self) -> None:
        self.query_one("#filter", Input).display = False
        table = self.query_one(FleetTable)
        chosen = self.fleet_app.config.fleet_columns
        if chosen is not None:
            self.columns = known_columns(chosen)
        table.choose_columns(self.columns)
        table.set_sort(self.sort_column, self.sort_descending)
        table.focus()

    def visible_rows(self, view: ConsoleView) -> list[NodeRow]:
        """The rows the filter lets through, in the chosen order (name breaks ties)."""
        rows = [r for r in view.rows if self.node_filter.matches(r)] if self.node_filter.predicates else list(view.rows)
        rows.sort(key=lambda r: r.name)
        order = COLUMN_BY_KEY[self.sort_column].sort_key
        assert order is not None  # sort_column is always one of SORTABLE
        rows.sort(key=order, reverse=self.sort_descending)
        return rows

    def show_view(self, view: ConsoleView) -> None:
        table = self.query_one(FleetTable)
        table.show_rows(self.visible_rows(view), self.fleet_app.highlighted_nodes, frozenset(self.marked))
        self._show_reasons()

    def summary_note(self) -> Text:
        """While a filter is on, the summary bar starts with it and how many nodes it lets through."""
        text = self.query_one("#filter", Input).value.strip() if self.is_mounted else ""
        if not text or not self.node_filter.predicates:
            return Text()
        view = self.fleet_app.view
        shown = self.query_one(FleetTable).row_count
        total = len(view.rows) if view is not None else 0
        note = Text("filter ", style=f"bold reverse {self.app.theme_variables.get('warning', '')}".strip())
        note.append(Text(text))
        note.append(f" ({shown} of {total}; esc clears)")
        return note

    def _show_reasons(self) -> None:
        view = self.fleet_app.view
        name = self.query_one(FleetTable).current_node()
        reasons = self.query_one("#reasons", Static)
        if view is None or name is None:
            reasons.update("")
            return
        row = next((r for r in view.rows if r.name == name), None)
        if row is None:
            reasons.update("")
            return
        line = health_text(row.health, row.name, self.app.theme_variables)
        line.append(": ")
        line.append(Text("; ".join(row.reasons) or "no problem found"))
        if row.jobs:
            line.append(Text(f"  │ jobs {', '.join(row.jobs)} ({', '.join(row.tenants)})"))
        if self.marked:
            line.append("  │ marked ", style="bold")
            line.append(Text(" ".join(self.marked)))
        step = next_step_line(view.snapshot.events, row.name)
        if step is not None:
            line.append("\nnext: ", style="bold")
            line.append(step)
        reasons.update(line)

    def _redraw(self) -> None:
        if self.fleet_app.view is not None and self.is_mounted:
            self.show_view(self.fleet_app.view)

    def watch_sort_column(self) -> None:
        self._sorted()

    def watch_sort_descending(self) -> None:
        self._sorted()

    def _sorted(self) -> None:
        if self.is_mounted:
            self.query_one(FleetTable).set_sort(self.sort_column, self.sort_descending)
        self._redraw()

    def watch_node_filter(self) -> None:
        self._redraw()
        self.show_summary()

    def watch_marked(self) -> None:
        self._redraw()

    def watch_columns(self) -> None:
        if self.is_mounted:
            self.query_one(FleetTable).choose_columns(self.columns)

    def probe_nodes(self) -> tuple[str, ...]:
        """The marked nodes; else a job's chosen on the Jobs screen (``f``); else the one under the cursor."""
        if self.marked:
            return self.marked
        highlighted = self.fleet_app.highlighted_nodes
        if highlighted:
            return tuple(sorted(highlighted))
        name = self.query_one(FleetTable).current_node()
        return (name,) if name is not None else ()

    def action_toggle_mark(self) -> None:
        name = self.query_one(FleetTable).current_node()
        if name is None:
            return
        self.marked = tuple(n for n in self.marked if n != name) if name in self.marked else (*self.marked, name)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.node_filter = parse_filter("")
        self.query_one(FleetTable).focus()

    def action_sort_next(self) -> None:
        """Sort by the next column drawn (the header's arrow shows which)."""
        drawn = [c.key for c in self.query_one(FleetTable).columns_layout.columns if c.key in SORTABLE]
        keys = drawn if self.sort_column in drawn else [self.sort_column, *drawn]
        self.sort_column = keys[(keys.index(self.sort_column) + 1) % len(keys)]

    def action_choose_columns(self) -> None:
        """Pick the columns to show; the choice is saved in the config file."""

        def chosen(keys: tuple[str, ...] | None) -> None:
            if keys is None:
                return
            self.columns = keys
            path = self.fleet_app.config.config_path
            if path is None:
                return
            try:
                save_fleet_columns(path, keys)
            except (OSError, ValueError) as error:
                self.notify(f"columns not saved: {error}", severity="error", markup=False)
            else:
                self.notify(f"columns saved in {path}", timeout=4, markup=False)

        self.app.push_screen(ColumnsDialog(self.columns), chosen)

    def action_sort_reverse(self) -> None:
        self.sort_descending = not self.sort_descending

    @on(Input.Changed, "#filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        try:
            self.node_filter = parse_filter(event.value)
        except FilterError as error:
            event.input.border_subtitle = str(error)
        else:
            event.input.border_subtitle = ""

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one(FleetTable).focus()

    @on(FleetTable.HeaderSelected)
    def _header_clicked(self, event: FleetTable.HeaderSelected) -> None:
        key = SORTS_AS.get(event.column_key, event.column_key)
        if key == self.sort_column:
            self.sort_descending = not self.sort_descending
        else:
            self.sort_column = key

    @on(FleetTable.RowHighlighted)
    def _row_moved(self) -> None:
        self._show_reasons()

    @on(FleetTable.RowSelected)
    def _row_chosen(self, event: FleetTable.RowSelected) -> None:
        self.post_message(NodeChosen(event.node))
