"""Failed hosts grouped by what went wrong, so 37 refusals read as one cause, not 37 lines.

Hosts that fail for the same reason differ only in what the reason says about
each one: the key a host offered, when the next retry is. Those details are in
parentheses in every reason the SSH pool writes, so the cause of a failure is
its state plus its reason with the parenthesised parts left out; hosts that
share it form one :class:`FailureGroup`, biggest first.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

import hostlist

from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState

_DETAIL = re.compile(r"\s*\([^()]*\)")
MAX_HOSTS_CHARS = 120
"""A group's host list is cut to about this many characters (the count says how many there are)."""


class FailureGroup(NamedTuple):
    """The hosts (sorted) that are in ``state`` for the same ``cause``."""

    state: HostState
    cause: str
    hosts: tuple[str, ...]

    def line(self) -> str:
        """``37 host_key_mismatch: known_hosts holds other keys: ... (gpu[001-032],leaf[01-04],head01)``."""
        names = hostlist.collect_hostlist(list(self.hosts))
        if len(names) > MAX_HOSTS_CHARS:
            names = names[: MAX_HOSTS_CHARS].rsplit(",", 1)[0] + ",..."
        return f"{len(self.hosts)} {self.state.value}: {self.cause or 'no reason given'} ({names})"


def cause_of(reason: str) -> str:
    """``reason`` without its per-host details (the parenthesised parts), on one line."""
    previous = None
    text = " ".join(reason.split())
    while previous != text:  # nested parentheses, innermost first
        previous, text = text, _DETAIL.sub("", text)
    return text.strip()


def failure_groups(statuses: Iterable[HostStatus]) -> list[FailureGroup]:
    """The failed hosts of ``statuses`` grouped by state and cause, the biggest group first."""
    groups: dict[tuple[HostState, str], list[str]] = {}
    for status in statuses:
        if status.state.is_failure:
            groups.setdefault((status.state, cause_of(status.reason)), []).append(status.host)
    found = [FailureGroup(state, cause, tuple(sorted(hosts))) for (state, cause), hosts in groups.items()]
    return sorted(found, key=lambda group: (-len(group.hosts), group.state.value, group.cause))
