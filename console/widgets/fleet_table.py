"""The Fleet table: one row per node, redrawn cell by cell where something changed.

Redrawing 15,000 cells costs ~70 ms, the ~900 visible ones ~5 ms (issue 5), so
rows that changed off screen wait in ``_pending`` until they scroll into view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from console.formatting import count, health_text, number, plain
from console.view_model import NodeRow


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    cell: Callable[[NodeRow, Mapping[str, str], bool], Text]
    sort_key: Callable[[NodeRow], Any]
    """Larger is worse/busier where that makes sense, so a reverse sort puts trouble on top."""
    width: int
    """Fixed: cells change every second and a column must not jump in width."""


def _num(value: float | None, digits: int = 1) -> Text:
    return Text(number(value, digits), justify="right")


def _name(row: NodeRow, v: Mapping[str, str], highlighted: bool) -> Text:
    style = f"bold reverse {v.get('highlight-node', '')}" if highlighted else ""
    return plain(row.name, style)


def _xids(row: NodeRow) -> str:
    if not row.xids:
        return ""
    codes = sorted({code for _gpu, code in row.xids})
    return f"{len(row.xids)}× " + ",".join(str(c) for c in codes)


def _none_last(value: float | None) -> tuple[bool, float]:
    return (value is not None, value if value is not None else 0.0)


COLUMNS: tuple[Column, ...] = (
    Column("name", "node", _name, lambda r: r.name, 9),
    Column("state", "state", lambda r, v, h: health_text(r.health, r.state, v),
           lambda r: (r.health.rank, r.state), 20),
    Column("group", "grp", lambda r, v, h: Text("" if r.group < 0 else str(r.group), justify="right"),
           lambda r: r.group, 3),
    Column("worst_nic", "worst NIC", lambda r, v, h: plain(r.worst_nic), lambda r: r.worst_nic, 9),
    Column("rx", "rx Gb/s", lambda r, v, h: _num(r.rx_gbps), lambda r: _none_last(r.rx_gbps), 8),
    Column("tx", "tx Gb/s", lambda r, v, h: _num(r.tx_gbps), lambda r: _none_last(r.tx_gbps), 8),
    Column("pause", "PFC/s", lambda r, v, h: _num(r.pause_per_s, 0), lambda r: _none_last(r.pause_per_s), 7),
    Column("cnp", "CNP/s", lambda r, v, h: _num(r.cnp_per_s, 0), lambda r: _none_last(r.cnp_per_s), 7),
    Column("errors", "err Δ5m", lambda r, v, h: Text(count(r.error_delta) if r.error_delta else "", justify="right"),
           lambda r: r.error_delta, 7),
    Column("optics", "optics dB", lambda r, v, h: _num(r.optics_margin_db),
           lambda r: -r.optics_margin_db if r.optics_margin_db is not None else float("-inf"), 9),
    Column("gpu_util", "GPU %", lambda r, v, h: _num(r.gpu_util_pct, 0), lambda r: _none_last(r.gpu_util_pct), 5),
    Column("gpu_temp", "GPU °C", lambda r, v, h: _num(r.gpu_temp_c, 0), lambda r: _none_last(r.gpu_temp_c), 6),
    Column("xid", "XID", lambda r, v, h: Text(_xids(r), style=v.get("health-down", "") if r.xids else ""),
           lambda r: len(r.xids), 8),
    Column("jobs", "jobs", lambda r, v, h: plain(",".join(r.jobs)), lambda r: r.jobs, 16),
)
COLUMN_BY_KEY = {c.key: c for c in COLUMNS}


def _same(a: Text, b: Text) -> bool:
    """``Text.__eq__`` ignores the base style; a recoloured cell must count as changed."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def row_cells(row: NodeRow, v: Mapping[str, str], highlighted: bool) -> tuple[Text, ...]:
    return tuple(c.cell(row, v, highlighted) for c in COLUMNS)


class FleetTable(DataTable[Text]):
    """Draws the rows it is given, in the order given; keeps nothing but what is on screen."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._order: list[str] = []
        self._shown: dict[str, NodeRow] = {}
        self._cells: dict[str, tuple[Text, ...]] = {}
        self._pending: dict[str, NodeRow] = {}
        self._highlighted: frozenset[str] = frozenset()
        self.applied_cells = 0
        """Cells redrawn by the last ``show_rows`` (the UI benchmark reads it)."""

    def on_mount(self) -> None:
        for column in COLUMNS:
            self.add_column(column.label, key=column.key, width=column.width)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._recolour())

    @property
    def order(self) -> Sequence[str]:
        return self._order

    def current_node(self) -> str | None:
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def _visible_range(self) -> tuple[int, int]:
        first = max(0, int(self.scroll_y))
        height = max(1, self.scrollable_content_region.height)
        return first, first + height

    def show_rows(self, rows: Sequence[NodeRow], highlighted: frozenset[str]) -> None:
        """Show exactly ``rows`` in this order; redraw only changed cells that are visible."""
        keys = [r.name for r in rows]
        self.applied_cells = 0
        highlight_changed = highlighted != self._highlighted
        self._highlighted = highlighted
        if set(keys) != set(self._order):
            self._rebuild(rows)
            return
        if keys != self._order:
            position = {key: i for i, key in enumerate(keys)}
            keep = self.current_node()
            self.sort("name", key=lambda cell: position[cell.plain])
            self._order = keys
            if keep is not None:
                self.move_cursor(row=position[keep], scroll=False)
        for row in rows:
            if row != self._shown.get(row.name) or (highlight_changed and (
                    row.name in highlighted or row.name in self._cells)):
                self._pending[row.name] = row
        self.apply_visible()

    def apply_visible(self) -> None:
        """Redraw pending rows that are on screen now; the rest wait for a scroll."""
        if not self._pending:
            return
        first, last = self._visible_range()
        v = self.app.theme_variables
        for key in self._order[first:last]:
            row = self._pending.pop(key, None)
            if row is None:
                continue
            cells = row_cells(row, v, key in self._highlighted)
            old = self._cells.get(key, ())
            for index, (column, cell) in enumerate(zip(COLUMNS, cells, strict=True)):
                if index >= len(old) or not _same(old[index], cell):
                    self.update_cell(key, column.key, cell)
                    self.applied_cells += 1
            self._cells[key] = cells
            self._shown[key] = row

    def _rebuild(self, rows: Sequence[NodeRow]) -> None:
        keep = self.current_node()
        self.clear()
        v = self.app.theme_variables
        self._pending.clear()
        self._cells = {r.name: row_cells(r, v, r.name in self._highlighted) for r in rows}
        self._shown = {r.name: r for r in rows}
        self.add_rows_keyed(rows)
        self._order = [r.name for r in rows]
        self.applied_cells = len(rows) * len(COLUMNS)
        if keep is not None and keep in self._shown:
            self.move_cursor(row=self._order.index(keep), scroll=True)

    def add_rows_keyed(self, rows: Sequence[NodeRow]) -> None:
        for row in rows:
            self.add_row(*self._cells[row.name], key=row.name)

    def _recolour(self) -> None:
        self._pending.update(self._shown)
        self.apply_visible()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.apply_visible()

