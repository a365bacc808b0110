"""Messages of the console: facts, named in the past tense.

Bursts collapse through ``can_replace``: only the newest snapshot, round or
per-host status is worth drawing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from fleet.console.view_model import ConsoleView
from fleet.fabric.probe_verdict import ProbeVerdict
from fleet.fabric.records import HostStatus, ProbeRecord

if TYPE_CHECKING:  # the probe modules pull in asyncssh: not on the console's start-up path
    from fleet.collectors.probes.history import BaselineValue
    from fleet.collectors.probes.linktest import LinktestReport


@dataclass
class SnapshotLoaded(Message):
    """The refresh worker read one moment of the fleet (live or replayed) and built its views."""

    view: ConsoleView

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SnapshotLoaded)


@dataclass
class HostStatusChanged(Message):
    """The collector running inside the console saw a host change state."""

    status: HostStatus

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostStatusChanged) and message.status.host == self.status.host


@dataclass
class CollectorRoundFinished(Message):
    """The collector finished one round over the fleet. Counts of hosts; ``samples``: values."""

    ts: float
    hosts_ok: int
    hosts_failed: dict[str, int]
    samples: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CollectorRoundFinished)


@dataclass
class NodeChosen(Message):
    """The user picked a node (fleet row, event, palette) to look at."""

    name: str


@dataclass
class JobChosen(Message):
    """The user picked a job; its nodes are highlighted on the Fleet and Topology screens."""

    job_id: str


@dataclass
class EcmpStepReported(Message):
    """The guarded ECMP apply told one step (snapshot, measure, apply, verify, rollback, verdict, probe)."""

    step: str
    words: str


@dataclass
class SuiteProgressed(Message):
    """The acceptance suite moved on: ``step`` with ``done`` of ``total`` and a line of words."""

    step: str
    done: int
    total: int
    detail: str

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SuiteProgressed) and message.step == self.step


@dataclass
class ProbeProgressed(Message):
    """A probe or link test started by a key moved on: ``text`` says where it is (a stage name or
    "done/total"); ``done``/``total`` probes and ``eta_s`` seconds for a link test (None otherwise)."""

    label: str
    text: str
    done: int | None = None
    total: int | None = None
    eta_s: float | None = None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProbeProgressed) and message.label == self.label


@dataclass
class ProbeFinished(Message):
    """A latency, bandwidth or all-reduce probe ended (``record.ok`` False: failed, the reason in its result),
    with the same pair's previous result and the last baseline's value when the store has them."""

    record: ProbeRecord
    previous: ProbeRecord | None
    baseline: BaselineValue | None
    verdict: ProbeVerdict | None = None
    """The result against the link's speed and the baseline or previous result (None: it failed)."""


@dataclass
class LinktestFinished(Message):
    """A link test started by a key ended; its report holds the matrices and the suspects."""

    report: LinktestReport


@dataclass
class DiagnosisRan(Message):
    """The diagnosis worker judged one window: findings newly raised and cleared (stored as events)."""

    end_ts: float
    open_findings: int
    raised: int
    cleared: int


@dataclass
class SwitchChosen(Message):
    """The user picked a switch (an event about a switch); the Topology screen shows its links."""

    name: str
