"""Small text helpers shared by the GPU, benchmark, Slurm and switch parsers.

Why a module of its own: these parsers all read column tables, numbers printed
with thousands separators or units, and "N/A" markers, and all must list the
lines they could not place without ever raising. Keeping that in one place
keeps the parsers short and their behaviour on bad input the same.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, problem
from fleet.collectors.parsers.values import MAX_DIGITS, is_digits

# Enough to see what went wrong; a 10 MB garbage capture must not become 10 MB of problems.
MAX_LISTED_PROBLEMS = 200

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]")
# ASCII digits only (``\d`` would take "٣"); at most 40 digits before the point.
_NUMBER = re.compile(r"[-+]?(?:[0-9][0-9,]{0,60})?\.?[0-9]{1,40}(?:[eE][-+]?[0-9]{1,4})?")
_NA = frozenset({"n/a", "[n/a]", "na", "-", "", "none", "[not supported]", "unknown"})


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (SGR colours, underline) that tools emit on a tty."""
    return _ANSI.sub("", text)


def split_lines(text: str) -> list[str]:
    """Lines without their end-of-line characters; ``\\r\\n`` and ``\\r`` ends are accepted."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def is_na(text: str) -> bool:
    """True for the markers tools print instead of a value (``N/A``, ``[Not Supported]``, ...)."""
    return text.strip().lower() in _NA


def to_float(text: str) -> float | None:
    """The number in ``text`` (``"2,580,140"``, ``"67.74 W"``, ``"0.00%"``), None when there is none.

    Only a number at the start counts, so ``"P8"`` or ``"mlx5_0"`` give None.
    NaN and infinities are refused: a parsed value is always finite. A plain
    decimal (ASCII digits, at most one dot: what table cells mostly are) is the
    whole number the pattern would find, so it skips the pattern.
    """
    if len(text) <= 40 and text.isascii() and text.replace(".", "", 1).isdigit():
        value = float(text)
        return value if math.isfinite(value) else None
    stripped = text.strip()
    match = _NUMBER.match(stripped)
    if match is None or stripped[match.end() : match.end() + 1].isdigit():
        return None  # digits the pattern's bounds left over: no number a tool prints
    try:
        value = float(match.group(0).replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def to_int(text: str) -> int | None:
    """An integer printed plainly or with thousands separators (ASCII digits, at most
    ``values.MAX_DIGITS``); None for anything else."""
    if len(text) <= MAX_DIGITS and text.isascii() and text.isdigit():
        return int(text)  # a plain cell: most of them
    stripped = text.strip().replace(",", "")
    body = stripped[1:] if stripped[:1] in ("+", "-") else stripped
    return int(stripped) if is_digits(body) else None


MAX_COLUMNS = 256
"""Columns a table may have (switch CLIs print a few dozen at most): a rule line of more
dashes runs is not a table, so that cutting each row costs its length, not the rule's."""


def column_spans(rule: str) -> list[tuple[int, int]]:
    """Column spans ``[start, end)`` of a ``----  -----`` rule line under a table header;
    empty when the line has more than ``MAX_COLUMNS`` runs of dashes."""
    spans: list[tuple[int, int]] = []
    for m in re.finditer(r"-+", rule):
        if len(spans) == MAX_COLUMNS:
            return []
        spans.append((m.start(), m.end()))
    return spans


def is_rule(line: str) -> bool:
    """A line of dashes (and spaces) under a table header."""
    stripped = line.strip()
    return len(stripped) >= 3 and not stripped.strip("- ")  # nothing but dashes and spaces


def cut(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Cells of a fixed-width row cut at the spans of the rule line.

    The last cell takes the rest of the line, so a long last column (a Slurm
    reason, a flag string) is kept whole.
    """
    cells = []
    for index, (start, end) in enumerate(spans):
        stop = len(line) if index == len(spans) - 1 else end
        cells.append(line[start:stop].strip())
    return cells


@dataclass
class Problems:
    """Collects problems and counts unknown lines while a parser walks its input."""

    items: list[ParseProblem] = field(default_factory=list)
    unknown_lines: int = 0
    _dropped: int = 0

    def add(self, line: int, text: str, reason: str) -> None:
        if len(self.items) < MAX_LISTED_PROBLEMS:
            self.items.append(problem(line, text, reason))
        else:
            self._dropped += 1

    def unknown(self, line: int, text: str, reason: str = "unknown line") -> None:
        """Count and list a line the parser cannot place."""
        self.unknown_lines += 1
        self.add(line, text, reason)

    def result(self) -> tuple[ParseProblem, ...]:
        """The problems as a tuple, with one closing entry when some were left off."""
        if self._dropped:
            note = problem(0, "", f"{self._dropped} more problems not listed")
            return (*self.items, note)
        return tuple(self.items)
