"""The Events screen: findings opened and closed, and state changes, newest first; enter opens the part.

What an engineer needs first is what is wrong: by default the screen shows
warnings and criticals, and every finding's opening and closing (``a`` shows
everything), with the findings open now on top, criticals first, so a finding
raised an hour ago is not buried under what happened since. A host whose collection state flips slow/ok every few seconds is one
line with a count, not a screen of them. ``/`` filters as on the Fleet screen
(``!`` negates a word). The pane under the table gives the highlighted event's
evidence and next step; enter jumps to its node, switch or job.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Static

from fleet.console.findings_text import finding_detail
from fleet.console.messages import JobChosen, NodeChosen, SwitchChosen
from fleet.console.screens.base import FleetScreenBase
from fleet.console.timespec import format_moment
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.events import Event, Severity
from fleet.fabric.finding_life import open_findings

SEVERITY_VARIABLE = {Severity.INFO: "foreground", Severity.WARNING: "warning", Severity.CRITICAL: "error"}
EVENT_COLUMNS = (
    Col("time", "time", 20, 3), Col("severity", "severity", 8), Col("kind", "kind", 18, 1), Col("node", "node", 9),
    Col("where", "where", 14, 2), Col("message", "message", 20, flex=True),
)
FOLDED_KINDS = frozenset({"host_state"})
"""Kinds whose repeats on one host fold into one line: the collector's state changes of a flapping host."""


def _word_matches(event: Event, word: str) -> bool:
    key, sep, value = word.partition(":")
    if sep and key == "severity":
        return event.severity.value == value
    if sep and key == "node":
        return value in event.host.lower() or value in event.switch.lower()
    if sep and key == "kind":
        return value in event.kind.lower()
    return word in event.message.lower() or word in event.host.lower()


def event_matches(event: Event, text: str) -> bool:
    """Words ANDed: ``severity:critical``, ``node:gpu001``, ``kind:link_down``, or any text in the
    message; ``!`` before a word negates it (``!kind:host_state``), as on the Fleet screen."""
    for word in text.lower().split():
        negate = word.startswith("!")
        if _word_matches(event, word[1:] if negate else word) == negate:
            return False
    return True


def shown_by_default(event: Event) -> bool:
    """Warnings and criticals, and the opening and closing of every finding (a closing is INFO)."""
    return event.severity is not Severity.INFO or bool(event.data.get("finding"))


class EventRow(NamedTuple):
    """One line of the table: the newest event of its fold, and how many it stands for."""

    event: Event
    repeats: int
    """How many events the line stands for (1: itself alone)."""
    oldest_ts: float


def fold(events: tuple[Event, ...]) -> list[EventRow]:
    """Newest first as given; the repeats of a folded kind on one host join the line of its newest."""
    rows: list[EventRow] = []
    index: dict[tuple[str, str], int] = {}
    for event in events:
        key = (event.kind, event.host)
        if event.kind in FOLDED_KINDS and key in index:
            at = index[key]
            row = rows[at]
            rows[at] = row._replace(repeats=row.repeats + 1, oldest_ts=min(row.oldest_ts, event.ts))
            continue
        if event.kind in FOLDED_KINDS:
            index[key] = len(rows)
        rows.append(EventRow(event, 1, event.ts))
    return rows


class EventsScreen(FleetScreenBase):
    TITLE_TEXT = "Events"
    SCREEN_KEY = "app.events"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="events.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="events.clear_filter"),
        Binding("a", "toggle_all", "All events", id="events.all"),
    ]

    filter_text: reactive[str] = reactive("")
    """Words the events must match (see ``event_matches``)."""
    show_all: reactive[bool] = reactive(False)
    """False: warnings, criticals and finding transitions only (``shown_by_default``); True: every event."""

    def compose_body(self) -> ComposeResult:
        yield Input(placeholder="filter: severity:critical node:gpu001 kind:link_down !kind:host_state text",
                    id="filter")
        yield FitTable(EVENT_COLUMNS, id="events-table")
        yield Static(id="event-detail")

    def build(self) -> None:
        self.query_one("#filter", Input).display = False
        self._shown: tuple[EventRow, ...] = ()
        self.query_one("#events-table", DataTable).focus()

    def summary_note(self) -> Text:
        """While a filter is on, the summary bar starts with it."""
        if not self.filter_text.strip():
            return Text()
        note = Text("filter ", style=f"bold reverse {self.app.theme_variables.get('warning', '')}".strip())
        note.append(Text(self.filter_text.strip()))
        note.append(f" ({len(self._shown)} lines; esc clears)")
        return note

    def show_view(self, view: ConsoleView) -> None:
        events = tuple(e for e in view.snapshot.events
                       if (self.show_all or shown_by_default(e)) and event_matches(e, self.filter_text))
        folded = fold(events)
        if not self.show_all:
            rank = {id(e): (0 if e.severity is Severity.CRITICAL else 1)
                    for e in open_findings(view.snapshot.events).values()}
            folded.sort(key=lambda row: rank.get(id(row.event), 2))  # stable: newest first within each rank
        rows = tuple(folded)
        if rows == self._shown:
            return
        self._shown = rows
        table = self.query_one("#events-table", FitTable)
        v = self.app.theme_variables
        cells = []
        for e, repeats, oldest in rows:
            where = "/".join(p for p in (e.switch, e.device, e.port) if p)
            message = Text(e.message)
            if repeats > 1:
                message.append(f"  (x{repeats} since {format_moment(oldest)})")
            cells.append((Text(format_moment(e.ts)), Text(e.severity.value, style=v.get(SEVERITY_VARIABLE[e.severity], "")),
                          Text(e.kind), Text(e.host), Text(where), message))
        table.fill(cells, [str(index) for index in range(len(rows))])
        self._show_detail(table.cursor_row)

    def _show_detail(self, index: int) -> None:
        pane = self.query_one("#event-detail", Static)
        if not 0 <= index < len(self._shown):
            pane.update("")
            return
        event = self._shown[index].event
        detail = finding_detail(event)
        target = self._target(event)
        if target:
            detail.append(f"\nenter: open {target}")
        pane.update(detail)

    @staticmethod
    def _target(event: Event) -> str:
        if event.switch and event.host in ("", event.switch):
            return event.switch
        if event.host:
            return event.host
        straggler = str((event.data.get("evidence") or {}).get("straggler", ""))
        return straggler or (f"job {event.job}" if event.job else "")

    def _redraw(self) -> None:
        if self.fleet_app.view is not None and self.is_mounted:
            self.show_view(self.fleet_app.view)

    def watch_filter_text(self) -> None:
        self._redraw()
        self.show_summary()

    def watch_show_all(self) -> None:
        self._redraw()

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all

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

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        index = int(str(event.row_key.value))
        if index >= len(self._shown):
            return
        chosen = self._shown[index].event
        straggler = str((chosen.data.get("evidence") or {}).get("straggler", ""))
        if chosen.switch and chosen.host in ("", chosen.switch):
            self.post_message(SwitchChosen(chosen.switch))
        elif chosen.host:
            self.post_message(NodeChosen(chosen.host))
        elif straggler:
            self.post_message(NodeChosen(straggler))
        elif chosen.job:
            self.post_message(JobChosen(chosen.job))
