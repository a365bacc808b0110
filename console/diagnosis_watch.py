"""The console's running diagnosis: judge the stored window again and again, keep each finding's life.

The rules (``fleet.fabric.diagnosis``) judge one window; the book
(``fleet.fabric.finding_life``) remembers across runs: when a finding opened, when
it was last seen, when it closed, with hysteresis for conditions that come and go.
Only the transitions are stored, as events, so a broken cable that stays broken
for hours is one event on the Events screen, not one per run. The book starts
from the store's own finding events, so a restarted console (or the next
``fleet diagnose``) keeps the ``opened_at`` of what an earlier run raised. No
Textual here: the app runs ``DiagnosisWatch.run`` in a thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fleet.collectors.diagnose_input import read_input
from fleet.collectors.inventory import CablingRow
from fleet.fabric.diagnosis import Thresholds, diagnose
from fleet.fabric.events import Event
from fleet.fabric.finding_life import FindingBook, FindingLife, open_findings
from fleet.store.reader import StoreReader

DIAGNOSIS_INTERVAL_S = 5.0
"""Seconds between two live runs: with a 30 s window a fault shows within a run of its start (target
20 s) and is gone within the window and a run of its end (target 45 s), with room for the collector's
own latency on a busy machine. A run reads the store over the window (seconds at 1,024 nodes): the
console runs the next one only when the last has finished, so a large fleet's runs space themselves."""
DIAGNOSIS_WINDOW_S = 30.0
"""The window judged: long enough for counters to move past their noise and hold a few samples of every
collector, short enough that what it shows is true now."""
OPEN_LOOKBACK_S = 3600.0
"""How far back the store's finding events are read to know what is open (the summary bar counts 1 h too)."""


@dataclass(frozen=True, slots=True)
class Transitions:
    """One run's outcome: the events to store and the findings open after it."""

    end_ts: float
    """The end of the judged window (unix seconds)."""
    events: tuple[Event, ...]
    raised: int
    cleared: int
    open_count: int
    findings: tuple[FindingLife, ...] = field(default=())
    """Every finding open after the run, worst first."""


class DiagnosisWatch:
    """Runs the diagnosis over the store's newest (or a replayed) window and keeps each finding's life."""

    def __init__(self, db_path: Path, *, cabling: Sequence[CablingRow] = (), window_s: float = DIAGNOSIS_WINDOW_S,
                 thresholds: Thresholds | None = None) -> None:
        self._db_path = db_path
        self._cabling = tuple(cabling)
        self._window_s = window_s
        self._thresholds = thresholds
        self._book: FindingBook | None = None

    def run(self, end_ts: float | None = None, now_ts: float | None = None) -> Transitions:
        """Judge the window ending at ``end_ts`` (None: the newest data; live). Blocking: run it in a thread.

        Live, transitions are stamped ``now_ts`` (default: the clock once the store was read, so a run
        that waited for a busy machine does not date a finding before its evidence) and the book carries
        over between runs; in replay they are stamped ``end_ts`` and the book is read from the store at that moment
        each time, since the cursor can jump anywhere.
        """
        if not self._db_path.exists():
            return Transitions(end_ts or 0.0, (), 0, 0, 0)
        with StoreReader(self._db_path) as reader:
            if reader.time_span() is None:
                return Transitions(end_ts or 0.0, (), 0, 0, 0)
            data = read_input(reader, window_s=self._window_s, end_ts=end_ts, cabling=self._cabling)
            if self._book is None or end_ts is not None:
                # live, the events of earlier runs are stamped by the clock, after the newest sample
                stored = reader.events(since=data.end_ts - OPEN_LOOKBACK_S, until=end_ts, limit=100_000)
                self._book = FindingBook(open_findings(stored).values())
        stamp = end_ts if end_ts is not None else (now_ts if now_ts is not None else time.time())
        judged = self._book.judge(diagnose(data, self._thresholds), stamp, replayed=end_ts is not None)
        return Transitions(data.end_ts, (*judged.raised, *judged.cleared), len(judged.raised), len(judged.cleared),
                           len(judged.open), judged.open)
