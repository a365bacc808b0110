"""Counters into rates, honestly: wraps, saturated IB counters, resets and gaps.

Pure functions and one small stateful tracker; no I/O, no clock (time comes
from the samples' ``ts``, unix seconds).

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
"""

from __future__ import annotations

import functools
import math
from array import array
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import cast

import numpy as np

from fleet.fabric.counters import IB_SATURATING_COUNTER_BITS
from fleet.fabric.rates_batch import BATCH_FROM, Places, RatePlan, batch_rates
from fleet.fabric.samples import (
    METRICS,
    HostSample,
    MetricKind,
    PackedValues,
    SeriesKey,
    SeriesLayout,
    for_lookups,
    layout_of,
    value_items,
)


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


COUNTER_SPECS: dict[str, CounterSpec] = {
    "tx_bytes": CounterSpec(4 * 2**64, saturates=False),  # 64-bit word counter x 4
    "rx_bytes": CounterSpec(4 * 2**64, saturates=False),
    **{name: _saturating(bits) for name, bits in IB_SATURATING_COUNTER_BITS.items()},
}
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


GAUGE_SOURCES: dict[str, tuple[str, float]] = {
    "tx_gbps": ("tx_bytes", 8 / 1e9),
    "rx_gbps": ("rx_bytes", 8 / 1e9),
    "rx_pause_per_s": ("rx_prio3_pause", 1.0),
    "tx_pause_per_s": ("tx_prio3_pause", 1.0),
    "cnp_sent_per_s": ("np_cnp_sent", 1.0),
    "cnp_handled_per_s": ("rp_cnp_handled", 1.0),
    "ecn_marked_per_s": ("np_ecn_marked_roce_packets", 1.0),
    "sw_rx_gbps": ("sw_rx_bytes", 8 / 1e9),
    "sw_tx_gbps": ("sw_tx_bytes", 8 / 1e9),
}
"""Rate gauge -> (counter, factor from per-second counter units to the gauge's unit)."""

NIC_ERROR_METRICS: frozenset[str] = frozenset(
    name for name, spec in METRICS.items()
    if spec.kind is MetricKind.ERROR and not name.startswith(("gpu_", "sw_"))
)
"""Error counters of a NIC port summed into ``errors_per_s``."""


class RateTracker:
    """Keeps each host's previous sample and derives the rate gauges of the next one.

    ``max_gap_s``: intervals longer than this are flagged ``gap`` (pass about
    3x the collection interval).
    """

    def __init__(self, max_gap_s: float = 10.0) -> None:
        self.max_gap_s = max_gap_s
        self._previous: dict[str, HostSample] = {}
        self._still: dict[str, _Still] = {}
        self._whole_next: set[str] = set()

    def forget(self, host: str) -> None:
        """Drop the host's history (it was removed, or its next sample must not be compared)."""
        self._previous.pop(host, None)
        self._still.pop(host, None)
        self._whole_next.discard(host)

    def update_changed(self, sample: HostSample, changed: Collection[SeriesKey] = (), *,
                       places: Sequence[int] | None = None) -> DerivedRates:
        """``update(sample)``, same result, with work in proportion to ``changed``.

        The caller promises that every counter of ``sample`` not in ``changed``
        is in the host's previous sample with the same value (an agent's
        changed-only line); keys that came or went need ``update``. ``places``,
        instead of ``changed``: where the changed values sit in ``sample.values``
        (a ``PackedValues``; an agent stream knows), which spares a lookup per key.
        """
        previous = self._previous.get(sample.host)
        dt_s = sample.ts - previous.ts if previous is not None else 0.0
        if previous is None or dt_s <= 0 or not math.isfinite(dt_s):
            # update() may keep the older sample (a clock that stood still): the next
            # line's changes are then not against it, so it is compared whole too.
            self._still.pop(sample.host, None)
            self._whole_next.add(sample.host)
            return self.update(sample)
        if sample.host in self._whole_next:
            self._whole_next.discard(sample.host)
            return self.update(sample)
        still = self._still.get(sample.host)
        if still is None or still.keys is not previous.values:
            still = _Still.of(sample)
        derived = still.derive(previous, sample, _moved(previous.values, sample.values, changed, places),
                               dt_s, self.max_gap_s)
        if derived is None:  # a saturating counter reached or left its maximum: the slow way
            self._still.pop(sample.host, None)
            return self.update(sample)
        self._previous[sample.host] = sample
        still.keys = sample.values
        self._still[sample.host] = still
        return derived

    def update_changed_batch(self, lines: Sequence[tuple[HostSample, Sequence[int] | Places]]) -> list[DerivedRates]:
        """``update_changed(sample, places=places)`` of each line, in one pass of array arithmetic
        (``fleet.fabric.rates_batch``) for those of hosts of one shape, with the same results.

        Each line is of a different host: a host's next line needs this one's result.
        A line the batch cannot do exactly, or one of fewer than ``BATCH_FROM`` of its
        shape, goes through ``update_changed``.
        """
        results: list[DerivedRates | None] = [None] * len(lines)
        groups: dict[RatePlan, list[tuple[int, HostSample, float, _Still]]] = {}
        hosts: set[str] = set()
        for at, (sample, places) in enumerate(lines):
            if sample.host in hosts:
                raise ValueError(f"two lines of {sample.host} in one batch: the second needs the first's rates")
            hosts.add(sample.host)
            batched = self._batched(sample)
            if batched is None:
                results[at] = self.update_changed(sample, places=_listed(places))
            else:
                plan, dt_s, still = batched
                groups.setdefault(plan, []).append((at, sample, dt_s, still))
        for plan, members in groups.items():
            if len(members) < BATCH_FROM:
                for at, sample, _, _ in members:
                    results[at] = self.update_changed(sample, places=_listed(lines[at][1]))
                continue
            rows, exact = batch_rates(
                plan, [cast(PackedValues, self._previous[sample.host].values).data for _, sample, _, _ in members],
                [cast(PackedValues, sample.values).data for _, sample, _, _ in members],
                [lines[at][1] for at, _, _, _ in members], np.array([dt_s for _, _, dt_s, _ in members]))
            row_bytes, size = memoryview(rows.tobytes()), rows.shape[1] * 8
            for (at, sample, dt_s, still), start, is_exact in zip(members, range(0, len(row_bytes), size),
                                                                   exact.tolist(), strict=True):
                if not is_exact:
                    results[at] = self.update_changed(sample, places=_listed(lines[at][1]))
                    continue
                data = array("d")
                data.frombytes(row_bytes[start:start + size])
                flags = still.flags
                if dt_s > self.max_gap_s:
                    flags = (FlaggedSeries("", "", "", RateFlag.GAP, f"{dt_s:.1f} s since the previous sample"), *flags)
                self._previous[sample.host] = sample
                still.keys = sample.values
                results[at] = DerivedRates(HostSample(sample.host, sample.ts, PackedValues(plan.layout, data)), flags)
        return cast(list[DerivedRates], results)

    def _batched(self, sample: HostSample) -> tuple[RatePlan, float, _Still] | None:
        """The plan, interval and standing rates with which ``update_changed_batch`` derives
        ``sample``; None when ``update_changed`` must (no previous sample, keys that changed,
        a counter at its maximum, values that are not a stream's)."""
        previous = self._previous.get(sample.host)
        if previous is None or sample.host in self._whole_next:
            return None
        dt_s = sample.ts - previous.ts
        still = self._still.get(sample.host)
        values, before = sample.values, previous.values
        if not (dt_s > 0 and math.isfinite(dt_s)) or still is None or still.keys is not before \
                or type(values) is not PackedValues or type(before) is not PackedValues \
                or values.layout.root is not before.layout.root:
            return None
        plan = still.plan_for(values.layout.root)
        return None if plan is None else (plan, dt_s, still)

    def update(self, sample: HostSample) -> DerivedRates:
        """The gauges of ``sample`` against the host's previous one (none for its first sample)."""
        previous = self._previous.get(sample.host)
        if previous is None:
            self._previous[sample.host] = sample
            return DerivedRates(HostSample(sample.host, sample.ts, {}), ())
        dt_s = sample.ts - previous.ts
        if dt_s <= 0:
            if dt_s < 0:  # the node's clock stepped back: start over from this sample
                self._previous[sample.host] = sample
            detail = f"timestamp {sample.ts} is not after the previous {previous.ts}"
            return DerivedRates(HostSample(sample.host, sample.ts, {}),
                                (FlaggedSeries("", "", "", RateFlag.CLOCK, detail),))
        self._previous[sample.host] = sample
        still = self._still.pop(sample.host, None)
        if still is not None and still.fits(sample):  # a periodic full line of the same shape
            still.keys = sample.values
            self._still[sample.host] = still
        return derive_rates(previous, sample, self.max_gap_s)


_RATED: dict[str, CounterSpec] = {
    name: spec_for(name) for name, spec in METRICS.items() if spec.kind is not MetricKind.GAUGE
}
"""Every counter and error counter of the catalogue with its wrap/saturation rule."""
_GAUGE_OF: dict[str, tuple[str, float]] = {counter: (gauge, factor) for gauge, (counter, factor) in GAUGE_SOURCES.items()}
"""Counter -> (its rate gauge, factor): each counter feeds at most one gauge."""


def _listed(places: Sequence[int] | Places) -> Sequence[int]:
    """Places as Python integers, which ``update_changed`` reads one by one."""
    return places.tolist() if isinstance(places, np.ndarray) else places


def derive_rates(previous: HostSample, current: HostSample, max_gap_s: float) -> DerivedRates:
    """Rate gauges between two samples of one host (``current.ts`` > ``previous.ts``).

    One pass over the counters (about 600 per line of a node with 8 NICs, once a
    second per node): a counter that simply went up is handled inline, only
    wraps, resets and saturated counters go through ``counter_delta``.
    """
    dt_s = current.ts - previous.ts
    flags: list[FlaggedSeries] = []
    if dt_s > max_gap_s:
        flags.append(FlaggedSeries("", "", "", RateFlag.GAP, f"{dt_s:.1f} s since the previous sample"))
    before_values = for_lookups(previous.values)
    values: dict[SeriesKey, float] = {}
    error_sums: dict[tuple[str, str], float] = {}
    corrected_bits: dict[tuple[str, str], float] = {}
    received_bits: dict[tuple[str, str], float] = {}
    get_rule = _RULES.get
    inline = dt_s > 0
    for key, value in value_items(current.values):
        rule = get_rule(key, _UNSEEN)
        if rule is _UNSEEN:
            rule = _rule_of(key)
        if rule is None:  # a gauge
            continue
        before = before_values.get(key)
        if before is None:
            continue
        saturated_at, gauge, factor, role, place, spec = rule
        delta: float | None
        if inline and before <= value < saturated_at:
            delta = value - before
        else:
            counted = counter_delta(before, value, dt_s, spec)
            delta = counted.delta
            if counted.flag is not None:
                flags.append(FlaggedSeries(key[0], key[1], key[2], counted.flag,
                                           _detail(counted.flag, before, value)))
        if delta is None:
            continue
        per_s = delta / dt_s
        if gauge is not None:
            values[gauge] = per_s * factor
        if role == _ERRORS:
            error_sums[place] = error_sums.get(place, 0) + per_s
        elif role == _FEC:
            if key[0] == "rx_corrected_bits_phy":
                corrected_bits[place] = delta
            else:
                received_bits[place] = delta
    for place, total in error_sums.items():
        values[_place_keys(place)[0]] = total
    for place, corrected in corrected_bits.items():
        received = received_bits.get(place)
        if received:
            values[_place_keys(place)[3]] = corrected / received
    return DerivedRates(HostSample(current.host, current.ts, values), tuple(flags))


def _detail(flag: RateFlag, previous: float, current: float) -> str:
    if flag is RateFlag.SATURATED:
        return f"stuck at its maximum {current:.0f}: at least this many, no rate"
    if flag is RateFlag.RESET:
        return f"went down from {previous:.0f} to {current:.0f}: reset (driver reload or cleared)"
    return f"wrapped from {previous:.0f} to {current:.0f}"


_ERRORS, _FEC = 1, 2
_FEC_METRICS = frozenset({"rx_corrected_bits_phy", "rx_bits_phy"})

_Feeds = tuple[float, SeriesKey | None, float, int, tuple[str, str], CounterSpec, int, float | None]
"""One counter of a host's sample, for ``update_changed``: (the value from which it counts as
saturated, ``inf`` if it wraps; the rate gauge it feeds; the factor to the gauge's unit; its role:
_ERRORS summed into its port's ``errors_per_s``, _FEC one side of ``pre_fec_ber``, else 0; its
(device, port); its rule; its place in the sample's order; its delta while it stands still).
A plain tuple: ``derive`` unpacks one per changed counter, a few hundred a second per node."""


@dataclass(slots=True)
class _Still:
    """A host's rates when no counter moved, and where each counter feeds: the base of
    ``RateTracker.update_changed``, valid while the host's keys and saturated counters stay."""

    keys: Mapping[SeriesKey, float]
    """The values of the sample this was last used with (identity: the next must follow it)."""
    values: dict[SeriesKey, float]
    flags: tuple[FlaggedSeries, ...]
    counters: dict[SeriesKey, _Feeds]
    """Every counter of the sample: its rule, its place in the sample's order, what it feeds."""
    place_errors: dict[tuple[str, str], tuple[tuple[SeriesKey, float | None], ...]]
    """NIC error counters per (device, port), in the sample's order (their sum is ``errors_per_s``),
    each with its delta while it stands still."""
    fec_keys: dict[tuple[str, str], tuple[SeriesKey, SeriesKey, SeriesKey]]
    """(device, port) -> the keys of its corrected bits, received bits and ``pre_fec_ber``."""
    stuck: tuple[tuple[SeriesKey, float, float | None], ...] | None
    """Each saturating counter with its maximum and its value if it sat there; None when a value
    of the sample was not finite. All that the rates of a sample standing still depend on."""
    plans: dict[SeriesLayout, RatePlan | None] = field(default_factory=dict)
    """Root layout -> this host's ``RatePlan`` for samples of it (None: none can be exact)."""

    def plan_for(self, root: SeriesLayout) -> RatePlan | None:
        """The ``RatePlan`` of samples of ``root`` (shared by every host of this shape); None while
        a counter sits at its maximum or a value is not finite (``derive`` handles those)."""
        if root in self.plans:
            return self.plans[root]
        plan = None
        if self.stuck is not None and all(feeds[7] is not None for feeds in self.counters.values()):
            bers = tuple(keys[2] for keys in self.fec_keys.values())
            plan = _plan(root, (*self.values, *bers), tuple(self.counters.items()))
        self.plans[root] = plan
        return plan

    @classmethod
    def of(cls, sample: HostSample) -> _Still:
        standing = derive_rates(HostSample(sample.host, sample.ts - 1.0, sample.values), sample, math.inf)
        counters: dict[SeriesKey, _Feeds] = {}
        place_errors: dict[tuple[str, str], list[tuple[SeriesKey, float | None]]] = {}
        fec_keys: dict[tuple[str, str], tuple[SeriesKey, SeriesKey, SeriesKey]] = {}
        for index, (key, value) in enumerate(value_items(sample.values)):
            rule = _RULES.get(key, _UNSEEN)
            if rule is _UNSEEN:
                rule = _rule_of(key)
            if rule is None:  # a gauge
                continue
            role, place = rule[3], rule[4]
            still = _still_delta(key, value)
            counters[key] = (*rule, index, still)
            if role == _ERRORS:
                place_errors.setdefault(place, []).append((key, still))
            elif role == _FEC and place not in fec_keys:
                fec_keys[place] = _place_keys(place)[1:]
        return cls({}, dict(standing.sample.values), standing.flags, counters,
                   {place: tuple(keys) for place, keys in place_errors.items()}, fec_keys,
                   _stuck(sample.values, counters))

    def fits(self, sample: HostSample) -> bool:
        """Whether this is also the base of ``sample``: the same counters in the same order (other
        keys, such as optics readings, may come and go), every value finite, the same saturating
        counters at their maximum. A node's full line every minute need not build it again."""
        if self.stuck is None:
            return False
        values, counters = sample.values, self.counters
        keys = [key for key in values if key[0] in _RATED]
        return len(keys) == len(counters) and keys == list(counters) and _stuck(values, counters) == self.stuck

    def derive(self, previous: HostSample, current: HostSample, moved: _Moved | None,
               dt_s: float, max_gap_s: float) -> DerivedRates | None:
        """``derive_rates(previous, current)`` from the changed values (``_moved``); None when it cannot be exact."""
        values = dict(self.values)
        flags: list[FlaggedSeries] = []
        deltas: dict[SeriesKey, float | None] = {}  # of the changed error and FEC counters only
        places: set[tuple[str, str]] = set()
        fec: set[tuple[str, str]] = set()
        if moved is None:
            return None
        for key, rule, before, value in moved:
            if rule is None:  # a gauge
                continue
            saturated_at, gauge, factor, role, place, spec = rule
            delta: float | None
            if before <= value < saturated_at:  # went up (or stood), as almost every counter does
                delta = value - before
            elif value >= saturated_at or before >= saturated_at:
                return None  # a saturating counter reached or left its maximum
            elif value >= before:
                delta = value - before
            else:
                counted = counter_delta(before, value, dt_s, spec)
                delta = counted.delta
                if counted.flag is not None:
                    flags.append(FlaggedSeries(key[0], key[1], key[2], counted.flag,
                                               _detail(counted.flag, before, value)))
            if gauge is not None:
                if delta is None:
                    values.pop(gauge, None)
                else:
                    values[gauge] = delta / dt_s * factor
            if role:
                deltas[key] = delta
                if role == _ERRORS:
                    places.add(place)
                else:
                    fec.add(place)
        for place in places:
            total: float | None = None
            for key, still in self.place_errors[place]:  # in the sample's order, as derive_rates sums them
                delta = deltas.get(key, still)
                if delta is not None:
                    total = delta / dt_s if total is None else total + delta / dt_s
            if total is None:
                values.pop(_place_keys(place)[0], None)
            else:
                values[_place_keys(place)[0]] = total
        get_delta = deltas.get
        for place, (corrected_key, received_key, ber_key) in self.fec_keys.items():
            # In the ports' order, as derive_rates (and rates_batch) leave the ratios.
            if place not in fec:
                continue
            corrected = get_delta(corrected_key, _UNMOVED)
            if corrected is _UNMOVED:
                corrected = self._delta_of(corrected_key, deltas)
            received = get_delta(received_key, _UNMOVED)
            if received is _UNMOVED:
                received = self._delta_of(received_key, deltas)
            if received and corrected is not None:
                values[ber_key] = corrected / received
            else:
                values.pop(ber_key, None)
        all_flags = list(self.flags)
        if flags:
            all_flags = sorted([*all_flags, *flags], key=lambda f: self.counters[(f.metric, f.device, f.port)][6])
        if dt_s > max_gap_s:
            all_flags.insert(0, FlaggedSeries("", "", "", RateFlag.GAP, f"{dt_s:.1f} s since the previous sample"))
        return DerivedRates(HostSample(current.host, current.ts, values), tuple(all_flags))

    def _delta_of(self, key: SeriesKey, deltas: Mapping[SeriesKey, float | None]) -> float | None:
        if key in deltas:
            return deltas[key]
        feeds = self.counters.get(key)
        return None if feeds is None else feeds[7]


_PLANS: dict[tuple[SeriesLayout, tuple[SeriesKey, ...]], RatePlan | None] = {}
"""Rate plans by root layout and rate keys: a fleet's nodes of one shape share one."""


def _plan(root: SeriesLayout, keys: tuple[SeriesKey, ...],
          counters: tuple[tuple[SeriesKey, _Feeds], ...]) -> RatePlan | None:
    """The shared ``RatePlan`` of ``root`` for standing rates of ``keys`` (then the BER keys) and
    ``counters`` (``_Still.counters``); None when they do not fit ``root``."""
    if (root, keys) in _PLANS:
        return _PLANS[(root, keys)]
    width, columns = len(root.keys), {key: at for at, key in enumerate(keys)}
    counter = np.zeros(width, dtype=np.bool_)
    saturated_at, factor = np.full(width, math.inf), np.zeros(width)
    gauge_col, error_col, fec_at = (np.full(width, -1, dtype=np.intp) for _ in range(3))
    fec_ports: dict[tuple[str, str], int] = {}
    plan = None
    for key, (maximum, gauge, gauge_factor, role, place, _, at, _) in counters:
        if at >= width or root.keys[at] != key or (gauge is not None and gauge not in columns):
            break
        counter[at], saturated_at[at], factor[at] = True, maximum, gauge_factor
        gauge_col[at] = columns[gauge] if gauge is not None else -1
        if role == _ERRORS:
            error_col[at] = columns.get(_place_keys(place)[0], -1)
            if error_col[at] < 0:
                break
        elif role == _FEC:
            port = fec_ports.setdefault(place, len(fec_ports))
            fec_at[at] = 2 * port + (key[0] != "rx_corrected_bits_phy")
    else:
        bers = [columns[_place_keys(place)[3]] for place in fec_ports]
        both_sides = np.bincount(fec_at[fec_at >= 0] // 2, minlength=len(fec_ports))
        if len(columns) == len(keys) and bers == list(range(len(keys) - len(bers), len(keys))) \
                and bool((both_sides == 2).all()):
            plan = RatePlan(layout_of(keys), width, counter, saturated_at, gauge_col, factor, error_col, fec_at,
                            np.array(bers, dtype=np.intp))
    if len(_PLANS) < _MAX_LAYOUT_PLANS:
        _PLANS[(root, keys)] = plan
    return plan


_MAX_LAYOUT_PLANS = 256


_Moved = Iterable[tuple[SeriesKey, "_Rule | None", float, float]]
"""(key, its rule, value before, value now) of each changed value."""


def _moved(before: Mapping[SeriesKey, float], now: Mapping[SeriesKey, float], changed: Collection[SeriesKey],
           places: Sequence[int] | None) -> _Moved | None:
    """What ``_Still.derive`` reads of each changed value (given by key, or by place in ``now``);
    None when one is not in ``before``.

    Two ``PackedValues`` of one root layout (a stream's lines between full lines, with or
    without optics) are read by place, and the rules come from a table of the layout's places:
    no per-key lookup at all."""
    if type(before) is PackedValues and type(now) is PackedValues and before.layout.root is now.layout.root:
        root = now.layout.root
        if places is None and all(map(root.index.__contains__, changed)):
            places = list(map(root.index.__getitem__, changed))
        if places is not None and (not places or max(places) < len(root.keys)):
            return zip(map(root.keys.__getitem__, places), map(_rules_of(root).__getitem__, places),
                       map(before.data.__getitem__, places), map(now.data.__getitem__, places), strict=True)
    if places is not None:
        if not isinstance(now, PackedValues):
            raise TypeError("changed values given by place need PackedValues")
        changed = list(map(now.layout.keys.__getitem__, places))
    befores = list(map(before.get, changed))
    if None in befores:
        return None
    return zip(changed, map(_rule_for, changed), cast(list[float], befores), map(now.__getitem__, changed),
               strict=True)


@functools.lru_cache(maxsize=256)
def _rules_of(layout: SeriesLayout) -> list[_Rule | None]:
    """A layout's rules by place, for ``_moved``: one table for every host of that layout."""
    return list(map(_rule_for, layout.keys))


def _rule_for(key: SeriesKey) -> _Rule | None:
    rule = _RULES.get(key, _UNSEEN)
    return _rule_of(key) if rule is _UNSEEN else rule


_Rule = tuple[float, SeriesKey | None, float, int, tuple[str, str], CounterSpec]
"""The first six of ``_Feeds``: what a counter's key alone says about its rate."""
_RULES: dict[SeriesKey, _Rule | None] = {}
"""Series key -> its ``_Rule``, None for a gauge: one table for every host (a fleet's nodes have the
same devices), kept hot in the CPU's caches while thousands of lines a second go through ``derive``."""
_MAX_RULES = 1 << 16
"""Keys kept in ``_RULES``; beyond that (garbled input) a key's rule is worked out each time."""
_UNSEEN: _Rule = (0.0, None, 0.0, 0, ("", ""), WRAP64)


def _rule_of(key: SeriesKey) -> _Rule | None:
    metric = key[0]
    spec = _RATED.get(metric)
    rule: _Rule | None = None
    if spec is not None:
        target = _GAUGE_OF.get(metric)
        role = _ERRORS if metric in NIC_ERROR_METRICS else _FEC if metric in _FEC_METRICS else 0
        rule = (spec.maximum if spec.saturates else math.inf,
                (target[0], key[1], key[2]) if target else None, target[1] if target else 0.0,
                role, (key[1], key[2]), spec)
    if len(_RULES) < _MAX_RULES:
        _RULES[key] = rule
    return rule


_UNMOVED = math.nan
"""``derive``: a counter that is not among the changed (identity, never a delta's own object)."""
_PLACE_KEYS: dict[tuple[str, str], tuple[SeriesKey, SeriesKey, SeriesKey, SeriesKey]] = {}
"""(device, port) -> the keys of its ``errors_per_s``, corrected bits, received bits and ``pre_fec_ber``;
shared by every host, as ``_RULES``."""


def _place_keys(place: tuple[str, str]) -> tuple[SeriesKey, SeriesKey, SeriesKey, SeriesKey]:
    keys = _PLACE_KEYS.get(place)
    if keys is None:
        keys = (("errors_per_s", *place), ("rx_corrected_bits_phy", *place), ("rx_bits_phy", *place),
                ("pre_fec_ber", *place))
        if len(_PLACE_KEYS) < _MAX_RULES:
            _PLACE_KEYS[place] = keys
    return keys


def _stuck(values: Mapping[SeriesKey, float],
           counters: Mapping[SeriesKey, _Feeds]) -> tuple[tuple[SeriesKey, float, float | None], ...] | None:
    """The saturating counters of ``values`` with their maximum and their value if they sit there;
    None when a value is not finite (its rates standing still are not those of finite ones)."""
    values = for_lookups(values)
    if not math.isfinite(sum(values.values())):
        return None
    stuck = []
    for key, feeds in counters.items():
        maximum = feeds[0]
        if maximum != math.inf:
            value = values[key]
            stuck.append((key, maximum, value if value >= maximum else None))
    return tuple(stuck)


def _still_delta(key: SeriesKey, value: float) -> float | None:
    """The delta of a counter that did not move: 0, or None (no rate) when it sits at its maximum."""
    spec = _RATED[key[0]]
    return None if spec.saturates and value >= spec.maximum else 0.0
