"""``RateTracker.derive``, the one rate derivation, against the rules stated counter by counter
(tests/helpers/rates_reference.py): batches of hosts, in dicts or ``PackedValues``, with wraps,
resets, saturated counters, values that are not numbers, keys that come and go, gaps and clocks
that stand still or step back. The same gauges to the bit, the same flags in the same order."""

from __future__ import annotations

import math
import random

import pytest
from helpers.rates_reference import ReferenceTracker, same_rates

from fleet.fabric.rates import RateTracker, spec_for
from fleet.fabric.samples import HostSample, SeriesKey, SeriesLayouts

_COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_prio3_pause", "np_cnp_sent", "symbol_error",
             "link_downed", "port_rcv_errors", "rx_discards_phy", "rx_bits_phy", "rx_corrected_bits_phy",
             "out_of_sequence", "gpu_xid_count", "sw_tx_bytes", "port_xmit_wait")
_MAXIMUM = {metric: spec_for(metric).maximum for metric in _COUNTERS if spec_for(metric).saturates}


def _keys(devices: int = 3) -> list[SeriesKey]:
    keys: list[SeriesKey] = []
    for device in (f"mlx5_{n}" for n in range(devices)):
        keys += [(metric, device, "1") for metric in _COUNTERS]
        keys += [("port_state", device, "1"), ("rate_gbps", device, "1")]
    return keys


def _move(rng: random.Random, metric: str, value: float, odd: float) -> float:
    """Mostly up, as a busy port's counters go; with probability ``odd`` something else: a wrap, a
    reset, a counter reaching or sitting at its maximum, a value that is not a number."""
    top = _MAXIMUM.get(metric)
    if rng.random() < odd:
        roll = rng.random()
        if roll < 0.05:
            return rng.choice((math.nan, math.inf))
        if top is not None and roll < 0.5:
            return float(top)
        if roll < 0.7:
            return float(rng.randrange(0, 10))
        modulus = spec_for(metric).modulus
        return float(rng.randrange(modulus - 1000, modulus) if value < modulus / 2 else rng.randrange(0, 10))
    if not math.isfinite(value):
        return float(rng.randrange(0, 1000))
    if top is not None:  # IB error counters: one at a time
        return min(value + rng.choice((0.0, 1.0)), float(top))
    return value + rng.choice((0.0, 1.0, 3.0, 7.0, 2.0**40, 123456.0, 0.1))


@pytest.mark.parametrize("packed", [False, True], ids=["dicts", "packed"])
@pytest.mark.parametrize("odd", [0.0, 0.01, 0.1])
@pytest.mark.parametrize("seed", range(6))
def test_batches_of_hosts_get_what_the_rules_give_each(seed: int, odd: float, packed: bool) -> None:
    rng = random.Random(seed)
    keys = _keys()
    hosts = [f"n{i}" for i in range(10)]
    values = {host: {key: float(rng.randrange(0, 100 if key[0] in _MAXIMUM else 10**6)) for key in keys}
              for host in hosts}
    layouts = SeriesLayouts()
    tracker, reference = RateTracker(max_gap_s=3.0, layouts=layouts), ReferenceTracker(max_gap_s=3.0)
    ts = {host: 1764430000.0 + rng.random() for host in hosts}
    flagged = 0
    for _ in range(30):
        batch = []
        for host in rng.sample(hosts, rng.randrange(1, len(hosts) + 1)):
            for key in keys:
                if rng.random() < 0.4:
                    values[host][key] = _move(rng, key[0], values[host][key], odd) if key[0] in _COUNTERS \
                        else float(rng.randrange(5))
            ts[host] += rng.choice((1.0, 1.0, 1.0, 0.5, 5.0, 0.0, -1.0, math.nan)) if odd else 1.0
            plain = dict(values[host])
            batch.append(HostSample(host, ts[host], layouts.packed(plain) if packed else plain))
        for sample, got in zip(batch, tracker.derive(batch), strict=True):
            want = reference.update(HostSample(sample.host, sample.ts, dict(sample.values)))
            assert same_rates(got, want), (sample.host, sample.ts)
            flagged += bool(want.flags)
        for host in hosts:  # a NaN clock is no clock: start the host's time again
            if not math.isfinite(ts[host]):
                ts[host] = 1764430000.0 + 1000 * rng.random()
    assert flagged or not odd


@pytest.mark.parametrize("seed", range(10))
def test_keys_that_come_and_go(seed: int) -> None:
    """Samples whose keys differ from the previous ones (a counter cleared away, an optics reading
    on every few lines, a port that went): each counter is compared with its own previous value."""
    rng = random.Random(seed)
    keys = _keys(2)
    values: dict[SeriesKey, float] = {key: float(rng.randrange(0, 1000)) for key in keys}
    tracker, reference = RateTracker(max_gap_s=3.0), ReferenceTracker(max_gap_s=3.0)
    ts = 1764430000.0
    for step in range(80):
        ts += 1.0
        for key in rng.sample(keys, rng.randrange(0, 8)):
            values[key] = _move(rng, key[0], values.get(key, 0.0), 0.05) if key[0] in _COUNTERS else 1.0
        roll = rng.random()
        if roll < 0.2:
            values.pop(rng.choice(keys), None)
        elif roll < 0.4:
            values[("optics_temp_c", "mlx5_0", "")] = 40.0 + step
        elif roll < 0.5:
            values.pop(("optics_temp_c", "mlx5_0", ""), None)
        for key in keys:
            if key not in values and rng.random() < 0.3:
                values[key] = float(rng.randrange(0, 1000))
        order = list(values)
        if rng.random() < 0.1:
            rng.shuffle(order)
        sample = HostSample("n1", ts, {key: values[key] for key in order})
        assert same_rates(tracker.update(sample), reference.update(sample)), step


def test_a_port_whose_error_counters_all_give_no_rate_has_no_errors_per_s() -> None:
    """One error counter stuck at its maximum, the other reset: no ``errors_per_s`` (not 0)."""
    stuck, reset = ("symbol_error", "mlx5_0", "1"), ("port_rcv_errors", "mlx5_0", "1")
    tracker = RateTracker()
    tracker.update(HostSample("n1", 1.0, {stuck: 65535.0, reset: 10.0}))
    derived = tracker.update(HostSample("n1", 2.0, {stuck: 65535.0, reset: 3.0}))
    assert ("errors_per_s", "mlx5_0", "1") not in derived.sample.values
    assert [flag.flag.value for flag in derived.flags] == ["saturated", "reset"]
    again = tracker.update(HostSample("n1", 3.0, {stuck: 65535.0, reset: 5.0}))
    assert again.sample.values[("errors_per_s", "mlx5_0", "1")] == 2.0


def test_received_bits_without_corrected_bits_give_no_ber() -> None:
    received = ("rx_bits_phy", "mlx5_0", "1")
    tracker = RateTracker()
    for ts in (1.0, 2.0, 3.0):
        derived = tracker.update(HostSample("n1", ts, {received: ts * 1e9, ("port_state", "mlx5_0", "1"): 4.0}))
        assert ("pre_fec_ber", "mlx5_0", "1") not in derived.sample.values


def test_a_port_that_received_no_bits_has_no_ber_and_the_others_keep_theirs() -> None:
    keys = [(metric, device, "1") for device in ("mlx5_0", "mlx5_1") for metric in ("rx_corrected_bits_phy",
                                                                                   "rx_bits_phy")]
    tracker = RateTracker()
    tracker.update(HostSample("n1", 1.0, dict.fromkeys(keys, 0.0)))
    derived = tracker.update(HostSample("n1", 2.0, {keys[0]: 5.0, keys[1]: 1e9, keys[2]: 0.0, keys[3]: 0.0}))
    assert dict(derived.sample.values) == {("pre_fec_ber", "mlx5_0", "1"): 5e-9}


def test_a_sample_after_an_empty_one_has_no_rates_yet() -> None:
    tracker = RateTracker()
    tracker.update(HostSample("n1", 1.0, {}))
    assert dict(tracker.update(HostSample("n1", 2.0, {("tx_bytes", "mlx5_0", "1"): 8.0})).sample.values) == {}
    assert tracker.update(HostSample("n1", 3.0, {("tx_bytes", "mlx5_0", "1"): 16.0})).sample.values == {
        ("tx_gbps", "mlx5_0", "1"): 8 * 8 / 1e9}


def test_two_samples_of_one_host_in_one_batch_are_refused() -> None:
    tracker = RateTracker()
    with pytest.raises(ValueError, match="two samples of n1"):
        tracker.derive([HostSample("n1", 1.0, {}), HostSample("n1", 2.0, {})])


def test_hosts_of_one_shape_share_one_plan_and_rate_layout() -> None:
    layouts = SeriesLayouts()
    tracker = RateTracker(layouts=layouts)
    keys = _keys()
    for ts in (1.0, 2.0):
        derived = tracker.derive([HostSample(host, ts, {key: ts * 10 for key in keys}) for host in ("a", "b", "c")])
    assert len({id(rates.sample.values.layout) for rates in derived}) == 1  # type: ignore[attr-defined]
