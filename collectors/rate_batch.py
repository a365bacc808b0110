"""Changed-only agent lines of many nodes, held for a moment and turned into rates together.

At 1,024 nodes a collector reads a thousand lines a second, each with a hundred
or so changed counters. ``RateTracker.update_changed_batch`` derives the rates of
dozens of lines in one pass of array arithmetic, in about a third of the CPU of
one line at a time (``fleet bench collect``, docs/benchmarks.md). The lines wait
``hold_s`` at most (or until ``most`` have come), a delay no one reading a
one-second stream can see; a node's next line, or the end of its stream, lets its
held line go first, so every node's lines are derived in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from fabric.rates import DerivedRates, RateTracker
from fabric.samples import HostSample

Kept = Callable[[HostSample, DerivedRates], None]
"""What is done with a line's sample and its rates (the store)."""


class RateBatch:
    def __init__(self, rates: RateTracker, hold_s: float = 0.05, most: int = 256) -> None:
        self._rates = rates
        self.hold_s = hold_s
        self.most = most
        self._held: dict[str, tuple[HostSample, Sequence[int], Kept]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def add(self, sample: HostSample, places: Sequence[int], kept: Kept) -> None:
        """Hold ``sample`` (``places``: where its changed values are, ``StreamSample.changed_at``);
        ``kept`` gets it and its rates when the batch goes."""
        if sample.host in self._held:
            self.flush()
        self._held[sample.host] = (sample, places, kept)
        if len(self._held) >= self.most:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.hold_s, self.flush)

    def holds(self, host: str) -> bool:
        return host in self._held

    def flush(self) -> None:
        """Derive every held line now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = list(self._held.values()), {}
        derived = self._rates.update_changed_batch([(sample, places) for sample, places, _ in held])
        for (sample, _, kept), rates in zip(held, derived, strict=True):
            kept(sample, rates)
