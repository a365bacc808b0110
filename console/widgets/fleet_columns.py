"""The Fleet table's columns: what each shows of a node, how it sorts, how wide it is, and which
give way first on a narrow terminal.

Every cell is a ``Text`` built from the node's values (never markup), so a name or a
job id from a machine is shown exactly as typed. Numbers are fitted to their column
(``formatting.fit_number``: fewer decimals, then k/M/G), never cut mid-digit; text that
does not fit ends in an ellipsis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, NamedTuple

from rich.text import Text

from fleet.console.formatting import fit_number, health_text, plain, sparkline
from fleet.console.view_model import NodeRow
from fleet.fabric.health import HealthThresholds

THRESHOLDS = HealthThresholds()
MARK_GLYPH = "◆"
"""Drawn before a marked node's name (``space``), with the mark colour: visible without colour too."""


class CellContext(NamedTuple):
    """What a cell needs besides its row: the theme's colours and the row's marks."""

    variables: Mapping[str, str]
    highlighted: bool
    """The node belongs to the job chosen on the Jobs screen."""
    marked: bool
    """The node is marked for a probe (``space``)."""


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    cell: Callable[[NodeRow, CellContext, int], Text]
    """Builds the cell of a row in ``width`` cells."""
    sort_key: Callable[[NodeRow], Any] | None
    """Larger is worse/busier where that makes sense, so a reverse sort puts trouble on top;
    None: not sortable (a sparkline sorts by its column's number)."""
    width: int
    """Fixed: cells change every second and a column must not jump in width."""
    priority: int
    """Which columns give way on a narrow terminal: the highest numbers first; 0 never."""
    description: str
    """What the column shows, with units (the column chooser lists it)."""


def _num(value: float | None, width: int, digits: int = 1, style: str = "") -> Text:
    return Text(fit_number(value, width, digits), justify="right", style=style)


def _name(row: NodeRow, c: CellContext, width: int) -> Text:
    style = f"bold reverse {c.variables.get('highlight-node', '')}".strip() if c.highlighted else ""
    text = Text(style=style, no_wrap=True, overflow="ellipsis")
    if c.marked:
        text.append(f"{MARK_GLYPH} ", style=f"bold {c.variables.get('accent', '')}".strip())
    text.append(row.name)
    return text


def _state(row: NodeRow, c: CellContext, width: int) -> Text:
    text = health_text(row.health, row.state, c.variables)
    text.overflow, text.no_wrap = "ellipsis", True
    return text


def _xids(row: NodeRow) -> str:
    if not row.xids:
        return ""
    codes = sorted({code for _gpu, code in row.xids})
    return f"{len(row.xids)}× " + ",".join(str(c) for c in codes)


def _none_last(value: float | None) -> tuple[bool, float]:
    return (value is not None, value if value is not None else 0.0)


def _warn_style(c: CellContext, bad: bool) -> str:
    return c.variables.get("health-degraded", "") if bad else ""


def _pause(row: NodeRow, c: CellContext, width: int) -> Text:
    bad = (row.pause_per_s or 0.0) >= THRESHOLDS.pause_warn_per_s
    return _num(row.pause_per_s, width, 0, _warn_style(c, bad))


def _errors(row: NodeRow, c: CellContext, width: int) -> Text:
    if not row.error_delta:
        return Text("")
    return Text(fit_number(row.error_delta, width, 0), justify="right", style=c.variables.get("health-down", ""))


def _optics(row: NodeRow, c: CellContext, width: int) -> Text:
    margin = row.optics_margin_db
    style = ""
    if margin is not None and margin < 0:
        style = c.variables.get("health-down", "")
    elif margin is not None and margin < THRESHOLDS.optics_margin_warn_db:
        style = c.variables.get("health-degraded", "")
    return _num(margin, width, 1, style)


def _gpu_temp(row: NodeRow, c: CellContext, width: int) -> Text:
    bad = (row.gpu_temp_c or 0.0) >= THRESHOLDS.gpu_temp_warn_c
    return _num(row.gpu_temp_c, width, 0, _warn_style(c, bad))


def _rx_trend(row: NodeRow, c: CellContext, width: int) -> Text:
    """Throughput over the last minutes, as a share of the node's trained NIC capacity."""
    top = row.capacity_gbps or max((v for v in row.rx_trend if v is not None), default=0.0) or 1.0
    return Text(sparkline(row.rx_trend, width, top), style=c.variables.get("primary", ""))


def _pause_trend(row: NodeRow, c: CellContext, width: int) -> Text:
    """PFC pauses over the last minutes; full height at the warning threshold, coloured above it."""
    top = THRESHOLDS.pause_warn_per_s
    bad = any(v is not None and v >= top for v in row.pause_trend)
    return Text(sparkline(row.pause_trend, width, top),
                style=c.variables.get("health-degraded" if bad else "secondary", ""))


COLUMNS: tuple[Column, ...] = (
    Column("name", "node", _name, lambda r: r.name, 10, 0, "node name (◆: marked for a probe)"),
    Column("state", "state", _state, lambda r: (r.health.rank, r.state), 14, 0,
           "health, or the collection state when that is the story"),
    Column("group", "grp", lambda r, c, w: Text("" if r.group < 0 else str(r.group), justify="right"),
           lambda r: r.group, 4, 8, "leaf group"),
    Column("worst_nic", "worst NIC", lambda r, c, w: plain(r.worst_nic), lambda r: r.worst_nic, 10, 2,
           "the NIC with the most problems, else the busiest"),
    Column("rx", "rx Gb/s", lambda r, c, w: _num(r.rx_gbps, w), lambda r: _none_last(r.rx_gbps), 8, 1,
           "received, all RDMA NICs, Gb/s"),
    Column("rx_trend", "rx 5m", _rx_trend, None, 10, 3,
           "received over the last 5 minutes, as a share of the NICs' trained rate"),
    Column("tx", "tx Gb/s", lambda r, c, w: _num(r.tx_gbps, w), lambda r: _none_last(r.tx_gbps), 8, 6,
           "sent, all RDMA NICs, Gb/s"),
    Column("pause", "PFC/s", _pause, lambda r: _none_last(r.pause_per_s), 7, 2,
           "PFC pause frames per second, sent and received"),
    Column("pause_trend", "PFC 5m", _pause_trend, None, 10, 4,
           "PFC pauses over the last 5 minutes (full height: the warning threshold)"),
    Column("cnp", "CNP/s", lambda r, c, w: _num(r.cnp_per_s, w, 0), lambda r: _none_last(r.cnp_per_s), 7, 7,
           "congestion notification packets sent per second"),
    Column("errors", "err Δ5m", _errors, lambda r: r.error_delta, 8, 2,
           "rise of the error counters over the last 5 minutes (or since the store began)"),
    Column("optics", "optics dB", _optics,
           lambda r: -r.optics_margin_db if r.optics_margin_db is not None else float("-inf"), 10, 3,
           "weakest optics lane's margin above the low-power alarm, dB"),
    Column("gpu_util", "GPU %", lambda r, c, w: _num(r.gpu_util_pct, w, 0), lambda r: _none_last(r.gpu_util_pct),
           6, 5, "mean GPU utilisation, %"),
    Column("gpu_temp", "GPU °C", _gpu_temp, lambda r: _none_last(r.gpu_temp_c), 7, 5, "hottest GPU, °C"),
    Column("xid", "XID", lambda r, c, w: Text(_xids(r), style=c.variables.get("health-down", "") if r.xids else ""),
           lambda r: len(r.xids), 8, 4, "GPUs with an XID error, and the codes"),
    Column("jobs", "jobs", lambda r, c, w: Text(",".join(r.jobs), no_wrap=True, overflow="ellipsis"),
           lambda r: r.jobs, 16, 6, "Slurm jobs on the node"),
)
COLUMN_BY_KEY = {c.key: c for c in COLUMNS}
SORTABLE = tuple(c.key for c in COLUMNS if c.sort_key is not None)
SORTS_AS = {"rx_trend": "rx", "pause_trend": "pause"}
"""A click on a sparkline's header sorts by its number column."""
ALWAYS = tuple(c.key for c in COLUMNS if c.priority == 0)
"""Columns that are never hidden: without them a row means nothing."""
PADDING = 1
"""Blank cells on each side of every cell, as ``DataTable``'s ``cell_padding``."""


class Layout:
    """The columns drawn at one width: the chosen ones, dropped highest priority number first
    until they fit, kept in table order."""

    def __init__(self, chosen: Iterable[str], width: int) -> None:
        wanted = [c for c in COLUMNS if c.key in set(chosen) or c.priority == 0]
        drawn = {c.key for c in wanted}
        total = sum(c.width + 2 * PADDING for c in wanted)
        for column in sorted(wanted, key=lambda c: (-c.priority, -COLUMNS.index(c))):
            if total <= width or column.priority == 0:
                break
            drawn.discard(column.key)
            total -= column.width + 2 * PADDING
        self.columns: tuple[Column, ...] = tuple(c for c in wanted if c.key in drawn)
        self.hidden: tuple[str, ...] = tuple(c.key for c in wanted if c.key not in drawn)
        """Chosen columns left out for lack of width."""
        self.widths: tuple[int, ...] = tuple(c.width + 2 * PADDING for c in self.columns)
        """Drawn width of each column in cells, padding included."""
        self.starts: tuple[int, ...] = (0, *accumulate(self.widths))[:-1]
        self.total_width = sum(self.widths)
        self.index = {c.key: i for i, c in enumerate(self.columns)}

    def start_of(self, key: str) -> int:
        return self.starts[self.index[key]]

    def header(self, sort_key: str, descending: bool) -> tuple[Text, ...]:
        """Column labels, the sorted one after its arrow (▼ largest first, ▲ smallest first); every
        width leaves room for the arrow."""
        cells = []
        for column in self.columns:
            if column.key == sort_key:
                cells.append(Text.assemble(("▼" if descending else "▲", "bold"), column.label))
            else:
                cells.append(Text(column.label))
        return tuple(cells)

    def cells(self, row: NodeRow, context: CellContext) -> tuple[Text, ...]:
        """One node's cells in drawn column order."""
        return tuple(c.cell(row, context, c.width) for c in self.columns)


DEFAULT_COLUMNS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
"""Every column is chosen until the user chooses (``c``); the width decides what is drawn."""


def same_cell(a: Text, b: Text) -> bool:
    """``Text.__eq__`` ignores the base style; a recoloured cell must count as changed."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def known_columns(keys: Sequence[str]) -> tuple[str, ...]:
    """``keys`` that name a column, in table order (a config written by another version may name others)."""
    wanted = set(keys)
    return tuple(c.key for c in COLUMNS if c.key in wanted)
