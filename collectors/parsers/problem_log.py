"""Collects a parser's problems and unknown lines while it reads, then freezes them.

Every parser counts each line it cannot place (``unknown_lines``) and lists it
as a :class:`ParseProblem`. The listing is capped (``MAX_LISTED``) so that 10 MB
of garbage costs bounded memory; the count is always exact and a final problem
says how many more were not listed, so nothing is dropped silently.
"""

from __future__ import annotations

from fleet.collectors.parsers.base import ParseProblem, problem

MAX_LISTED = 200
"""Problems listed in full; beyond this only counted (see the closing summary problem)."""


class ProblemLog:
    """Mutable builder used inside one parse call; results keep only the frozen tuple."""

    __slots__ = ("_items", "_not_listed", "unknown_lines")

    def __init__(self) -> None:
        self._items: list[ParseProblem] = []
        self._not_listed = 0
        self.unknown_lines = 0

    def add(self, line: int, text: str, reason: str) -> None:
        """Record a problem that is not an unplaced line (bad value, inconsistency)."""
        if len(self._items) < MAX_LISTED:
            self._items.append(problem(line, text, reason))
        else:
            self._not_listed += 1

    def unknown(self, line: int, text: str, reason: str = "unrecognised line") -> None:
        """Count and list a line the parser could not place."""
        self.unknown_lines += 1
        self.add(line, text, reason)

    def freeze(self) -> tuple[ParseProblem, ...]:
        if self._not_listed:
            return (
                *self._items,
                problem(0, "", f"{self._not_listed} more problems not listed"),
            )
        return tuple(self._items)

