"""Events and findings: what the user is told happened, and what looks wrong."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


@dataclass(frozen=True, slots=True)
class Event:
    """A fact worth showing: a state change, a finding raised or cleared, an action taken.

    ``kind`` is a short machine name (``host_state``, ``tofu_host_key``, a finding
    kind such as ``link_down``); ``message`` is plain text for people (never markup).
    """

    ts: float
    kind: str
    severity: Severity
    message: str
    host: str = ""
    device: str = ""
    port: str = ""
    switch: str = ""
    job: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Finding:
    """A diagnosis: the broken part, how bad, the numbers that show it, what to do next."""

    kind: str
    severity: Severity
    node: str = ""
    nic: str = ""
    switch: str = ""
    port: str = ""
    job: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Measured numbers, keys with units (``rx_power_dbm``, ``p99_usec``)."""
    next_step: str = ""
    basis: str = "window"
    """What the finding rests on: ``window`` (something happened in the judged window: counters rose,
    a rate or ratio over it) or ``state`` (a state that persists by nature and holds until someone acts:
    a port down now, a GPU that needs a reset, a miswired cable, a host that does not answer)."""


def evidence_text(evidence: Mapping[str, Any]) -> str:
    """``key=value`` pairs of the numbers and words of a finding's evidence (nested tables left out)."""
    return ", ".join(f"{k}={v}" for k, v in evidence.items()
                     if isinstance(v, int | float | str) and not isinstance(v, bool) and v != "")
