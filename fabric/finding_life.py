"""A finding's life: opened, seen again, held, closed; and the events that record the transitions.

Rules (``fleet.fabric.diagnosis``) say what is wrong over one window; this book
remembers across windows. A finding opens when the rules first report it
(``opened_at``), stays open while they keep reporting it (``last_seen``,
``active``), and closes when they stop (``closed_at``). Only the transitions
become events: a finding raised (``finding_event``, with ``data["opened_at"]``)
and a finding closed (an INFO event with ``data["cleared"]`` and
``data["closed_at"]``).

Hysteresis, for conditions that come and go (a link flapping every 45 s shows in
a 30 s window two thirds of the time): a finding that opens again within
``DAMPEN_MEMORY_S`` of closing is kept open after its evidence stops for a hold
that doubles with each reopening (``HOLD_BASE_S``, 2x, up to ``HOLD_MAX_S``), the
way BGP damps a flapping route (RFC 2439). A finding that closes once closes on
the first judgement without its evidence, so a fault that ends is gone within the
window plus one run. Pure: the caller passes the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fleet.fabric.diagnosis import finding_event, finding_json
from fleet.fabric.events import Event, Finding, Severity

DAMPEN_MEMORY_S = 300.0
"""A finding that opens again within this long of closing is flapping: its closes are held back."""
HOLD_BASE_S = 20.0
"""Hold after the first reopening (doubled with each further one): longer than a run and a half, so a
condition absent for one run does not close its finding."""
HOLD_MAX_S = 320.0

FindingKey = tuple[str, str, str, str, str, str]
"""(kind, node, nic, switch, port, job): one finding on one part."""


def finding_key(finding: Finding) -> FindingKey:
    return finding.kind, finding.node, finding.nic, finding.switch, finding.port, finding.job


def event_key(event: Event) -> FindingKey | None:
    """The finding an event raised or cleared, or None for events that are not findings."""
    data = event.data
    if not data.get("finding"):
        return None
    return (str(data.get("kind", event.kind)), str(data.get("node", "")), str(data.get("nic", "")),
            str(data.get("switch", "")), str(data.get("port", "")), str(data.get("job", "")))


def open_findings(events: Iterable[Event]) -> dict[FindingKey, Event]:
    """Findings raised and not cleared, from finding events in any order."""
    found: dict[FindingKey, Event] = {}
    for event in sorted(events, key=lambda e: e.ts):
        key = event_key(event)
        if key is None:
            continue
        if event.data.get("cleared"):
            found.pop(key, None)
        else:
            found[key] = event
    return found


def cleared_event(raised: Event, ts: float) -> Event:
    """The INFO event that closes ``raised``: same part and kind, ``data["cleared"]`` and ``closed_at`` set."""
    where = " ".join(p for p in (raised.host, raised.device, raised.port) if p) or raised.job
    opened = raised.data.get("opened_at", raised.ts)
    return Event(ts, raised.kind, Severity.INFO, f"cleared: {raised.kind.replace('_', ' ')} {where}".strip(),
                 host=raised.host, device=raised.device, port=raised.port, switch=raised.switch, job=raised.job,
                 data={**raised.data, "cleared": True, "opened_at": opened, "closed_at": ts, "active": False})


@dataclass(frozen=True, slots=True)
class FindingLife:
    """A finding and its life so far. Times are unix seconds."""

    finding: Finding
    opened_at: float
    last_seen: float
    """The last run whose rules reported it."""
    active: bool
    """Whether the newest run's rules reported it (False: held open by hysteresis, or closed)."""
    closed_at: float | None = None
    reopened: int = 0
    """How often it opened again soon after closing (see the module doc)."""

    def as_json(self) -> dict[str, Any]:
        """``fleet diagnose --json``'s object: the finding's fields and its life."""
        return finding_json(self.finding) | {"opened_at": round(self.opened_at, 3),
                                             "last_seen": round(self.last_seen, 3),
                                             "closed_at": None if self.closed_at is None else round(self.closed_at, 3),
                                             "active": self.active, "reopened": self.reopened}


@dataclass(slots=True)
class _Open:
    """What the watch keeps of an open finding between runs."""

    event: Event
    """The event that raised it (its part, kind, and the evidence of that moment)."""
    life: FindingLife



class FindingBook:
    """The open findings and the recently closed ones; ``judge`` moves them on by one run."""

    def __init__(self, open_events: Iterable[Event] = ()) -> None:
        """``open_events``: finding events of an earlier run still open (``open_findings`` of the store)."""
        self._open: dict[FindingKey, _Open] = {}
        for event in open_events:
            key = event_key(event)
            if key is not None and not event.data.get("cleared"):
                self._open[key] = _from_store(event)
        self._closed: dict[FindingKey, tuple[float, int]] = {}
        """Recently closed findings: when, and how often they had reopened (for the hold)."""

    def judge(self, findings: Sequence[Finding], now: float, *, replayed: bool = False) -> Judged:
        """Move the book to ``now`` (unix seconds), given what the rules report at it."""
        before = self._open
        now_open: dict[FindingKey, _Open] = {}
        raised: list[Event] = []
        for finding in findings:
            key = finding_key(finding)
            if key in now_open:
                continue
            old = before.get(key)
            if old is not None:
                now_open[key] = _Open(old.event, replace(old.life, finding=finding, last_seen=now, active=True))
                continue
            closed_at, reopens = self._closed.pop(key, (None, -1))
            again = reopens + 1 if closed_at is not None and now - closed_at <= DAMPEN_MEMORY_S else 0
            event = finding_event(finding, now)
            event.data.update(opened_at=now, reopened=again, active=True)
            if replayed:
                event.data["replayed"] = True
            now_open[key] = _Open(event, FindingLife(finding, now, now, True, reopened=again))
            raised.append(event)
        cleared: list[Event] = []
        for key, old in before.items():
            if key in now_open:
                continue
            if now - old.life.last_seen < hold_s(old.life.reopened):
                now_open[key] = _Open(old.event, replace(old.life, active=False))
                continue
            cleared.append(cleared_event(old.event, now))
            self._closed[key] = (now, old.life.reopened)
        for key in [k for k, (at, _) in self._closed.items() if now - at > DAMPEN_MEMORY_S]:
            del self._closed[key]
        self._open = now_open
        order = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}
        lives = sorted((o.life for o in now_open.values()),
                       key=lambda life: (order[life.finding.severity], finding_key(life.finding)))
        return Judged(tuple(raised), tuple(cleared), tuple(lives))


@dataclass(frozen=True, slots=True)
class Judged:
    """One run's transitions (events to store) and the findings open after it, worst first."""

    raised: tuple[Event, ...]
    cleared: tuple[Event, ...]
    open: tuple[FindingLife, ...]


def hold_s(reopened: int) -> float:
    """Seconds a finding stays open after its evidence stopped: none the first time, then doubling."""
    return 0.0 if reopened <= 0 else min(HOLD_MAX_S, HOLD_BASE_S * 2 ** (reopened - 1))


def _from_store(event: Event) -> _Open:
    """An open finding as an earlier run stored it: its finding rebuilt from the event's data."""
    data = event.data
    finding = Finding(str(data.get("kind", event.kind)), Severity(str(data.get("severity", event.severity.value))),
                      node=str(data.get("node", "")), nic=str(data.get("nic", "")), switch=str(data.get("switch", "")),
                      port=str(data.get("port", "")), job=str(data.get("job", "")),
                      evidence=dict(data.get("evidence") or {}), next_step=str(data.get("next_step", "")),
                      basis=str(data.get("basis", "window")))
    opened = float(data.get("opened_at", event.ts))
    life = FindingLife(finding, opened, event.ts, False, reopened=int(data.get("reopened", 0) or 0))
    return _Open(event, life)
