"""SONiC switch counters: ``show interfaces counters`` (portstat, also ``portstat -i``),
``show pfc counters`` (pfcstat) and ``show queue counters`` (queuestat).

Why: drops, pause frames and per-queue drops on the leaf and spine ports
are where congestion shows first; the ECMP check also reads per-port rates.

The tables are printed by ``tabulate`` (columns under a ``----  ---`` rule),
so rows are cut at the rule's column spans. Counters may carry thousands
separators (``2,580,140``) and be larger than 2**32 (queue bytes); ``N/A``
gives None. Rates: SONiC prints ``B/s``, ``KB/s`` or ``MB/s`` with decimal
prefixes (1 KB = 1000 B); they are converted to bytes per second
(``rx_bytes_per_s``). Utilization is a percentage of the port speed. A negative
counter or rate, a counter past 2**64-1 or a utilization outside 0..100 % is listed
as a problem and left out (None).
Multi-ASIC builds print ``For namespace X:`` before each table; it is kept
per row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import (
    Problems,
    column_spans,
    cut,
    is_na,
    is_rule,
    split_lines,
    to_float,
    to_int,
)
from fleet.collectors.parsers.values import NON_NEGATIVE, PERCENT, U64

KINDS = ("sonic-counters", "sonic-pfc", "sonic-queue")

_RATE_UNITS = {"B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9}
_QUEUE = re.compile(r"([A-Za-z]{1,16})([0-9]{1,5})")
_NOTE = re.compile(r"(?i)^(reminder|last cached time|the rates are calculated|note)\b")


@dataclass(frozen=True, slots=True)
class _Table:
    """A tabulate table: header words and rows cut at the rule spans, with line numbers."""

    namespace: str
    columns: tuple[str, ...]
    rows: tuple[tuple[int, str, tuple[str, ...]], ...]


def _namespace(stripped: str) -> str | None:
    """``"For namespace asic0:"`` -> ``"asic0"`` (``""`` for ``"For namespace :"``); None otherwise."""
    if not stripped.startswith("For namespace"):
        return None
    name = stripped[len("For namespace") :].strip()
    name = name[:-1].rstrip() if name.endswith(":") else name
    return None if any(c.isspace() for c in name) else name


def _tables(text: str, problems: Problems, notes: list[str]) -> list[_Table]:
    lines = split_lines(text)
    tables: list[_Table] = []
    namespace = ""
    spans: list[tuple[int, int]] = []
    columns: list[str] = []
    rows: list[tuple[int, str, tuple[str, ...]]] = []

    def close() -> None:
        if columns:
            tables.append(_Table(namespace, tuple(columns), tuple(rows)))

    rules = [is_rule(line) for line in lines]
    rules.append(False)
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if (found := _namespace(stripped)) is not None:
            namespace = found
            continue
        if rules[number] and not rules[number - 1]:
            close()
            spans = column_spans(lines[number])
            columns, rows = cut(line, spans), []
            continue
        if rules[number - 1] and spans:
            continue
        if _NOTE.match(stripped):
            notes.append(stripped)
            continue
        if spans and len(line.rstrip()) >= spans[-1][0]:
            rows.append((number, line, tuple(cut(line, spans))))
            continue
        problems.unknown(number, line, "line does not fit the table" if spans else "unknown line")
    close()
    return tables


def _rate_bytes_per_s(cell: str, name: str, number: int, line: str, problems: Problems) -> float | None:
    """``"2086.64 MB/s"`` -> 2086640000.0 bytes/s; a negative rate is a problem and None."""
    parts = cell.split()
    if len(parts) != 2 or parts[1] not in _RATE_UNITS:
        return None
    value = to_float(parts[0])
    return None if value is None else NON_NEGATIVE.check(value * _RATE_UNITS[parts[1]], problems, number, line, name)


def _utilization(cell: str, name: str, number: int, line: str, problems: Problems) -> float | None:
    """``"41.73%"`` -> 41.73 (percent of the port speed, 0..100)."""
    return PERCENT.check(to_float(cell), problems, number, line, name)


def _counter(cell: str, name: str, number: int, line: str, problems: Problems) -> int | None:
    """A counter cell: a u64 count (thousands separators allowed), None for N/A."""
    if len(cell) <= 20 and cell.isascii() and cell.isdigit() and int(cell) <= U64.high:
        return int(cell)  # a plain count: most cells
    if is_na(cell):
        return None
    value = to_int(cell)
    if value is None:
        problems.add(number, line, f"{name}: {cell!r} is not a counter")
    return U64.check(value, problems, number, line, name)


# ---------------------------------------------------------------- show interfaces counters


@dataclass(frozen=True, slots=True)
class SonicPortCounters:
    namespace: str
    interface: str
    state: str | None  # "U", "D", "X" (disabled) as printed
    rx_ok: int | None  # frames
    rx_bytes_per_s: float | None
    rx_util_pct: float | None
    rx_err: int | None
    rx_drp: int | None
    rx_ovr: int | None
    tx_ok: int | None
    tx_bytes_per_s: float | None
    tx_util_pct: float | None
    tx_err: int | None
    tx_drp: int | None
    tx_ovr: int | None
    fields: tuple[tuple[str, str], ...]  # every column as printed


@dataclass(frozen=True, slots=True)
class SonicCounters:
    ports: tuple[SonicPortCounters, ...]
    notes: tuple[str, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


_PORT_COUNTERS = ("RX_OK", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_ERR", "TX_DRP", "TX_OVR")


@parser
def parse_sonic_counters(text: str) -> SonicCounters:
    """Parse ``show interfaces counters`` / ``portstat`` tables; never raises."""
    problems = Problems()
    notes: list[str] = []
    ports: list[SonicPortCounters] = []
    for table in _tables(text, problems, notes):
        if "IFACE" not in table.columns:
            for number, line, _cells in table.rows:
                problems.unknown(number, line, "table without an IFACE column")
            continue
        for number, line, cells in table.rows:
            named = dict(zip(table.columns, cells, strict=False))
            counters = {
                c: _counter(named[c], c, number, line, problems)
                for c in _PORT_COUNTERS
                if c in named
            }
            ports.append(
                SonicPortCounters(
                    namespace=table.namespace,
                    interface=named.get("IFACE", ""),
                    state=named.get("STATE"),
                    rx_ok=counters.get("RX_OK"),
                    rx_bytes_per_s=_rate_bytes_per_s(named.get("RX_BPS", ""), "RX_BPS", number, line, problems),
                    rx_util_pct=_utilization(named.get("RX_UTIL", ""), "RX_UTIL", number, line, problems),
                    rx_err=counters.get("RX_ERR"),
                    rx_drp=counters.get("RX_DRP"),
                    rx_ovr=counters.get("RX_OVR"),
                    tx_ok=counters.get("TX_OK"),
                    tx_bytes_per_s=_rate_bytes_per_s(named.get("TX_BPS", ""), "TX_BPS", number, line, problems),
                    tx_util_pct=_utilization(named.get("TX_UTIL", ""), "TX_UTIL", number, line, problems),
                    tx_err=counters.get("TX_ERR"),
                    tx_drp=counters.get("TX_DRP"),
                    tx_ovr=counters.get("TX_OVR"),
                    fields=tuple(zip(table.columns, cells, strict=False)),
                )
            )
    if not ports and not problems.items:
        problems.add(0, "", "no interface counters table found")
    return SonicCounters(tuple(ports), tuple(notes), problems.result(), problems.unknown_lines)


# ---------------------------------------------------------------- show pfc counters


@dataclass(frozen=True, slots=True)
class SonicPfcRow:
    namespace: str
    interface: str
    direction: str  # "rx" (pause frames received) or "tx" (sent)
    pfc_frames: tuple[int | None, ...]  # PFC0..PFC7 pause frame counts, in header order
    priorities: tuple[int, ...]  # the priority of each entry, from the header (0..7)


@dataclass(frozen=True, slots=True)
class SonicPfc:
    rows: tuple[SonicPfcRow, ...]
    notes: tuple[str, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


@parser
def parse_sonic_pfc(text: str) -> SonicPfc:
    """Parse ``show pfc counters`` (one ``Port Rx`` and one ``Port Tx`` table); never raises."""
    problems = Problems()
    notes: list[str] = []
    rows: list[SonicPfcRow] = []
    for table in _tables(text, problems, notes):
        first = table.columns[0] if table.columns else ""
        direction = {"Port Rx": "rx", "Port Tx": "tx"}.get(first)
        # IEEE 802.1Qbb: eight priorities, 0..7.
        priorities = [to_int(c[3:]) for c in table.columns[1:] if c.startswith("PFC")]
        if direction is None or None in priorities or not all(0 <= (p or 0) <= 7 for p in priorities):
            for number, line, _cells in table.rows:
                problems.unknown(number, line, "not a Port Rx / Port Tx PFC table")
            continue
        named_priorities = tuple(p for p in priorities if p is not None)
        counter_columns = table.columns[1:]
        for number, line, cells in table.rows:
            frames = tuple(
                _counter(cell, column, number, line, problems)
                for column, cell in zip(counter_columns, cells[1:], strict=False)
            )
            rows.append(
                SonicPfcRow(
                    namespace=table.namespace,
                    interface=cells[0],
                    direction=direction,
                    pfc_frames=frames,
                    priorities=named_priorities[: len(frames)],
                )
            )
    if not rows and not problems.items:
        problems.add(0, "", "no PFC counters table found")
    return SonicPfc(tuple(rows), tuple(notes), problems.result(), problems.unknown_lines)


# ---------------------------------------------------------------- show queue counters


@dataclass(frozen=True, slots=True)
class SonicQueueRow:
    namespace: str
    interface: str
    queue: str  # "UC3", "MC10", "ALL2" as printed
    queue_type: str  # "UC", "MC", "ALL"
    queue_index: int | None
    tx_pkts: int | None
    tx_bytes: int | None
    drop_pkts: int | None
    drop_bytes: int | None
    fields: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class SonicQueue:
    rows: tuple[SonicQueueRow, ...]
    notes: tuple[str, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


_QUEUE_COLUMNS = {
    "Counter/pkts": "tx_pkts",
    "Counter/bytes": "tx_bytes",
    "Drop/pkts": "drop_pkts",
    "Drop/bytes": "drop_bytes",
}


@parser
def parse_sonic_queue(text: str) -> SonicQueue:
    """Parse ``show queue counters``; never raises."""
    problems = Problems()
    notes: list[str] = []
    rows: list[SonicQueueRow] = []
    for table in _tables(text, problems, notes):
        if "TxQ" not in table.columns:
            for number, line, _cells in table.rows:
                problems.unknown(number, line, "table without a TxQ column")
            continue
        for number, line, cells in table.rows:
            named = dict(zip(table.columns, cells, strict=False))
            queue = named.get("TxQ", "")
            match = _QUEUE.fullmatch(queue)
            values = {
                field: _counter(named[column], column, number, line, problems)
                for column, field in _QUEUE_COLUMNS.items()
                if column in named
            }
            rows.append(
                SonicQueueRow(
                    namespace=table.namespace,
                    interface=named.get("Port", ""),
                    queue=queue,
                    queue_type=match.group(1) if match else "",
                    queue_index=int(match.group(2)) if match else None,  # at most 5 digits
                    tx_pkts=values.get("tx_pkts"),
                    tx_bytes=values.get("tx_bytes"),
                    drop_pkts=values.get("drop_pkts"),
                    drop_bytes=values.get("drop_bytes"),
                    fields=tuple(zip(table.columns, cells, strict=False)),
                )
            )
    if not rows and not problems.items:
        problems.add(0, "", "no queue counters table found")
    return SonicQueue(tuple(rows), tuple(notes), problems.result(), problems.unknown_lines)
