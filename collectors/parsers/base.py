"""What every parser returns besides its data: the problems it met.

Parsers never raise on bad input. They return what they could read, and list
every line they could not place, so that a new tool version or a truncated
capture is visible instead of silently half-parsed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParseProblem:
    line: int  # 1-based line number in the input, 0 when not tied to a line
    text: str  # the offending line, cut to 200 characters
    reason: str


def problem(line: int, text: str, reason: str) -> ParseProblem:
    return ParseProblem(line, text[:200], reason)
