"""Cumulus Linux interface counters: NVUE ``nv show interface <port> counters`` (text and
``-o json``) and the older NCLU ``net show counters`` kernel interface table.

Why one kind for both: they are the two ways a Cumulus switch reports its
port counters, and the switch driver wants the same flat list either way.
Every value becomes one ``NvueCounter`` (interface, section, name, column,
value), so a new section or counter in a newer release is kept, not dropped.

Values: counters are integers as printed (a negative one, or one past 2**64-1, is a
problem and None); ``"0 Bytes"`` cells are bytes
(``unit="bytes"``); ``n/a`` gives None. ``interface`` is empty for
``nv show interface <port> counters`` (the port is the one on the command
line) and the row's interface for ``net show counters``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.jsontext import load_json
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
from fleet.collectors.parsers.values import NON_NEGATIVE, U64

KIND = "nvue-counters"


@dataclass(frozen=True, slots=True)
class NvueCounter:
    interface: str  # "" when the command named one port
    section: str  # "Drop Counters", "" for the first (untitled) table, JSON path for -o json
    name: str  # row name ("Buffer Drops") or JSON key
    column: str  # "Receive", "Transmit", "operational"; "" for JSON leaves
    value: int | float | None  # None for n/a
    unit: str  # "bytes" for "... Bytes" cells, else ""
    raw: str  # the cell as printed


@dataclass(frozen=True, slots=True)
class NvueCounters:
    source_format: str  # "nvue-text", "nvue-json", "nclu-kernel-table" or ""
    counters: tuple[NvueCounter, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def get(self, section: str, name: str, column: str = "", interface: str = "") -> float | None:
        """One counter's value, None when absent or n/a."""
        for counter in self.counters:
            if (counter.interface, counter.section, counter.name, counter.column) == (
                interface,
                section,
                name,
                column,
            ):
                return counter.value
        return None


def _cell(text: str) -> tuple[int | float | None, str]:
    """(value, unit) of one printed cell: integers stay integers."""
    if is_na(text):
        return None, ""
    number, unit = text.strip(), ""
    for suffix in ("Bytes", "Byte"):
        if number.endswith(suffix) and not (number[: -len(suffix)][-1:].isalnum() or number[: -len(suffix)][-1:] == "_"):
            number, unit = number[: -len(suffix)].rstrip(), "bytes"
            break
    whole = to_int(number)
    return (whole if whole is not None else to_float(number)), unit


def _counter(
    value: int | float | None, problems: Problems, line: int, text: str, name: str
) -> int | float | None:
    """A counter as printed: a u64 count, or a non-negative amount; else None and a problem."""
    if isinstance(value, float):
        return NON_NEGATIVE.check(value, problems, line, text, name)
    return U64.check(value, problems, line, text, name)


@parser
def parse_nvue_counters(text: str) -> NvueCounters:
    """Parse NVUE counters text or JSON, or ``net show counters``; ParseError for JSON nested too deep."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return _parse_json(text)
    return _parse_tables(text)


def _parse_json(text: str) -> NvueCounters:
    problems = Problems()
    try:
        data = load_json(text, "nv show interface counters -o json")
    except ParseError:
        raise
    except ValueError as exc:
        problems.add(getattr(exc, "lineno", 0), "", f"not JSON: {exc}")
        return NvueCounters("", (), problems.result(), 0)
    if not _has_counter_keys(data):
        problems.add(
            0, text[:200], "JSON without NVUE counter keys (carrier-transitions, in-*, out-*)"
        )
        return NvueCounters("", (), problems.result(), 0)
    counters: list[NvueCounter] = []

    def walk(node: Any, path: list[str]) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, [*path, str(key)])
            return
        if not path:
            problems.add(0, str(node)[:200], "JSON is not an object of counters")
            return
        raw = json.dumps(node) if not isinstance(node, str) else node
        value: int | float | None = None
        unit = ""
        if isinstance(node, int | float) and not isinstance(node, bool):
            value = node
        elif isinstance(node, str):
            value, unit = _cell(node)
        value = _counter(value, problems, 0, raw, "/".join(path))
        counters.append(NvueCounter("", "/".join(path[:-1]), path[-1], "", value, unit, raw))

    walk(data, [])
    return NvueCounters("nvue-json", tuple(counters), problems.result(), 0)


_COUNTER_KEY = re.compile(r"^(?:carrier-transitions|(?:in|out|rx|tx)-[a-z-]+)$")


def _has_counter_keys(node: Any, depth: int = 0) -> bool:
    """True when the JSON has NVUE-style counter names within its first three levels."""
    if not isinstance(node, dict) or depth > 2:
        return False
    return any(
        _COUNTER_KEY.match(str(key)) or _has_counter_keys(child, depth + 1)
        for key, child in node.items()
    )


def _parse_tables(text: str) -> NvueCounters:
    problems = Problems()
    lines = split_lines(text)
    counters: list[NvueCounter] = []
    section = ""
    header: str | None = None
    columns: list[str] = []
    spans: list[tuple[int, int]] = []
    source = ""
    pending_title: str | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            header, spans = None, []
            continue
        if pending_title is not None and set(stripped) == {"="}:
            section, pending_title = pending_title, None
            continue
        if stripped == "Kernel Interface table":
            section, source = "kernel", "nclu-kernel-table"
            continue
        if is_rule(line) and header is not None:
            spans = column_spans(line)
            columns = cut(header, spans)
            if len(spans) < 2:
                # A counter table has a name column and at least one value column.
                problems.unknown(number, line, "table with fewer than two columns: not counters")
                spans = []
            elif section or "operational" in columns:
                source = source or "nvue-text"
            else:
                # A table of some other tool: its rows must not pass for NVUE counters.
                spans = []
            continue
        if spans:
            cells = cut(line, spans)
            if len(cells) != len(columns) or not cells[0] or len(line) <= spans[1][0]:
                problems.unknown(number, line, "row does not fit the table columns")
                continue
            reached = sum(1 for start, _ in spans if start < len(line))
            if reached < len(spans):
                problems.add(number, line, f"row ends before column {columns[reached]!r}")
                cells, columns_here = cells[:reached], columns[:reached]
            else:
                columns_here = columns
            if source == "nclu-kernel-table":
                for column, cell in zip(columns_here[1:], cells[1:], strict=True):
                    value, unit = _cell(cell)
                    value = _counter(value, problems, number, line, column)
                    counters.append(NvueCounter(cells[0], section, column, "", value, unit, cell))
            else:
                for column, cell in zip(columns_here[1:], cells[1:], strict=True):
                    value, unit = _cell(cell)
                    if value is None and not is_na(cell):
                        problems.add(number, line, f"{column}: value not understood")
                    value = _counter(value, problems, number, line, column)
                    counters.append(NvueCounter("", section, cells[0], column, value, unit, cell))
            continue
        # A title (followed by ===) or a table header (followed by ---).
        next_line = lines[number] if number < len(lines) else ""
        if next_line.strip() and set(next_line.strip()) == {"="}:
            pending_title = stripped
        elif is_rule(next_line):
            header = line
        else:
            problems.unknown(number, line)
    if not counters and not problems.items:
        problems.add(0, "", "no counter table found")
    return NvueCounters(source, tuple(counters), problems.result(), problems.unknown_lines)
