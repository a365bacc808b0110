"""Samples of every node, queued for a moment, then completed and their rates derived together.

At 1,024 nodes a collector reads a thousand agent lines a second. Putting a changed-only
line's numbers in place (``put_moved``) and deriving rates (``RateTracker.derive``) take
the lines of many hosts in a few dozen array operations whatever their number, where one
line alone costs nearly as much: so the node pollers put their samples here, and this
queue, the one stage that holds samples, completes and derives what it holds every
``hold_s`` seconds (or once ``most`` are in), a delay no one reading a one-second
stream can see. A host's next sample lets its held one go first, so each host's
samples are completed, derived and stored in the order they came.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from fleet.collectors.agent_reader import MovedNumbers, put_moved
from fleet.fabric.rates import RateTracker
from fleet.fabric.samples import HostSample, SeriesKey

Done = Callable[[HostSample], None]
"""What is done with a sample, its rates and its readings, as one sample: the store."""

_NO_READINGS: Mapping[SeriesKey, float] = MappingProxyType({})


class _Queued(NamedTuple):
    sample: HostSample
    readings: Mapping[SeriesKey, float]
    moved: MovedNumbers | None
    done: Done


class RateQueue:
    """Between the node pollers and the store: see the module's docstring."""

    def __init__(self, rates: RateTracker, hold_s: float = 0.05, most: int = 256) -> None:
        self.rates = rates
        self.hold_s = hold_s
        self.most = most
        self._queued: dict[str, _Queued] = {}
        self._timer: asyncio.TimerHandle | None = None

    def put(self, sample: HostSample, done: Done, readings: Mapping[SeriesKey, float] = _NO_READINGS,
            moved: MovedNumbers | None = None) -> None:
        """Queue ``sample``; ``done`` gets it with its rates and ``readings`` (gauges that take no rate,
        such as optics) when the queue is derived. ``moved``: the numbers of a changed-only line still
        to be put in ``sample`` (``StreamSample.moved``). Needs a running event loop (its timer)."""
        if sample.host in self._queued:
            self.flush()
        self._queued[sample.host] = _Queued(sample, readings, moved, done)
        if len(self._queued) >= self.most:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.hold_s, self.flush)

    def flush(self) -> None:
        """Derive and hand on every queued sample now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        queued, self._queued = list(self._queued.values()), {}
        put_moved([item.moved for item in queued if item.moved is not None])
        layouts = self.rates.layouts
        derived = self.rates.derive([item.sample for item in queued])
        for item, rates in zip(queued, derived, strict=True):
            sample = item.sample
            values = layouts.merged(layouts.merged(sample.values, rates.sample.values), item.readings)
            item.done(HostSample(sample.host, sample.ts, values))
