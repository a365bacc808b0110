"""What every fleet screen shares: header, summary bar, footer, and one way to get new data.

A screen draws ``app.view`` when it becomes current and whenever a new view
arrives while it is current; a hidden screen does no work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen

from fleet.console.actions import is_machine_changing, refusal
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.header import FleetHeader
from fleet.console.widgets.key_bar import KeyBar
from fleet.console.widgets.summary_bar import SummaryBar

if TYPE_CHECKING:
    from fleet.console.app import FleetApp


class FleetScreenBase(Screen[None]):
    TITLE_TEXT = "fleet"
    SCREEN_KEY = ""
    """Binding id of the key that shows this screen (``app.fleet`` ...), drawn as the current tab;
    "" for screens opened on top of one (a node, Baselines, a plan)."""

    @property
    def fleet_app(self) -> FleetApp:
        from fleet.console.app import FleetApp

        return cast(FleetApp, self.app)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only mode hides and refuses every action marked ``changes_machine``."""
        return not (self.fleet_app.config.read_only and is_machine_changing(self, action))

    def on_key(self, event: events.Key) -> None:
        """In read-only mode a refused action's key arrives here (its binding is off): say why."""
        if not self.fleet_app.config.read_only:
            return
        reason = refusal(self, event.key)
        if reason is not None:
            event.stop()
            event.prevent_default()
            self.notify(reason, title="read-only", severity="warning", markup=False)

    def compose(self) -> ComposeResult:
        yield FleetHeader(id="header")
        yield SummaryBar(id="summary")
        yield from self.compose_body()
        yield KeyBar(current=self.SCREEN_KEY)

    def compose_body(self) -> ComposeResult:
        yield from ()

    def build(self) -> None:
        """Set up tables and widgets after mount; runs before the first ``show_view``."""

    def on_mount(self) -> None:
        # Textual calls ``on_mount`` of every class in the MRO; subclasses use ``build``.
        self.build()
        self.watch(self.app, "view", self._view_arrived, init=False)
        self.watch(self.app, "highlighted_nodes", lambda _nodes: self._view_arrived(None), init=False)
        self.watch(self.app, "store_failing", lambda _reason: self._view_arrived(None), init=False)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._view_arrived(None))
        self._view_arrived(None)

    def on_screen_resume(self) -> None:
        self.query_one(KeyBar).fit_height(self.app.size.height)
        self._view_arrived(None)

    def on_resize(self) -> None:
        self.query_one(KeyBar).fit_height(self.app.size.height)

    def _view_arrived(self, _view: ConsoleView | None) -> None:
        view = self.fleet_app.view
        if not self.is_current or not self.is_mounted:
            return
        header = self.query_one(FleetHeader)
        cursor = self.fleet_app.cursor_ts
        moment = view.snapshot.moment_ts if view is not None else cursor
        header.show(self.TITLE_TEXT, moment, cursor is None, self.fleet_app.config.read_only,
                    self.fleet_app.store_failing, self.fleet_app.history_source)
        if view is None:
            return
        self.show_summary()
        self.show_view(view)

    def show_summary(self) -> None:
        """Redraw the summary bar (a new view, or a filter typed)."""
        view = self.fleet_app.view
        if view is not None and self.is_mounted:
            self.query_one(SummaryBar).show(view.summary, len(view.rows), self.fleet_app.writer_problem,
                                            self.summary_note())

    def summary_note(self) -> Text:
        """What this screen adds to the summary bar while it is on (a filter in effect)."""
        return Text()

    def show_view(self, view: ConsoleView) -> None:
        """Draw ``view``; subclasses redraw only what changed."""
