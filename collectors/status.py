"""The collection state of every host, and the events its changes make.

Each change of state is stored (``HostStatus`` rows, so replay shows it) and
becomes an ``Event`` with the reason in words; repeating the same state is
not news and writes nothing. Reasons are cleaned here, the one door every
host state goes through (``fleet.fabric.text.clean_text``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from fleet.fabric.events import Event, Severity
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState
from fleet.fabric.text import clean_text
from fleet.store.writer import StoreWriter

_SEVERITY: dict[HostState, Severity] = {
    HostState.HOST_KEY_MISMATCH: Severity.CRITICAL,
    HostState.UNREACHABLE: Severity.CRITICAL,
    HostState.HUNG: Severity.CRITICAL,
    HostState.AUTH_FAILED: Severity.CRITICAL,
    HostState.COMMAND_FAILED: Severity.WARNING,
    HostState.UNPARSABLE: Severity.WARNING,
    HostState.SLOW: Severity.WARNING,
}


class StatusBook:
    """Current state per host; ``set`` records a change once."""

    def __init__(self, writer: StoreWriter, on_status: Callable[[HostStatus], None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self._writer = writer
        self._on_status = on_status
        self._clock = clock
        self._current: dict[str, HostStatus] = {}

    def get(self, host: str) -> HostStatus | None:
        return self._current.get(host)

    def all(self) -> dict[str, HostStatus]:
        return dict(self._current)

    def connecting(self, hosts: Iterable[str]) -> None:
        """Every host of ``hosts`` is ``connecting`` (stored, so the console and a replay show the
        fleet filling in); not news, so no event. A host's first answer then is not news either."""
        now = self._clock()
        for host in hosts:
            status = HostStatus(host, HostState.CONNECTING, now, "waiting for its first answer")
            self._current[host] = status
            self._writer.put_host_status(status)

    def set(self, host: str, state: HostState, reason: str = "") -> None:
        """Record ``host``'s ``state`` when it changed; ``reason`` (often the machine's own words:
        stderr, a parser's complaint) is stored as one line of clean text."""
        reason = clean_text(reason, one_line=True)
        previous = self._current.get(host)
        if previous is not None and previous.state is state:
            return
        status = HostStatus(host, state, self._clock(), reason)
        self._current[host] = status
        self._writer.put_host_status(status)
        first_answer = previous is None or previous.state is HostState.CONNECTING
        if not (first_answer and state is HostState.OK):
            was = previous.state.value if previous is not None else "unknown"
            text = f"{host}: {was} -> {state.value}" + (f" ({reason})" if reason else "")
            self._writer.put_event(Event(status.since, "host_state", _SEVERITY.get(state, Severity.INFO),
                                         text, host=host, data={"state": state.value, "previous": was,
                                                                "reason": reason}))
        if self._on_status is not None:
            self._on_status(status)
