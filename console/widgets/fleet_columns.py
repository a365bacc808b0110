"""The Fleet table's columns: what each shows of a node, how it sorts, how wide it is.

Every cell is a ``Text`` built from the node's values (never markup), so a name or a
job id from a machine is shown exactly as typed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from fleet.console.formatting import count, health_text, number, plain
from fleet.console.view_model import NodeRow


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


def same_cell(a: Text, b: Text) -> bool:
    """``Text.__eq__`` ignores the base style; a recoloured cell must count as changed."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def row_cells(row: NodeRow, v: Mapping[str, str], highlighted: bool) -> tuple[Text, ...]:
    """One node's cells in column order; ``v`` are the theme's variables (health colours)."""
    return tuple(c.cell(row, v, highlighted) for c in COLUMNS)
