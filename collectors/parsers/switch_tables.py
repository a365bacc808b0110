"""Fixed-width tables printed by switch CLIs: NVUE ``nv show interface`` and SONiC ``show lldp table``.

Both are a header row, a dashed rule whose dash runs give the column spans,
then one row per port. Cells are cut at the spans of the rule, so that empty
cells (a port without an LLDP neighbour) stay empty instead of shifting the
next column left.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser, problem
from fleet.collectors.parsers.textscan import column_spans, cut, is_rule


@dataclass(frozen=True, slots=True)
class SwitchTable:
    columns: tuple[str, ...]
    rows: tuple[dict[str, str], ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


@parser
def parse_switch_table(text: str) -> SwitchTable:
    """Header + dashed rule + rows; lines before the header (legends) are skipped, not counted."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if index > 0 and is_rule(line) and len(column_spans(line)) > 1:
            spans = column_spans(line)
            columns = tuple(cut(lines[index - 1], spans))
            rows: list[dict[str, str]] = []
            problems: list[ParseProblem] = []
            for number, row in enumerate(lines[index + 1 :], start=index + 2):
                if not row.strip():
                    continue
                if len(row.rstrip()) < spans[0][1]:
                    problems.append(problem(number, row, "row shorter than the first column"))
                    continue
                rows.append(dict(zip(columns, cut(row, spans), strict=True)))
            return SwitchTable(columns, tuple(rows), tuple(problems), len(problems))
    reason = "no table header with a dashed rule" if text.strip() else "empty input"
    return SwitchTable((), (), (problem(0, text[:200], reason),), len([line for line in lines if line.strip()]))
