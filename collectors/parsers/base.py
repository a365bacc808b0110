"""The contract every parser keeps, and what it returns besides its data: the problems it met.

The contract, for every parser in this package (each ``parse_*`` function, the
ones in ``registry.KINDS`` and the ones the collectors call directly), for ANY
``str`` input, including 10 MB of binary garbage decoded with
``errors="replace"``:

- it returns its frozen result, or raises :class:`ParseError` with a one-line
  reason. Nothing else escapes: no RecursionError, IndexError, no ValueError
  from ``int()``. Callers catch ``ParseError`` and nothing else.
- A result holds only values its field can hold (the ranges, with their
  sources, are in ``fleet.collectors.parsers.values``). A printed value
  outside them (a negative counter, one past its width, NaN, an impossible
  rate or temperature) is left out (None, or the entry dropped) and listed in
  ``problems``, never returned as a fact.
- Lines it cannot place are kept and counted (``unknown_lines``) and listed in
  ``problems``, the listing capped (``problem_log.MAX_LISTED``).
- Time is linear in the input: no regular expression with nested or
  overlapping quantifiers runs over untrusted text; 10 MB parse in at most
  2 s (``python -m benchmarks parsers``).

``ParseError`` is raised only when the input as a whole is not something the
tool prints and no partial result would mean anything: JSON nested deeper
than any tool nests it (``MAX_JSON_DEPTH``). Damaged, truncated or foreign
text gives a result with problems instead, so a truncated capture keeps what
was read. :func:`parser` wraps every public parser: an exception a parser did
not mean (a bug) still leaves as a ``ParseError``, of the subclass
:class:`ParserBug`, so the contract holds for callers and the fuzz suite
(``tests/security``) can tell a bug from a refusal. See ``docs/parsers.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

REASON_CHARS = 200
"""A reason is one line of at most this many characters."""


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    """``text`` on one line (line breaks and other control characters as spaces), cut to ``limit``."""
    flat = "".join(" " if ord(c) < 32 or 127 <= ord(c) < 160 else c for c in text[: limit * 2])
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class ParseError(ValueError):
    """The one way a parser fails: the input as a whole cannot be read as its tool's output.

    ``reason`` is one line (no line breaks, at most ``REASON_CHARS`` characters).
    """

    def __init__(self, reason: str) -> None:
        self.reason = one_line(reason)
        super().__init__(self.reason)


class ParserBug(ParseError):
    """A parser raised something it did not mean to: a bug, reported through the contract."""


def parser(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Make ``function`` keep the contract: any exception but ``ParseError`` becomes ``ParserBug``.

    Why a wrapper as well as careful parsers: a host's output must never stop
    the collector, whatever a parser's bug does with it; the fuzz suite asserts
    that no input ever reaches this path.
    """
    name = f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}"

    @functools.wraps(function)
    def parse(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except ParseError:
            raise
        except Exception as exc:  # the contract: whatever a bug raises leaves as a ParseError
            raise ParserBug(f"{name}: internal error {type(exc).__name__}: {exc}") from exc

    return parse


@dataclass(frozen=True, slots=True)
class ParseProblem:
    line: int  # 1-based line number in the input, 0 when not tied to a line
    text: str  # the offending line, cut to 200 characters
    reason: str


def problem(line: int, text: str, reason: str) -> ParseProblem:
    return ParseProblem(line, text[:200], reason)
