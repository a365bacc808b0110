"""``RateTracker.update_changed`` (changed-only agent lines) gives exactly what ``update`` gives."""

from __future__ import annotations

import random

import pytest

from fleet.fabric.rates import RateTracker
from fleet.fabric.samples import HostSample, SeriesKey, packed

_COUNTERS = ("tx_bytes", "rx_bytes", "tx_packets", "rx_prio3_pause", "np_cnp_sent", "symbol_error",
             "link_downed", "port_rcv_errors", "rx_discards_phy", "rx_bits_phy", "rx_corrected_bits_phy",
             "out_of_sequence", "gpu_xid_count")
_MAXIMUM = {"symbol_error": 2**16 - 1, "link_downed": 2**8 - 1}


def _keys() -> list[SeriesKey]:
    keys: list[SeriesKey] = []
    for device in ("mlx5_0", "mlx5_1"):
        keys += [(metric, device, "1") for metric in _COUNTERS]
        keys += [("port_state", device, "1"), ("rate_gbps", device, "1")]
    return keys


def _move(rng: random.Random, metric: str, value: float) -> float:
    """A new counter value: mostly up, sometimes a wrap, a reset, or a stay at/away from a maximum."""
    top = _MAXIMUM.get(metric)
    roll = rng.random()
    if top is not None and roll < 0.15:
        return float(top)
    if top is None and roll < 0.08:
        return float(rng.randrange(2**64 - 1000, 2**64) if value < 2**63 else rng.randrange(0, 1000))
    if roll < 0.13:
        return float(rng.randrange(0, 10))
    return value + rng.choice((1.0, 7.0, 2.0**40, 123456.0))


@pytest.mark.parametrize("given", ["keys", "packed keys", "packed places"])
@pytest.mark.parametrize("seed", range(30))
def test_same_rates_and_flags_as_update(seed: int, given: str) -> None:
    """Changed values named by key in a dict, by key in ``PackedValues``, or by place (as a stream does)."""
    rng = random.Random(seed)
    keys = _keys()
    values: dict[SeriesKey, float] = {key: float(rng.randrange(0, 1000)) for key in keys}
    whole, changed_only = RateTracker(max_gap_s=3.0), RateTracker(max_gap_s=3.0)
    ts = 1764430000.0
    first = HostSample("n1", ts, dict(values))
    assert whole.update(first) == changed_only.update(HostSample("n1", ts, packed(dict(values))))
    for _ in range(80):
        ts += rng.choice((1.0, 1.0, 0.5, 5.0))
        changed = rng.sample(keys, rng.randrange(0, 6))
        for key in changed:
            values[key] = _move(rng, key[0], values[key]) if key[0] in _COUNTERS else float(rng.randrange(5))
        sample = HostSample("n1", ts, dict(values))
        expected = whole.update(sample)
        if given == "keys":
            got = changed_only.update_changed(sample, changed)
        else:
            sample = HostSample("n1", ts, packed(dict(values)))
            got = changed_only.update_changed(sample, changed) if given == "packed keys" else \
                changed_only.update_changed(sample, places=[keys.index(key) for key in changed])
        assert got.sample.values == expected.sample.values
        assert got.flags == expected.flags


def test_clock_that_did_not_advance_is_flagged_like_update() -> None:
    """A line whose clock stood still is not kept as the previous one: the next line's
    changes (against that line) must not be taken as changes against the older one."""
    tracker, reference = RateTracker(), RateTracker()
    keys = [("tx_bytes", "mlx5_0", "1"), ("rx_bytes", "mlx5_0", "1")]
    values = dict.fromkeys(keys, 10.0)
    for step, ts in enumerate((100.0, 101.0, 101.0, 102.0, 103.0, 99.0, 100.0, 101.0)):
        moved = keys[step % 2]
        values[moved] += 4.0 * (step + 1)
        sample = HostSample("n1", ts, dict(values))
        assert tracker.update_changed(sample, [moved]) == reference.update(sample)


def test_a_port_whose_only_other_error_counter_sits_at_its_maximum() -> None:
    """Every error counter of the port gives no rate (one stuck at its maximum, one reset):
    no ``errors_per_s``, as ``update`` gives, rather than 0."""
    stuck, reset = ("symbol_error", "mlx5_0", "1"), ("port_rcv_errors", "mlx5_0", "1")
    tracker, reference = RateTracker(), RateTracker()
    values = {stuck: 65535.0, reset: 10.0, ("tx_bytes", "mlx5_0", "1"): 0.0}
    for ts, moved, value in ((1.0, None, 0.0), (2.0, "tx", 8.0), (3.0, "reset", 3.0), (4.0, "reset", 5.0)):
        changed: list[SeriesKey] = []
        if moved == "tx":
            values[("tx_bytes", "mlx5_0", "1")] += value
            changed = [("tx_bytes", "mlx5_0", "1")]
        elif moved == "reset":
            values[reset] = value
            changed = [reset]
        sample = HostSample("n1", ts, dict(values))
        got = tracker.update(sample) if moved is None else tracker.update_changed(sample, changed)
        want = reference.update(sample)
        assert got.sample.values == want.sample.values
        assert got.flags == want.flags
        if ts == 3.0:  # the reset: no error counter of the port has a rate
            assert ("errors_per_s", "mlx5_0", "1") not in got.sample.values
    assert got.sample.values[("errors_per_s", "mlx5_0", "1")] == 2.0


def test_received_bits_without_corrected_bits_give_no_ber() -> None:
    received = ("rx_bits_phy", "mlx5_0", "1")
    tracker, reference = RateTracker(), RateTracker()
    for ts in (1.0, 2.0, 3.0):
        sample = HostSample("n1", ts, {received: ts * 1e9, ("port_state", "mlx5_0", "1"): 4.0})
        got = tracker.update(sample) if ts == 1.0 else tracker.update_changed(sample, [received])
        assert got == reference.update(sample)
        assert ("pre_fec_ber", "mlx5_0", "1") not in got.sample.values


@pytest.mark.parametrize("seed", range(20))
def test_full_lines_between_changed_ones_give_what_update_gives(seed: int) -> None:
    """Every few lines a full line (``update``) in which anything may move: a counter reaching or
    leaving its maximum, a key going or coming back, optics-like gauges that come and go. The
    changed-only lines after it must still give exactly what ``update`` gives."""
    rng = random.Random(seed)
    keys = _keys()
    values: dict[SeriesKey, float] = {key: float(rng.randrange(0, 1000)) for key in keys}
    whole, changed_only = RateTracker(max_gap_s=3.0), RateTracker(max_gap_s=3.0)
    ts = 1764430000.0
    for step in range(120):
        ts += 1.0
        if step % 7 == 0:
            for key in rng.sample(keys, rng.randrange(0, 4)):
                values[key] = _move(rng, key[0], values.get(key, 0.0)) if key[0] in _COUNTERS else 1.0
            roll = rng.random()
            if roll < 0.2:
                values.pop(rng.choice(keys), None)
            elif roll < 0.4:
                values[("optics_temp_c", "mlx5_0", "")] = 40.0 + step
            for key in keys:
                if key not in values and rng.random() < 0.5:
                    values[key] = float(rng.randrange(0, 1000))
            sample = HostSample("n1", ts, dict(values))
            got = changed_only.update(sample)
        else:
            values.pop(("optics_temp_c", "mlx5_0", ""), None)
            changed = [key for key in rng.sample(keys, rng.randrange(0, 6)) if key in values]
            for key in changed:
                values[key] = _move(rng, key[0], values[key]) if key[0] in _COUNTERS else float(rng.randrange(5))
            sample = HostSample("n1", ts, dict(values))
            got = changed_only.update_changed(sample, changed)
        expected = whole.update(sample)
        assert got.sample.values == expected.sample.values, step
        assert got.flags == expected.flags, step


@pytest.mark.parametrize("seed", range(10))
def test_hosts_with_the_same_devices_keep_their_own_rates(seed: int) -> None:
    """The counters' rules are one table for every host (the same devices on every node): hosts
    interleaved in one tracker each get exactly what ``update`` gives them alone."""
    rng = random.Random(seed)
    keys = _keys()
    hosts = ("n1", "n2", "n3")
    values = {host: {key: float(rng.randrange(0, 1000)) for key in keys} for host in hosts}
    whole = {host: RateTracker(max_gap_s=3.0) for host in hosts}
    changed_only = RateTracker(max_gap_s=3.0)
    ts = 1764430000.0
    for host in hosts:
        first = HostSample(host, ts, dict(values[host]))
        assert whole[host].update(first) == changed_only.update(first)
    for _ in range(60):
        ts += 1.0
        for host in rng.sample(hosts, len(hosts)):
            changed = rng.sample(keys, rng.randrange(0, 8))
            for key in changed:
                before = values[host][key]
                values[host][key] = _move(rng, key[0], before) if key[0] in _COUNTERS else float(rng.randrange(5))
            sample = HostSample(host, ts, dict(values[host]))
            expected, got = whole[host].update(sample), changed_only.update_changed(sample, changed)
            assert got.sample.values == expected.sample.values
            assert got.flags == expected.flags
