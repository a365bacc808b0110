"""Per-host isolation: whatever one machine prints stays that machine's problem.

Why: an incident is when nodes and switches print strange things (JSON nested
100,000 deep, a table of the wrong shape, binary garbage, a line without end).
Reading such output may raise anything (a parser's error, ``RecursionError``,
``IndexError``, ``MemoryError``); raised into the collector's gather, it would stop
every other host's collection. So the boundary sits where one host's work is
done (docs/hostile-input.md):

- ``read_output`` runs a parser on one command's output; whatever it raises
  becomes ``Unparsable`` naming the command, which the poller turns into the
  host's ``unparsable`` state (with an event) while the rest of the fleet goes on;
- ``guarded`` runs one host's poller loop (or one round of it) and, should
  anything escape it, marks the host ``unparsable`` with the reason and starts
  the loop again on the poller's retry schedule: a poller that fails is
  retried, never lost, and never cancels another host's.

Reasons are one line of clean text (``fleet.fabric.text.clean_text``), at most
``REASON_CHARS`` characters, as every host state's reason is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fleet.collectors.parsers.base import ParseError, ParserBug
from fleet.collectors.status import StatusBook
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.fabric.states import HostState
from fleet.fabric.text import clean_text

log = logging.getLogger(__name__)

REASON_CHARS = 200
"""A host state's reason is one line; an exception's message may hold the whole input."""

T = TypeVar("T")


class Unparsable(Exception):
    """One command's output that could not be read; ``reason`` names the command and what was wrong."""

    def __init__(self, command: str, what: str) -> None:
        self.reason = clean_text(f"{command}: {what}", one_line=True)[:REASON_CHARS]
        super().__init__(self.reason)


def describe(error: BaseException) -> str:
    """``error`` in one clean line: its type and the start of its message."""
    message = clean_text(str(error)[: 2 * REASON_CHARS], one_line=True).strip()
    return f"{type(error).__name__}: {message}"[:REASON_CHARS] if message else type(error).__name__


def read_output(command: str, parse: Callable[[str], T], text: str) -> T:
    """``parse(text)``; whatever it raises becomes ``Unparsable`` naming ``command``.

    Any exception, not only the parser's declared one: the text is the machine's,
    so a parser's failure on it is that host's problem, never the collector's.
    """
    try:
        return parse(text)
    except ParserBug as error:
        raise Unparsable(command, describe(error)) from error
    except ParseError as error:  # the contract's one-line reason, often already naming the command
        raise Unparsable(command, str(error).removeprefix(f"{command}: ")) from error
    except Exception as error:
        raise Unparsable(command, describe(error)) from error


def mark_unparsable(host: str, status: StatusBook, error: Exception) -> None:
    """``host`` is ``unparsable`` because reading its output raised ``error`` (an event says why)."""
    reason = error.reason if isinstance(error, Unparsable) else f"collector failed on its output: {describe(error)}"
    log.debug("%s: %s", host, reason, exc_info=error)
    status.set(host, HostState.UNPARSABLE, reason)


async def guarded_once(host: str, status: StatusBook, work: Callable[[], Awaitable[object]]) -> bool:
    """Run ``work`` (one round of one host); True when it ended, False when it raised and
    ``host`` was marked unparsable. Cancellation passes through: it is the collector stopping."""
    try:
        await work()
    except Exception as error:
        mark_unparsable(host, status, error)
        return False
    return True


async def guarded(host: str, status: StatusBook, work: Callable[[], Awaitable[object]], stop: asyncio.Event,
                  retry_s: Callable[[], float]) -> None:
    """Run one host's poller loop ``work`` until it ends; each time it raises, mark ``host``
    unparsable, wait ``retry_s()`` seconds (the poller's schedule for a failed host) and
    start it again, until ``stop``."""
    while not await guarded_once(host, status, work) and not stop.is_set():
        await sleep_until_stopped(stop, retry_s())


__all__ = ["REASON_CHARS", "Unparsable", "describe", "guarded", "guarded_once", "mark_unparsable", "read_output"]
