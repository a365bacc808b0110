"""A ``DataTable`` whose columns fit the width it has: the least telling give way first, and one
column (a message, the evidence) takes whatever width is left.

Every table of the console but the Fleet table (which draws itself, ``fleet_table.py``) is
one of these, so no screen needs sideways scrolling on a 120-column terminal and an 80-column
one still shows the columns that matter. The rows are kept with every column's cell, so a
resize redraws them without asking the screen again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from rich.text import Text
from textual.widgets import DataTable

CELL_PADDING = 1
"""``DataTable``'s default padding on each side of a cell."""


class Col(NamedTuple):
    """One column: its key, label, width in cells, and when it gives way (0: never; the highest
    numbers go first). ``flex``: takes the width left (at least ``width``)."""

    key: str
    label: str
    width: int
    priority: int = 0
    flex: bool = False


def fit_columns(columns: Sequence[Col], width: int) -> list[tuple[Col, int]]:
    """The columns drawn at ``width`` with the width each gets, in table order."""
    drawn = list(columns)
    used = sum(c.width + 2 * CELL_PADDING for c in drawn)
    for column in sorted(columns, key=lambda c: (-c.priority, -columns.index(c))):
        if used <= width or column.priority == 0:
            break
        drawn.remove(column)
        used -= column.width + 2 * CELL_PADDING
    spare = max(0, width - used)
    return [(c, c.width + spare if c.flex else c.width) for c in drawn]


class FitTable(DataTable[Any]):
    """Give it its columns once and its rows (every column's cell) whenever they change."""

    DEFAULT_CSS = """
    FitTable { scrollbar-size-vertical: 1; scrollbar-size-horizontal: 0; }
    """

    def __init__(self, columns: Sequence[Col], **kwargs: Any) -> None:
        kwargs.setdefault("cursor_type", "row")
        super().__init__(**kwargs)
        self.all_columns: tuple[Col, ...] = tuple(columns)
        self.drawn: tuple[tuple[Col, int], ...] = ()
        """The columns drawn now with their widths (tests read them)."""
        self._rows: tuple[tuple[Text, ...], ...] = ()
        self._keys: tuple[str | None, ...] = ()

    def on_mount(self) -> None:
        self._layout(force=True)

    def on_resize(self) -> None:
        self._layout()

    def _layout(self, force: bool = False) -> None:
        width = (self.scrollable_content_region.width or self.app.size.width) - 1
        drawn = tuple(fit_columns(self.all_columns, width))
        if drawn == self.drawn and not force:
            return
        self.drawn = drawn
        row = self.cursor_row
        self.clear(columns=True)
        for column, cells in drawn:
            self.add_column(column.label, width=cells, key=column.key)
        self._add(row)

    def fill(self, rows: Sequence[Sequence[Text]], keys: Sequence[str | None] | None = None) -> bool:
        """Show ``rows`` (one cell per column of ``all_columns``), keyed by ``keys``; the cursor
        stays on its row number. False (and nothing redrawn) when nothing changed."""
        new_rows = tuple(tuple(r) for r in rows)
        new_keys = tuple(keys) if keys is not None else (None,) * len(new_rows)
        if new_rows == self._rows and new_keys == self._keys:
            return False
        self._rows, self._keys = new_rows, new_keys
        if self.drawn:
            row = self.cursor_row
            self.clear()
            self._add(row)
        return True

    def _add(self, cursor_row: int) -> None:
        index = {c.key: i for i, c in enumerate(self.all_columns)}
        wanted = [index[c.key] for c, _w in self.drawn]
        for cells, key in zip(self._rows, self._keys, strict=True):
            self.add_row(*(cells[i] for i in wanted), key=key)
        if self._rows:
            self.move_cursor(row=min(cursor_row, len(self._rows) - 1))
