"""``RateTracker.update_changed_batch``: many hosts' lines at once, exactly what ``update`` gives each."""

from __future__ import annotations

import random

import pytest

from fleet.fabric.rates import RateTracker, spec_for
from fleet.fabric.rates_batch import BATCH_FROM
from fleet.fabric.samples import HostSample, PackedValues, SeriesKey, packed

_COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_prio3_pause", "np_cnp_sent", "symbol_error",
             "link_downed", "port_rcv_errors", "rx_discards_phy", "rx_bits_phy", "rx_corrected_bits_phy",
             "out_of_sequence", "gpu_xid_count")
_MAXIMUM = {metric: spec_for(metric).maximum for metric in _COUNTERS if spec_for(metric).saturates}
_FEC = ("rx_bits_phy", "rx_corrected_bits_phy")


def _keys() -> list[SeriesKey]:
    keys: list[SeriesKey] = []
    for device in ("mlx5_0", "mlx5_1", "mlx5_2"):
        keys += [(metric, device, "1") for metric in _COUNTERS]
        keys += [("port_state", device, "1"), ("rate_gbps", device, "1")]
    return keys


def _move(rng: random.Random, metric: str, value: float, odd: float) -> float:
    """Mostly up, as a busy port's counters go; with probability ``odd`` a wrap, a reset, or a
    counter reaching its maximum (lines the batch leaves to ``update_changed``)."""
    top = _MAXIMUM.get(metric)
    if rng.random() < odd:
        if top is not None:
            return float(top)
        return float(rng.randrange(2**64 - 1000, 2**64) if value < 2**63 else rng.randrange(0, 10))
    if top is not None:  # IB error counters: one at a time, far from their maximum
        return value + 1.0
    return value + rng.choice((1.0, 3.0, 7.0, 2.0**40, 123456.0, 0.1))


@pytest.mark.parametrize("odd", [0.0, 0.002, 0.02])
@pytest.mark.parametrize("seed", range(8))
def test_each_host_gets_what_update_gives_it(seed: int, odd: float) -> None:
    """Twelve hosts of one shape, every host's line of a second in one batch (in a shuffled
    order), against a tracker per host doing ``update`` on whole samples, and against
    ``update_changed`` one line at a time: the same gauges to the bit, the same flags, the
    same keys in the same order (the store's layout of a line depends on it)."""
    rng = random.Random(seed)
    keys = _keys()
    hosts = [f"n{i}" for i in range(12)]
    values = {host: {key: float(rng.randrange(0, 100 if key[0] in _MAXIMUM else 10**6)) for key in keys}
              for host in hosts}
    whole = {host: RateTracker(max_gap_s=3.0) for host in hosts}
    one_by_one, batched = RateTracker(max_gap_s=3.0), RateTracker(max_gap_s=3.0)
    ts = {host: 1764430000.0 + rng.random() for host in hosts}
    for host in hosts:
        first = HostSample(host, ts[host], packed(dict(values[host])))
        assert batched.update(first) == whole[host].update(first) == one_by_one.update(first)
    packed_results = 0
    for _ in range(40):
        lines = []
        for host in rng.sample(hosts, len(hosts)):
            ts[host] += rng.choice((1.0, 1.0, 1.0, 0.25, 5.0))
            moved = [key for key in keys if key[0] in _FEC and rng.random() < 0.97]
            moved = list(dict.fromkeys(moved + rng.sample(keys, rng.randrange(0, 12))))  # as an agent's slots
            for key in moved:
                if key[0] in _COUNTERS:
                    values[host][key] = _move(rng, key[0], values[host][key], odd)
                else:
                    values[host][key] = float(rng.randrange(5))
            sample = HostSample(host, ts[host], packed(dict(values[host])))
            lines.append((sample, [keys.index(key) for key in moved]))
        got = batched.update_changed_batch(lines)
        for (sample, places), derived in zip(lines, got, strict=True):
            expected = whole[sample.host].update(sample)
            alone = one_by_one.update_changed(sample, places=places)
            assert derived.sample.values == expected.sample.values
            assert derived.flags == expected.flags
            assert list(derived.sample.values) == list(alone.sample.values)
            assert derived.sample.host == sample.host and derived.sample.ts == sample.ts
            packed_results += isinstance(derived.sample.values, PackedValues)
    if odd < 0.02:  # most lines went through the arrays, not one by one
        assert packed_results > 40 * 12 * 0.5


def test_a_port_whose_fec_counters_stood_still_is_left_to_update_changed() -> None:
    """No ratio for a port whose FEC counters did not move (``derive`` keeps none): that line
    is worked out one by one, the other host's in the batch."""
    keys = _keys()
    tracker, reference = RateTracker(), RateTracker()
    hosts = ("a", "b", "c", "d")[:max(BATCH_FROM, 2)]  # enough of one shape for the arrays
    values = {host: dict.fromkeys(keys, 100.0) for host in hosts}
    for host in values:
        tracker.update(HostSample(host, 1.0, packed(dict(values[host]))))
        reference.update(HostSample(host, 1.0, packed(dict(values[host]))))
    for ts in (2.0, 3.0):  # the first changed line of a host sets up its standing rates
        lines = []
        for host in hosts:
            moved = [key for key in keys if key[0] in _FEC and (host != "b" or key[1] != "mlx5_1" or ts == 2.0)]
            for key in moved:
                values[host][key] += 1000.0
            lines.append((HostSample(host, ts, packed(dict(values[host]))), [keys.index(key) for key in moved]))
        got = tracker.update_changed_batch(lines)
        for (sample, _), derived in zip(lines, got, strict=True):
            assert derived == reference.update(sample)
    assert isinstance(got[0].sample.values, PackedValues)
    assert not isinstance(got[1].sample.values, PackedValues)
    assert ("pre_fec_ber", "mlx5_1", "1") not in got[1].sample.values


def test_two_lines_of_one_host_are_refused() -> None:
    tracker = RateTracker()
    sample = HostSample("n1", 1.0, packed({("tx_bytes", "mlx5_0", "1"): 1.0}))
    tracker.update(sample)
    later = HostSample("n1", 2.0, packed({("tx_bytes", "mlx5_0", "1"): 2.0}))
    with pytest.raises(ValueError, match="two lines of n1"):
        tracker.update_changed_batch([(later, [0]), (later, [0])])


def test_fewer_lines_than_batch_from_go_one_by_one() -> None:
    """For a line or two, numpy's fixed cost is more than the loop's: they go through update_changed."""
    tracker = RateTracker()
    hosts = [f"n{i}" for i in range(BATCH_FROM - 1)]
    for ts in (1.0, 2.0, 3.0):
        lines = [(HostSample(host, ts, packed({("tx_bytes", "mlx5_0", "1"): ts})), [0]) for host in hosts]
        got = [tracker.update(sample) for sample, _ in lines] if ts == 1.0 else tracker.update_changed_batch(lines)
    assert all(not isinstance(derived.sample.values, PackedValues) for derived in got)
    assert all(derived.sample.values == {("tx_gbps", "mlx5_0", "1"): 8e-9} for derived in got)
