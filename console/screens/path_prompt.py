"""A file path asked for in a small modal (the criteria file, where to write a report)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PathPrompt(ModalScreen[Path | None]):
    DEFAULT_CSS = """
    PathPrompt { align: center middle; }
    #path-box { width: 90; height: auto; border: round $primary; background: $surface; padding: 1; }
    #path-error { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="path_prompt.cancel"),
    ]

    def __init__(self, question: str, default: Path | None = None, *, must_exist: bool = False) -> None:
        super().__init__()
        self._question = question
        self._default = default
        self._must_exist = must_exist

    def compose(self) -> ComposeResult:
        with Vertical(id="path-box"):
            yield Label(Text(self._question))
            yield Input(value=str(self._default) if self._default else "", placeholder="path", id="path-input")
            yield Label("", id="path-error")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        path = Path(text).expanduser()
        if self._must_exist and not path.is_file():
            self.query_one("#path-error", Label).update(Text(f"no such file: {path}"))
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
