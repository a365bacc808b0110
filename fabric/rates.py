"""Counters into rates, honestly: wraps, saturated IB counters, resets and gaps.

No I/O, no clock (time comes from the samples' ``ts``, unix seconds). One
derivation, ``RateTracker.derive``, for every caller: a collector's batch of
many nodes' lines, one switch poll, one command-mode tick.

Rules (docs/domain.md, "IB port counters"):
- ``tx_bytes``/``rx_bytes`` are already ``port_xmit_data``/``port_rcv_data`` x 4
  (the counters count 4-byte words), so their modulus is 4 x 2^64 bytes.
- Counters that WRAP (64-bit sysfs and ethtool counters, 32-bit switch ones): a
  decrease whose wrapped delta is under half the range is a wrap and yields a
  rate (flagged ``wrapped``); any other decrease is a RESET (driver reload,
  counters cleared) and yields no rate: a negative or invented rate would be a lie.
- IB PortCounters SATURATE: they stick at their maximum instead of wrapping
  (InfiniBand Architecture Specification vol. 1, PortCounters attribute; the
  gpud capture in tests/fixtures/sysfs shows 255, 65535, 15 and 4294967295).
  A counter at its maximum means "at least this many": flagged ``saturated``,
  never turned into a rate.
- A gap longer than ``max_gap_s`` still gives the average rate over the gap,
  flagged ``gap`` (the peak inside the gap is unknown).

tests/helpers/rates_reference.py states the same rules one counter at a time, in
plain Python; the tests hold ``derive`` to it, float for float.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import compress
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from fleet.fabric.counters import IB_SATURATING_COUNTER_BITS
from fleet.fabric.samples import (
    METRICS,
    HostSample,
    MetricKind,
    PackedValues,
    SeriesKey,
    SeriesLayout,
    SeriesLayouts,
)

Floats = np.ndarray[Any, np.dtype[np.float64]]
Places = np.ndarray[Any, np.dtype[np.intp]]
Flags = np.ndarray[Any, np.dtype[np.bool_]]


class RateFlag(StrEnum):
    SATURATED = "saturated"
    """The counter sits at its maximum: no rate."""
    RESET = "reset"
    """The counter went down (driver reload, cleared): no rate for this interval."""
    WRAPPED = "wrapped"
    """The counter wrapped around its width; the rate accounts for it."""
    GAP = "gap"
    """The interval is longer than expected; the rate is the average over it."""
    CLOCK = "clock"
    """The sample's timestamp did not advance: no rates."""


@dataclass(frozen=True, slots=True)
class CounterSpec:
    """How a counter behaves at its limit: ``modulus`` = 2^width (x scale); saturating or wrapping."""

    modulus: int
    saturates: bool

    @property
    def maximum(self) -> int:
        return self.modulus - 1


WRAP64 = CounterSpec(2**64, saturates=False)
WRAP32 = CounterSpec(2**32, saturates=False)


def _saturating(bits: int) -> CounterSpec:
    return CounterSpec(2**bits, saturates=True)


COUNTER_SPECS: Mapping[str, CounterSpec] = MappingProxyType({
    "tx_bytes": CounterSpec(4 * 2**64, saturates=False),  # 64-bit word counter x 4
    "rx_bytes": CounterSpec(4 * 2**64, saturates=False),
    **{name: _saturating(bits) for name, bits in IB_SATURATING_COUNTER_BITS.items()},
})
"""Counters that are not plain 64-bit wrapping counters (everything else is ``WRAP64``)."""


def spec_for(metric: str) -> CounterSpec:
    return COUNTER_SPECS.get(metric, WRAP64)


@dataclass(frozen=True, slots=True)
class CounterDelta:
    """The increase of one counter over ``dt_s``; ``delta``/``per_s`` None when there is no honest one."""

    delta: float | None
    per_s: float | None
    flag: RateFlag | None = None


def counter_delta(previous: float, current: float, dt_s: float, spec: CounterSpec = WRAP64) -> CounterDelta:
    """The increase from ``previous`` to ``current`` over ``dt_s`` seconds, by the counter's rules."""
    if dt_s <= 0:
        return CounterDelta(None, None, RateFlag.CLOCK)
    if spec.saturates and current >= spec.maximum:
        return CounterDelta(None, None, RateFlag.SATURATED)
    if current >= previous:
        delta = current - previous
        return CounterDelta(delta, delta / dt_s)
    if not spec.saturates:
        wrapped = current + spec.modulus - previous
        if wrapped <= spec.modulus / 2:
            return CounterDelta(wrapped, wrapped / dt_s, RateFlag.WRAPPED)
    return CounterDelta(None, None, RateFlag.RESET)


def flag_detail(flag: RateFlag, previous: float, current: float) -> str:
    """What a counter's flag means for its two values, in words."""
    if flag is RateFlag.SATURATED:
        return f"stuck at its maximum {current:.0f}: at least this many, no rate"
    if flag is RateFlag.RESET:
        return f"went down from {previous:.0f} to {current:.0f}: reset (driver reload or cleared)"
    return f"wrapped from {previous:.0f} to {current:.0f}"


@dataclass(frozen=True, slots=True)
class FlaggedSeries:
    """Why one series (or, with empty names, the whole sample) got no rate or a caveated one."""

    metric: str
    device: str
    port: str
    flag: RateFlag
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DerivedRates:
    """The rate gauges derived from a host's last two samples, and the caveats."""

    sample: HostSample
    """Same host and ``ts`` as the input; values are the derived gauges only."""
    flags: tuple[FlaggedSeries, ...]


class GaugeSource(NamedTuple):
    """The counter a rate gauge is derived from, and the factor from that counter's per-second to
    the gauge's unit."""

    counter: str
    factor: float


GAUGE_SOURCES: Mapping[str, GaugeSource] = MappingProxyType({
    "tx_gbps": GaugeSource("tx_bytes", 8 / 1e9),
    "rx_gbps": GaugeSource("rx_bytes", 8 / 1e9),
    "rx_pause_per_s": GaugeSource("rx_prio3_pause", 1.0),
    "tx_pause_per_s": GaugeSource("tx_prio3_pause", 1.0),
    "cnp_sent_per_s": GaugeSource("np_cnp_sent", 1.0),
    "cnp_handled_per_s": GaugeSource("rp_cnp_handled", 1.0),
    "ecn_marked_per_s": GaugeSource("np_ecn_marked_roce_packets", 1.0),
    "sw_rx_gbps": GaugeSource("sw_rx_bytes", 8 / 1e9),
    "sw_tx_gbps": GaugeSource("sw_tx_bytes", 8 / 1e9),
})
"""Rate gauge -> its source counter. Each counter feeds at most one gauge."""

NIC_ERROR_METRICS: frozenset[str] = frozenset(
    name for name, spec in METRICS.items()
    if spec.kind is MetricKind.ERROR and not name.startswith(("gpu_", "sw_"))
)
"""Error counters of a NIC port, summed (per second) into the port's ``errors_per_s``."""

FEC_CORRECTED, FEC_RECEIVED = "rx_corrected_bits_phy", "rx_bits_phy"
"""The two counters of a port's ``pre_fec_ber``: corrected bits over received bits in the interval."""

RATED: Mapping[str, CounterSpec] = MappingProxyType({
    name: spec_for(name) for name, spec in METRICS.items() if spec.kind is not MetricKind.GAUGE
})
"""Every counter and error counter of the catalogue with its wrap/saturation rule: what gets a delta."""

_GAUGE_OF: Mapping[str, str] = MappingProxyType({source.counter: gauge for gauge, source in GAUGE_SOURCES.items()})
"""Source counter -> its rate gauge."""
_NO_VALUES: Mapping[SeriesKey, float] = MappingProxyType({})


@dataclass(frozen=True, slots=True, eq=False)
class RatePlan:
    """Where the values of one layout go: built once per layout (``RateTracker``), for every host of
    that shape. Places are the layout's.

    A rate row holds the gauges, then each port's ``errors_per_s``, then each FEC port's
    ``pre_fec_ber`` (``rates``), in the order a counter-by-counter walk would first set them.
    """

    specs: Mapping[int, CounterSpec]
    """Each counter's (``RATED``) rule by its place: for a value that is not a plain rise (a wrap, a
    reset, a saturated counter)."""
    saturated_at: Floats
    """By place: the value from which a counter counts as saturated; ``inf`` for one that wraps."""
    not_counter: Flags
    """By place: True for a value that takes no delta (a gauge)."""
    gauge_places: Places
    """The counters that feed a rate gauge, in the order of their gauges in a row."""
    gauge_factors: Floats
    error_places: Places
    """The NIC error counters."""
    error_ports: Places
    """Each error counter's port, numbered in the order of their first error counter."""
    fec_corrected: Places
    """Each FEC port's corrected-bits counter."""
    fec_received: Places
    """Each FEC port's received-bits counter."""
    rates: SeriesLayout
    """The keys of a rate row."""

    @classmethod
    def of(cls, layout: SeriesLayout, layouts: SeriesLayouts) -> RatePlan:
        specs: dict[int, CounterSpec] = {}
        gauges: list[tuple[int, SeriesKey, float]] = []
        errors: list[tuple[int, int]] = []
        ports: dict[tuple[str, str], int] = {}
        corrected: dict[tuple[str, str], int] = {}
        received: dict[tuple[str, str], int] = {}
        for place, key in enumerate(layout.keys):
            metric, device, port_name = key
            port = (device, port_name)
            spec = RATED.get(metric)
            if spec is None:
                continue
            specs[place] = spec
            gauge = _GAUGE_OF.get(metric)
            if gauge is not None:
                gauges.append((place, (gauge, *port), GAUGE_SOURCES[gauge].factor))
            if metric in NIC_ERROR_METRICS:
                errors.append((place, ports.setdefault(port, len(ports))))
            elif metric == FEC_CORRECTED:
                corrected[port] = place
            elif metric == FEC_RECEIVED:
                received[port] = place
        fec = [(port, place, received[port]) for port, place in corrected.items() if port in received]
        width = len(layout.keys)
        return cls(
            specs=MappingProxyType(specs),
            saturated_at=np.array([specs[place].maximum if place in specs and specs[place].saturates else math.inf
                                   for place in range(width)], dtype=np.float64),
            not_counter=np.array([place not in specs for place in range(width)], dtype=np.bool_),
            gauge_places=np.array([place for place, _, _ in gauges], dtype=np.intp),
            gauge_factors=np.array([factor for _, _, factor in gauges], dtype=np.float64),
            error_places=np.array([place for place, _ in errors], dtype=np.intp),
            error_ports=np.array([port for _, port in errors], dtype=np.intp),
            fec_corrected=np.array([place for _, place, _ in fec], dtype=np.intp),
            fec_received=np.array([place for _, _, place in fec], dtype=np.intp),
            rates=layouts.of((*(key for _, key, _ in gauges), *(("errors_per_s", *port) for port in ports),
                              *(("pre_fec_ber", *port) for port, _, _ in fec))),
        )


class _Interval(NamedTuple):
    """One host's two samples in a batch, and the seconds between them."""

    at: int
    """The sample's place in the batch."""
    previous: HostSample
    current: HostSample
    dt_s: float


class RateTracker:
    """Keeps each host's previous sample and derives the rate gauges of the next one.

    ``max_gap_s``: intervals longer than this are flagged ``gap`` (pass about
    3x the collection interval). ``layouts``: shared with whoever reads the
    samples (a collector's streams), so that hosts of one shape share one
    ``RatePlan``; plans and alignments are kept here, ``most`` of each.
    """

    def __init__(self, max_gap_s: float = 10.0, layouts: SeriesLayouts | None = None, most: int = 1024) -> None:
        self.max_gap_s = max_gap_s
        self.layouts = layouts if layouts is not None else SeriesLayouts()
        self.most = most
        self._previous: dict[str, HostSample] = {}
        """Per host, its last sample with a clock that went forward (values as ``PackedValues``)."""
        self._plans: dict[SeriesLayout, RatePlan] = {}
        self._alignments: dict[tuple[SeriesLayout, SeriesLayout], Places] = {}
        """(previous layout, current layout) -> each counter's place in the previous one, -1 where it lacks it."""

    def forget(self, host: str) -> None:
        """Drop the host's history (it was removed, or its next sample must not be compared)."""
        self._previous.pop(host, None)

    def update(self, sample: HostSample) -> DerivedRates:
        """``derive([sample])``: the gauges of one sample."""
        return self.derive((sample,))[0]

    def derive(self, samples: Sequence[HostSample]) -> list[DerivedRates]:
        """The gauges of each sample against its host's previous one (none for a host's first
        sample), each sample then its host's previous. One host at most once: its next sample
        needs this one's result.

        The samples of hosts of one shape are derived together, a few dozen array operations
        whatever their number; a counter that did not simply rise (a wrap, a reset, a saturated
        counter, a value that is not a number) is judged on its own by ``counter_delta``.
        """
        results: list[DerivedRates | None] = [None] * len(samples)
        groups: dict[tuple[SeriesLayout, SeriesLayout], list[_Interval]] = {}
        hosts: set[str] = set()
        for at, sample in enumerate(samples):
            host = sample.host
            if host in hosts:
                raise ValueError(f"two samples of {host} in one batch: the second needs the first's rates")
            hosts.add(host)
            current = sample if type(sample.values) is PackedValues else \
                HostSample(host, sample.ts, self.layouts.packed(sample.values))
            previous = self._previous.get(host)
            if previous is None:
                self._previous[host] = current
                results[at] = DerivedRates(HostSample(host, sample.ts, _NO_VALUES), ())
                continue
            dt_s = current.ts - previous.ts
            if not 0 < dt_s < math.inf:  # NaN too
                if dt_s < 0:  # the node's clock stepped back: start over from this sample
                    self._previous[host] = current
                detail = f"timestamp {current.ts} is not after the previous {previous.ts}"
                results[at] = DerivedRates(HostSample(host, current.ts, _NO_VALUES),
                                           (FlaggedSeries("", "", "", RateFlag.CLOCK, detail),))
                continue
            self._previous[host] = current
            pair = (_layout(previous), _layout(current))
            groups.setdefault(pair, []).append(_Interval(at, previous, current, dt_s))
        for (before, layout), intervals in groups.items():
            for interval, derived in zip(intervals, self._derived(before, layout, intervals), strict=True):
                results[interval.at] = derived
        return results  # type: ignore[return-value]  # every place was set above

    def _plan(self, layout: SeriesLayout) -> RatePlan:
        plan = self._plans.get(layout)
        if plan is None:
            plan = self._plans[layout] = RatePlan.of(layout, self.layouts)
            if len(self._plans) > self.most:
                del self._plans[next(iter(self._plans))]
        return plan

    def _alignment(self, before: SeriesLayout, layout: SeriesLayout) -> Places:
        aligned = self._alignments.get((before, layout))
        if aligned is None:
            index = before.index
            aligned = self._alignments[(before, layout)] = np.array(
                [index.get(key, -1) for key in layout.keys], dtype=np.intp)
            if len(self._alignments) > self.most:
                del self._alignments[next(iter(self._alignments))]
        return aligned

    def _derived(self, before: SeriesLayout, layout: SeriesLayout, intervals: list[_Interval]) -> list[DerivedRates]:
        """The rates of ``intervals``, whose previous samples are all of ``before`` and current ones of
        ``layout``: one row per interval, each value of ``layout`` a column."""
        plan = self._plan(layout)
        dt_s = np.array([interval.dt_s for interval in intervals])
        now = _rows([interval.current for interval in intervals], layout)
        was = _rows([interval.previous for interval in intervals], before)
        had: Flags | None = None
        if before is not layout:
            aligned = self._alignment(before, layout)
            had = aligned >= 0
            was = was[:, np.maximum(aligned, 0)] if len(before.keys) else np.zeros_like(now)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf are judged one by one below
            valid = (was <= now) & (now < plan.saturated_at)  # rose, or stood, as almost every counter does
            valid |= plan.not_counter
            delta = now - was
        judged = valid if had is None else valid | ~had  # a counter the previous sample lacks has no delta
        flags: list[list[FlaggedSeries]] = [[] for _ in intervals]
        if not judged.all():
            keys = layout.keys
            for line, place in zip(*(side.tolist() for side in np.nonzero(~judged)), strict=True):
                previous, current = float(was[line, place]), float(now[line, place])
                counted = counter_delta(previous, current, float(dt_s[line]), plan.specs[place])
                if counted.flag is not None:
                    metric, device, port = keys[place]
                    flags[line].append(FlaggedSeries(metric, device, port, counted.flag,
                                                     flag_detail(counted.flag, previous, current)))
                if counted.delta is not None:
                    delta[line, place] = counted.delta
                    valid[line, place] = True
        if had is not None:
            valid &= had
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            rows, present = _rate_rows(plan, delta, dt_s[:, None], None if valid.all() else valid)
        complete: list[bool] = np.logical_and.reduce(present, axis=1).tolist()
        size = rows.shape[1] * 8
        data = memoryview(rows.tobytes())
        out = []
        for line, interval in enumerate(intervals):
            row = array("d")
            row.frombytes(data[line * size:(line + 1) * size])
            if complete[line]:
                values = PackedValues(plan.rates, row)
            else:
                kept = present[line].tolist()
                values = PackedValues(self.layouts.of(tuple(compress(plan.rates.keys, kept))),
                                      array("d", compress(row, kept)))
            caveats = flags[line]
            if interval.dt_s > self.max_gap_s:
                caveats.insert(0, FlaggedSeries("", "", "", RateFlag.GAP,
                                                f"{interval.dt_s:.1f} s since the previous sample"))
            sample = interval.current
            out.append(DerivedRates(HostSample(sample.host, sample.ts, values), tuple(caveats)))
        return out


def _layout(sample: HostSample) -> SeriesLayout:
    values = sample.values
    assert isinstance(values, PackedValues)  # the tracker packs every sample it keeps
    return values.layout


def _rows(samples: list[HostSample], layout: SeriesLayout) -> Floats:
    """The values of ``samples`` (all of ``layout``), one row each."""
    joined = b"".join([sample.values.data for sample in samples])  # type: ignore[attr-defined]
    return np.frombuffer(joined, dtype=np.float64).reshape(len(samples), len(layout.keys))


def _rate_rows(plan: RatePlan, delta: Floats, dt_s: Floats, valid: Flags | None) -> tuple[Floats, Flags]:
    """Each line's rate row (``plan.rates``) and which of its values it has: a gauge where its counter
    has a delta; a port's ``errors_per_s`` where one of its error counters has one, summed in the
    layout's order; a ``pre_fec_ber`` where both FEC counters have one and bits were received.
    ``delta``: every value's, by line; ``dt_s``: each line's seconds (a column); ``valid``: where
    there is a delta (None: everywhere)."""
    lines = len(delta)
    gauges, ports, fec = len(plan.gauge_places), int(plan.error_ports.max(initial=-1)) + 1, len(plan.fec_corrected)
    rows = np.empty((lines, gauges + ports + fec))
    present = np.ones(rows.shape, dtype=np.bool_)
    rows[:, :gauges] = delta[:, plan.gauge_places] / dt_s * plan.gauge_factors
    if valid is not None:
        present[:, :gauges] = valid[:, plan.gauge_places]
    if ports:
        per_s = delta[:, plan.error_places] / dt_s
        which = (np.arange(lines)[:, None] * ports + plan.error_ports).ravel()
        counted = None if valid is None else valid[:, plan.error_places]
        if counted is not None:
            per_s = np.where(counted, per_s, 0.0)
            present[:, gauges:gauges + ports] = np.bincount(
                which, weights=counted.ravel(), minlength=lines * ports).reshape(lines, ports) > 0
        # bincount adds in the order given: each port's counters one after another, as a walk would
        rows[:, gauges:gauges + ports] = np.bincount(
            which, weights=per_s.ravel(), minlength=lines * ports).reshape(lines, ports)
    if fec:
        corrected, received = delta[:, plan.fec_corrected], delta[:, plan.fec_received]
        rows[:, gauges + ports:] = corrected / received
        got = received != 0
        if valid is not None:
            got &= valid[:, plan.fec_corrected] & valid[:, plan.fec_received]
        present[:, gauges + ports:] = got
    return rows, present
