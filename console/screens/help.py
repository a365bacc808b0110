"""`?`: every key of the screen underneath, as it is bound now (keymap included)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, under: Screen[Any]) -> None:
        super().__init__()
        self._under = under

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Keys of {getattr(self._under, 'TITLE_TEXT', 'this screen')}"
                          " (remap by id in config.toml [keymap])"), id="help-title")
        yield DataTable(id="help-table", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "does", "binding id", "where")
        seen: set[tuple[str, str]] = set()
        ordered = sorted(self._under.active_bindings.items(), key=lambda item: item[1].binding.id is None)
        for key, active in ordered:
            binding = active.binding
            if (key, binding.action) in seen:
                continue
            seen.add((key, binding.action))
            if active.node is self.app:
                where = "every screen"
            elif active.node is self._under:
                where = f"{getattr(self._under, 'TITLE_TEXT', 'this screen')} screen"
            else:
                where = type(active.node).__name__
            table.add_row(
                Text(self.app.get_key_display(binding)), Text(binding.description or binding.action),
                Text(binding.id or ""), Text(where),
            )
        table.focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
