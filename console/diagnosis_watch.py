"""The console's running diagnosis: judge the stored window again and again, store only what changed.

Why not store every finding of every run: the diagnosis runs every 30 s and a
broken cable stays broken for hours; the Events screen would fill with copies.
The watch keeps the findings open now and stores transitions: a finding newly
raised (``fleet.fabric.diagnosis.finding_event``) and a finding that went away (an
INFO event with ``data["cleared"]``). The open set starts from the store's
own finding events, so a restarted console does not raise again what the last
one raised. No Textual here: the app runs ``DiagnosisWatch.run`` in a thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fleet.collectors.diagnose_input import read_input
from fleet.collectors.inventory import CablingRow
from fleet.fabric.diagnosis import Thresholds, diagnose, finding_event
from fleet.fabric.events import Event, Severity
from fleet.store.reader import StoreReader

DIAGNOSIS_INTERVAL_S = 30.0
"""Seconds between two live runs: findings need minutes of counters (the default window is 5 min),
so a faster cadence finds nothing new and costs a store scan (1.7 s at 1,024 nodes)."""
DIAGNOSIS_WINDOW_S = 300.0
"""The window judged, as ``fleet diagnose``'s default: a flap has time to repeat, an old fixed fault drops out."""
OPEN_LOOKBACK_S = 3600.0
"""How far back the store's finding events are read to know what is open (the summary bar counts 1 h too)."""

FindingKey = tuple[str, str, str, str, str, str]
"""(kind, node, nic, switch, port, job): one finding on one part."""


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
    """The INFO event that closes ``raised``: same part and kind, ``data["cleared"]`` set."""
    where = " ".join(p for p in (raised.host, raised.device, raised.port) if p) or raised.job
    return Event(ts, raised.kind, Severity.INFO, f"cleared: {raised.kind.replace('_', ' ')} {where}".strip(),
                 host=raised.host, device=raised.device, port=raised.port, switch=raised.switch, job=raised.job,
                 data={**raised.data, "cleared": True})


@dataclass(frozen=True, slots=True)
class Transitions:
    """One run's outcome: the events to store and how many findings are open after it."""

    end_ts: float
    """The end of the judged window (unix seconds)."""
    events: tuple[Event, ...]
    raised: int
    cleared: int
    open_count: int


class DiagnosisWatch:
    """Runs the diagnosis over the store's newest (or a replayed) window and returns the transitions."""

    def __init__(self, db_path: Path, *, cabling: Sequence[CablingRow] = (), window_s: float = DIAGNOSIS_WINDOW_S,
                 thresholds: Thresholds | None = None) -> None:
        self._db_path = db_path
        self._cabling = tuple(cabling)
        self._window_s = window_s
        self._thresholds = thresholds
        self._open: dict[FindingKey, Event] | None = None

    def run(self, end_ts: float | None = None, now_ts: float | None = None) -> Transitions:
        """Judge the window ending at ``end_ts`` (None: the newest data; live). Blocking: run it in a thread.

        Live, transitions are stamped ``now_ts`` (default: the clock) and the open set carries over
        between runs; in replay they are stamped ``end_ts`` and the open set is read from the store at
        that moment each time, since the cursor can jump anywhere.
        """
        if not self._db_path.exists():
            return Transitions(end_ts or 0.0, (), 0, 0, 0)
        with StoreReader(self._db_path) as reader:
            if reader.time_span() is None:
                return Transitions(end_ts or 0.0, (), 0, 0, 0)
            data = read_input(reader, window_s=self._window_s, end_ts=end_ts, cabling=self._cabling)
            if self._open is None or end_ts is not None:
                self._open = open_findings(reader.events(since=data.end_ts - OPEN_LOOKBACK_S, until=data.end_ts,
                                                         limit=100_000))
        stamp = end_ts if end_ts is not None else (now_ts if now_ts is not None else time.time())
        findings = diagnose(data, self._thresholds)
        now_open: dict[FindingKey, Event] = {}
        raised: list[Event] = []
        for finding in findings:
            key: FindingKey = (finding.kind, finding.node, finding.nic, finding.switch, finding.port, finding.job)
            if key in now_open:
                continue
            if key in self._open:
                now_open[key] = self._open[key]
                continue
            event = finding_event(finding, stamp)
            if end_ts is not None:
                event.data["replayed"] = True
            now_open[key] = event
            raised.append(event)
        cleared = [cleared_event(old, stamp) for key, old in self._open.items() if key not in now_open]
        self._open = now_open
        return Transitions(data.end_ts, (*raised, *cleared), len(raised), len(cleared), len(now_open))
