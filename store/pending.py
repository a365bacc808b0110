"""The writer's bounded queue: samples and records waiting for the writer thread.

Bounded by the number of queued sample values. When a new sample does not fit,
the oldest queued *gauge* values are dropped first (a gauge is a reading; the
next one replaces it), then, only if gauges alone do not make room, the oldest
whole samples. Events, probes, audit rows and other records are never dropped.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fleet.fabric.samples import METRICS, HostSample, MetricKind

_GAUGES = frozenset(name for name, spec in METRICS.items() if spec.kind is MetricKind.GAUGE)


@dataclass(slots=True)
class Item:
    """One queued thing: ``kind`` names the writer method, ``payload`` its argument."""

    kind: str
    payload: object
    samples: int = 0
    stripped: bool = False
    taken: bool = False
    """Set while the writer holds the item: it is not the queue's to strip any more."""


class PendingQueue:
    """A FIFO of :class:`Item` shared by producers (any thread) and the writer thread."""

    def __init__(self, max_samples: int) -> None:
        self.max_samples = max_samples
        self._items: deque[Item] = deque()
        self._strippable: deque[Item] = deque()
        """The queued samples not stripped yet, oldest first: room is made from its head, so a
        full queue costs each put what it drops, not a walk past everything stripped before."""
        self._samples = 0
        self._dropped = 0
        self._busy = 0
        self.cond = threading.Condition()

    def put(self, item: Item) -> bool:
        """Queue ``item``; False when room for its samples had to be made by dropping others."""
        with self.cond:
            lost = 0
            if item.samples and self._samples + item.samples > self.max_samples:
                lost = self._make_room(self._samples + item.samples - self.max_samples)
            self._items.append(item)
            if item.kind == "samples" and item.samples:
                self._strippable.append(item)
            self._samples += item.samples
            self.cond.notify_all()
            return lost == 0

    def _make_room(self, needed: int) -> int:
        freed = 0
        strippable = self._strippable
        while freed < needed and strippable:
            queued = strippable.popleft()
            if queued.taken or queued.stripped:
                continue
            sample = queued.payload
            assert isinstance(sample, HostSample)
            kept = {k: v for k, v in sample.values.items() if k[0] not in _GAUGES}
            gone = queued.samples - len(kept)
            queued.payload = HostSample(sample.host, sample.ts, kept)
            queued.samples = len(kept)
            queued.stripped = True
            freed += gone
        while freed < needed:
            victim = next((q for q in self._items if q.kind == "samples" and q.samples), None)
            if victim is None:
                break
            freed += victim.samples
            victim.samples = 0
            self._items.remove(victim)
        self._samples -= freed
        self._dropped += freed
        return freed

    def take(self, max_samples: int, timeout_s: float | None) -> list[Item]:
        """Up to ``max_samples`` sample values' worth of items (at least one), waiting up to ``timeout_s``."""
        with self.cond:
            if not self._items:
                self.cond.wait(timeout_s)
            batch: list[Item] = []
            taken = 0
            while self._items and (not batch or taken + self._items[0].samples <= max_samples):
                item = self._items.popleft()
                item.taken = True
                taken += item.samples
                batch.append(item)
            strippable = self._strippable
            while strippable and strippable[0].taken:  # the same order as the items: the head was taken
                strippable.popleft()
            self._samples -= taken
            self._busy += len(batch)
            return batch

    def wait_items(self, timeout_s: float | None) -> bool:
        """Block until something is queued (up to ``timeout_s``); whether something is."""
        with self.cond:
            if not self._items:
                self.cond.wait(timeout_s)
            return bool(self._items)

    def done(self, batch: Iterable[Item]) -> None:
        """The writer committed ``batch``."""
        with self.cond:
            self._busy -= sum(1 for _ in batch)
            self.cond.notify_all()

    def give_back(self, batch: list[Item]) -> None:
        """The writer could not commit ``batch``: put it back at the front, oldest first."""
        with self.cond:
            for item in reversed(batch):
                item.taken = False
                self._items.appendleft(item)
                if item.kind == "samples" and item.samples and not item.stripped:
                    self._strippable.appendleft(item)
                self._samples += item.samples
            self._busy -= len(batch)
            if self._samples > self.max_samples:
                self._make_room(self._samples - self.max_samples)
            self.cond.notify_all()

    def wait_idle(self, timeout_s: float, also: Callable[[], bool] = lambda: True,
                  give_up: Callable[[], bool] = lambda: False) -> bool:
        """Block until nothing is queued or being written (and ``also()``); False on timeout or
        when ``give_up()`` turns true first (checked whenever the queue is woken)."""
        with self.cond:
            self.cond.wait_for(
                lambda: (not self._items and not self._busy and also()) or give_up(), timeout_s)
            return not self._items and not self._busy and also()

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout_s)

    def wake(self) -> None:
        with self.cond:
            self.cond.notify_all()

    @property
    def queued(self) -> int:
        with self.cond:
            return len(self._items) + self._busy

    @property
    def queued_samples(self) -> int:
        with self.cond:
            return self._samples

    @property
    def dropped(self) -> int:
        with self.cond:
            return self._dropped
