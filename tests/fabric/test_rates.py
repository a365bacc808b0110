"""Counters to rates: units, wraps, saturated IB counters, resets, gaps."""

from __future__ import annotations

import pytest

from fleet.fabric.rates import (
    WRAP32,
    WRAP64,
    CounterDelta,
    FlaggedSeries,
    RateFlag,
    RateTracker,
    counter_delta,
    spec_for,
)
from fleet.fabric.samples import METRICS, HostSample, SeriesKey

P = ("mlx5_0", "1")


def sample(ts: float, **counters: float) -> HostSample:
    return HostSample("gpu001", ts, {(name, *P): value for name, value in counters.items()})


def track(*samples: HostSample, max_gap_s: float = 10.0) -> list[tuple[dict[SeriesKey, float], tuple[FlaggedSeries, ...]]]:
    tracker = RateTracker(max_gap_s=max_gap_s)
    out = []
    for item in samples:
        derived = tracker.update(item)
        assert derived.sample.host == item.host and derived.sample.ts == item.ts
        out.append((dict(derived.sample.values), derived.flags))
    return out


def test_first_sample_has_no_rates() -> None:
    assert track(sample(100.0, tx_bytes=4.0)) == [({}, ())]


def test_throughput_from_word_counters() -> None:
    # port_xmit_data advanced by 12.5e9 words in 1 s: 50e9 bytes = 400 Gb/s
    words0, words1 = 2880761508848, 2880761508848 + 12_500_000_000
    _, (values, flags) = track(sample(0.0, tx_bytes=words0 * 4, rx_bytes=0), sample(1.0, tx_bytes=words1 * 4, rx_bytes=25e9))
    assert values[("tx_gbps", *P)] == pytest.approx(400.0)
    assert values[("rx_gbps", *P)] == pytest.approx(200.0)
    assert flags == ()


def test_dcqcn_and_pause_rates_and_ber() -> None:
    first = sample(10.0, rx_prio3_pause=100, tx_prio3_pause=0, np_cnp_sent=1052612505, rp_cnp_handled=7,
                   np_ecn_marked_roce_packets=21278189006, rx_bits_phy=0, rx_corrected_bits_phy=0)
    second = sample(12.0, rx_prio3_pause=300, tx_prio3_pause=10, np_cnp_sent=1052612505 + 4000, rp_cnp_handled=7,
                    np_ecn_marked_roce_packets=21278189006 + 8000, rx_bits_phy=8e11, rx_corrected_bits_phy=8e3)
    _, (values, _) = track(first, second)
    assert values[("rx_pause_per_s", *P)] == 100
    assert values[("tx_pause_per_s", *P)] == 5
    assert values[("cnp_sent_per_s", *P)] == 2000
    assert values[("cnp_handled_per_s", *P)] == 0
    assert values[("ecn_marked_per_s", *P)] == 4000
    assert values[("pre_fec_ber", *P)] == pytest.approx(1e-8)


def test_64_bit_wrap_gives_a_flagged_rate() -> None:
    modulus = 4 * 2**64  # values are float64: near 2^66 they are 2^14 apart
    _, (values, flags) = track(sample(0.0, tx_bytes=float(modulus - 2**20)), sample(1.0, tx_bytes=float(2**20)))
    assert values[("tx_gbps", *P)] == 2**21 * 8 / 1e9
    assert [flag.flag for flag in flags] == [RateFlag.WRAPPED]


def test_32_bit_wrap() -> None:
    assert counter_delta(2**32 - 100, 50, 2.0, WRAP32) == CounterDelta(150, 75.0, RateFlag.WRAPPED)
    assert counter_delta(100, 50, 2.0, WRAP32).flag is RateFlag.RESET  # a big drop is no wrap


def test_reset_after_driver_reload_is_not_a_negative_rate() -> None:
    _, (values, flags) = track(sample(0.0, tx_bytes=4e12, rx_prio3_pause=5000), sample(1.0, tx_bytes=4e3, rx_prio3_pause=3))
    assert ("tx_gbps", *P) not in values and ("rx_pause_per_s", *P) not in values
    assert {(flag.metric, flag.flag) for flag in flags} == {("tx_bytes", RateFlag.RESET), ("rx_prio3_pause", RateFlag.RESET)}
    assert all(value >= 0 for value in values.values())


def test_saturated_counters_from_the_real_capture_give_no_rate() -> None:
    # tests/fixtures/sysfs/gpud-pr943-mlx5_1-counters-saturated.txt: 255, 65535, 15, 4294967295
    before = sample(0.0, link_downed=254, port_xmit_discards=65535, excessive_buffer_overrun_errors=15,
                    port_xmit_wait=4294967000, symbol_error=10, port_rcv_switch_relay_errors=2)
    after = sample(1.0, link_downed=255, port_xmit_discards=65535, excessive_buffer_overrun_errors=15,
                   port_xmit_wait=4294967295, symbol_error=13, port_rcv_switch_relay_errors=2)
    _, (values, flags) = track(before, after)
    saturated = {flag.metric for flag in flags if flag.flag is RateFlag.SATURATED}
    assert saturated == {"link_downed", "port_xmit_discards", "excessive_buffer_overrun_errors", "port_xmit_wait"}
    assert values[("errors_per_s", *P)] == 3  # only the counters that still count: symbol_error +3
    assert all("at least this many" in flag.detail for flag in flags)


def test_saturating_counter_that_went_down_was_cleared() -> None:
    assert counter_delta(200, 3, 1.0, spec_for("link_downed")).flag is RateFlag.RESET
    assert counter_delta(3, 3, 1.0, spec_for("link_downed")) == CounterDelta(0, 0.0)


def test_gap_gives_the_average_rate_flagged() -> None:
    _, (values, flags) = track(sample(0.0, rx_prio3_pause=0), sample(30.0, rx_prio3_pause=600), max_gap_s=5.0)
    assert values[("rx_pause_per_s", *P)] == 20
    assert [(flag.metric, flag.flag) for flag in flags] == [("", RateFlag.GAP)]


def test_timestamp_that_does_not_advance() -> None:
    tracker = RateTracker()
    tracker.update(sample(5.0, tx_bytes=0))
    same = tracker.update(sample(5.0, tx_bytes=400))
    assert same.sample.values == {} and same.flags[0].flag is RateFlag.CLOCK
    back = tracker.update(sample(4.0, tx_bytes=800))  # clock stepped back: start over from here
    assert back.flags[0].flag is RateFlag.CLOCK
    after = tracker.update(sample(5.0, tx_bytes=1200))
    assert after.sample.values[("tx_gbps", *P)] == pytest.approx(400 * 8 / 1e9)


def test_hosts_are_tracked_apart_and_forgotten() -> None:
    tracker = RateTracker()
    tracker.update(HostSample("a", 0.0, {("tx_bytes", *P): 0.0}))
    tracker.update(HostSample("b", 0.0, {("tx_bytes", *P): 1e9}))
    assert tracker.update(HostSample("a", 1.0, {("tx_bytes", *P): 1e9})).sample.values[("tx_gbps", *P)] == 8
    tracker.forget("b")
    assert tracker.update(HostSample("b", 1.0, {("tx_bytes", *P): 2e9})).sample.values == {}


def test_derived_gauges_are_catalogue_gauges() -> None:
    _, (values, _) = track(sample(0.0, tx_bytes=0, sw_rx_bytes=0, symbol_error=0), sample(1.0, tx_bytes=8, sw_rx_bytes=8, symbol_error=1))
    assert {key[0] for key in values} == {"tx_gbps", "sw_rx_gbps", "errors_per_s"}
    assert all(METRICS[key[0]].kind.value == "gauge" for key in values)
    assert spec_for("np_cnp_sent") is WRAP64
