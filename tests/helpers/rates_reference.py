"""The rate rules of ``fleet.fabric.rates``, one counter at a time, in plain Python.

Slow and obviously correct: the product's one derivation (``RateTracker.derive``,
whole batches of hosts as arrays) must give exactly what this gives, float for
float and flag for flag. It walks the current sample's keys in order, as the
docs state the rules:

- a counter with no previous value gets no rate;
- one that rose (or stood) below its saturation maximum: delta = now - before;
- a saturating counter at its maximum: flagged ``saturated``, no rate;
- a wrapping counter that went down by less than half its range: flagged
  ``wrapped``, delta = now + modulus - before; any other decrease: ``reset``, no rate;
- per second: delta / seconds; a gauge: that x its factor;
- a port's ``errors_per_s``: the sum of its NIC error counters' per-second,
  present when one of them has a delta;
- a port's ``pre_fec_ber``: corrected bits / received bits over the interval,
  present when both have a delta and bits were received;
- a first sample gives nothing; a clock that did not go forward (or is not a
  number) gives a ``clock`` flag and nothing, and a clock that went back starts
  over from that sample; an interval over ``max_gap_s`` adds a ``gap`` flag first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fleet.fabric.rates import (
    FEC_CORRECTED,
    FEC_RECEIVED,
    GAUGE_SOURCES,
    NIC_ERROR_METRICS,
    RATED,
    DerivedRates,
    FlaggedSeries,
    RateFlag,
    flag_detail,
)
from fleet.fabric.samples import HostSample, SeriesKey


def reference_delta(before: float, now: float, metric: str) -> tuple[float | None, RateFlag | None]:
    """(delta or None, flag or None) of one counter, by its rule."""
    spec = RATED[metric]
    if spec.saturates and now >= spec.maximum:
        return None, RateFlag.SATURATED
    if now >= before:
        return now - before, None
    if not spec.saturates:
        wrapped = now + spec.modulus - before
        if wrapped <= spec.modulus / 2:
            return wrapped, RateFlag.WRAPPED
    return None, RateFlag.RESET


def reference_rates(previous: HostSample, current: HostSample, max_gap_s: float) -> DerivedRates:
    """The gauges of ``current`` against ``previous`` (``current.ts`` after ``previous.ts``)."""
    dt_s = current.ts - previous.ts
    flags: list[FlaggedSeries] = []
    if dt_s > max_gap_s:
        flags.append(FlaggedSeries("", "", "", RateFlag.GAP, f"{dt_s:.1f} s since the previous sample"))
    gauge_of = {source.counter: (gauge, source.factor) for gauge, source in GAUGE_SOURCES.items()}
    before_values = dict(previous.values)
    values: dict[SeriesKey, float] = {}
    errors: dict[tuple[str, str], float] = {}
    corrected: dict[tuple[str, str], float] = {}
    received: dict[tuple[str, str], float] = {}
    for key, now in current.values.items():
        metric, device, port = key
        before = before_values.get(key)
        if metric not in RATED or before is None:
            continue
        delta, flag = reference_delta(before, now, metric)
        if flag is not None:
            flags.append(FlaggedSeries(metric, device, port, flag, flag_detail(flag, before, now)))
        if delta is None:
            continue
        per_s = delta / dt_s
        if metric in gauge_of:
            gauge, factor = gauge_of[metric]
            values[(gauge, device, port)] = per_s * factor
        if metric in NIC_ERROR_METRICS:
            errors[(device, port)] = errors.get((device, port), 0.0) + per_s
        elif metric == FEC_CORRECTED:
            corrected[(device, port)] = delta
        elif metric == FEC_RECEIVED:
            received[(device, port)] = delta
    for (device, port), total in errors.items():
        values[("errors_per_s", device, port)] = total
    for place, bits in corrected.items():
        if received.get(place):
            values[("pre_fec_ber", *place)] = bits / received[place]
    return DerivedRates(HostSample(current.host, current.ts, values), tuple(flags))


class ReferenceTracker:
    """``RateTracker``'s bookkeeping of previous samples, by the rules above."""

    def __init__(self, max_gap_s: float = 10.0) -> None:
        self.max_gap_s = max_gap_s
        self.previous: dict[str, HostSample] = {}

    def update(self, sample: HostSample) -> DerivedRates:
        previous = self.previous.get(sample.host)
        if previous is None:
            self.previous[sample.host] = sample
            return DerivedRates(HostSample(sample.host, sample.ts, {}), ())
        dt_s = sample.ts - previous.ts
        if not (dt_s > 0 and math.isfinite(dt_s)):
            if dt_s < 0:
                self.previous[sample.host] = sample
            detail = f"timestamp {sample.ts} is not after the previous {previous.ts}"
            return DerivedRates(HostSample(sample.host, sample.ts, {}),
                                (FlaggedSeries("", "", "", RateFlag.CLOCK, detail),))
        self.previous[sample.host] = sample
        return reference_rates(previous, sample, self.max_gap_s)


def same_rates(got: DerivedRates, want: DerivedRates) -> bool:
    """Equal gauges (bit for bit; NaN equals NaN), in any order, and equal flags in order."""
    return (got.sample.host, got.sample.ts, got.flags) == (want.sample.host, want.sample.ts, want.flags) \
        and _bits(got.sample.values) == _bits(want.sample.values)


def _bits(values: Mapping[SeriesKey, float]) -> dict[SeriesKey, bytes]:
    import struct
    return {key: struct.pack("<d", value) for key, value in values.items()}
