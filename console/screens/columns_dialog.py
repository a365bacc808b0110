"""`c` on Fleet: choose the table's columns. `space` toggles, `enter` keeps the choice (saved in
the config file by the Fleet screen), `escape` leaves the columns as they were."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, SelectionList
from textual.widgets.selection_list import Selection

from fleet.console.widgets.fleet_columns import COLUMNS


class ColumnsDialog(ModalScreen[tuple[str, ...] | None]):
    DEFAULT_CSS = """
    ColumnsDialog { align: center middle; }
    #columns-box { width: 90; max-width: 100%; height: auto; max-height: 100%;
                   border: round $primary; background: $surface; padding: 0 1; }
    #columns-list { height: auto; max-height: 20; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "keep", "Keep", id="columns.keep", priority=True),
        Binding("escape", "cancel", "Cancel", id="columns.cancel"),
    ]

    def __init__(self, chosen: tuple[str, ...]) -> None:
        super().__init__()
        self._chosen = set(chosen)

    def compose(self) -> ComposeResult:
        with Vertical(id="columns-box"):
            yield Label(Text("Fleet columns: space shows/hides, enter keeps (saved), escape cancels. "
                             "The node and its state always show; a terminal too narrow for "
                             "every chosen column leaves out the less telling ones first."))
            yield SelectionList[str](
                *(Selection(Text(f"{c.label:<10} {c.description}"), c.key, c.key in self._chosen or c.priority == 0,
                            disabled=c.priority == 0)
                  for c in COLUMNS),
                id="columns-list")

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_keep(self) -> None:
        selected = set(self.query_one(SelectionList).selected)
        self.dismiss(tuple(c.key for c in COLUMNS if c.key in selected or c.priority == 0))

    def action_cancel(self) -> None:
        self.dismiss(None)
