"""The Events screen: findings and state changes, newest first; enter jumps to the node."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import DataTable, Input

from fleet.console.messages import JobChosen, NodeChosen, SwitchChosen
from fleet.console.screens.base import FleetScreenBase
from fleet.console.timespec import format_moment
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.events import Event, Severity

SEVERITY_VARIABLE = {Severity.INFO: "foreground", Severity.WARNING: "warning", Severity.CRITICAL: "error"}
EVENT_COLUMNS = (
    Col("time", "time", 20, 3), Col("severity", "severity", 8), Col("kind", "kind", 18, 1), Col("node", "node", 9),
    Col("where", "where", 14, 2), Col("message", "message", 20, flex=True),
)


def event_matches(event: Event, text: str) -> bool:
    """Words ANDed: ``severity:critical``, ``node:gpu001``, ``kind:link_down``, or any text in
    the message."""
    for word in text.lower().split():
        key, sep, value = word.partition(":")
        if sep and key == "severity":
            ok = event.severity.value == value
        elif sep and key == "node":
            ok = value in event.host.lower()
        elif sep and key == "kind":
            ok = value in event.kind.lower()
        else:
            ok = word in event.message.lower() or word in event.host.lower()
        if not ok:
            return False
    return True


class EventsScreen(FleetScreenBase):
    TITLE_TEXT = "Events"
    SCREEN_KEY = "app.events"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="events.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="events.clear_filter"),
    ]

    filter_text: reactive[str] = reactive("")
    """Words the events must match (see ``event_matches``)."""

    def compose_body(self) -> ComposeResult:
        yield Input(placeholder="filter: severity:critical node:gpu001 kind:link_down text", id="filter")
        yield FitTable(EVENT_COLUMNS, id="events-table")

    def build(self) -> None:
        self.query_one("#filter", Input).display = False
        self._shown: tuple[Event, ...] = ()
        self.query_one("#events-table", DataTable).focus()

    def summary_note(self) -> Text:
        """While a filter is on, the summary bar starts with it."""
        if not self.filter_text.strip():
            return Text()
        note = Text("filter ", style=f"bold reverse {self.app.theme_variables.get('warning', '')}".strip())
        note.append(Text(self.filter_text.strip()))
        note.append(f" ({len(self._shown)} events; esc clears)")
        return note

    def show_view(self, view: ConsoleView) -> None:
        events = tuple(e for e in view.snapshot.events if event_matches(e, self.filter_text))
        if events == self._shown:
            return
        self._shown = events
        v = self.app.theme_variables
        self.query_one("#events-table", FitTable).fill(
            [(Text(format_moment(e.ts)), Text(e.severity.value, style=v.get(SEVERITY_VARIABLE[e.severity], "")),
              Text(e.kind), Text(e.host), Text("/".join(p for p in (e.switch, e.device, e.port) if p)),
              Text(e.message)) for e in events],
            [str(index) for index in range(len(events))])

    def watch_filter_text(self) -> None:
        if self.fleet_app.view is not None and self.is_mounted:
            self.show_view(self.fleet_app.view)
            self.show_summary()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.filter_text = ""
        self.query_one("#events-table", DataTable).focus()

    @on(Input.Changed, "#filter")
    def _typed(self, event: Input.Changed) -> None:
        self.filter_text = event.value

    @on(Input.Submitted, "#filter")
    def _done(self) -> None:
        self.query_one("#events-table", DataTable).focus()

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        index = int(str(event.row_key.value))
        if index >= len(self._shown):
            return
        chosen = self._shown[index]
        if chosen.switch and chosen.host in ("", chosen.switch):
            self.post_message(SwitchChosen(chosen.switch))
        elif chosen.host:
            self.post_message(NodeChosen(chosen.host))
        elif chosen.job:
            self.post_message(JobChosen(chosen.job))
