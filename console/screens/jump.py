"""`g`: ask for a moment to replay (ISO time, -15m, or unix seconds)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from fleet.console.timespec import TimeSpecError, format_moment, parse_moment


class JumpScreen(ModalScreen[float | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="jump.cancel"),
    ]

    def __init__(self, now_ts: float) -> None:
        super().__init__()
        self._now_ts = now_ts

    def compose(self) -> ComposeResult:
        with Vertical(id="jump-box"):
            yield Label(f"Replay which moment? now is {format_moment(self._now_ts)}")
            yield Input(placeholder="11:50, 11:50:30, -15m, 2026-11-29T03:00Z or unix seconds (UTC)", id="jump-input")
            yield Label("", id="jump-error")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            moment = parse_moment(event.value, self._now_ts)
        except TimeSpecError as error:
            self.query_one("#jump-error", Label).update(Text(str(error)))  # holds what was typed
            return
        self.dismiss(moment)

    def action_cancel(self) -> None:
        self.dismiss(None)
