"""``RateBatch``: nodes' changed-only lines held for a moment, derived together, each node's in order."""

from __future__ import annotations

import asyncio

from test_agent_changed_only import simulated_lines
from test_agent_packed import _bad, _packed_of, packed_texts

from fleet.collectors.agent_reader import WRITE_TOGETHER_FROM, AgentStream
from fleet.collectors.optics import optics_values
from fleet.collectors.rate_batch import RateBatch
from fleet.fabric.rates import DerivedRates, RateTracker
from fleet.fabric.rates_batch import BATCH_FROM
from fleet.fabric.samples import HostSample, PackedValues, SeriesKey, packed

_KEYS: list[SeriesKey] = [(metric, device, "1") for device in ("mlx5_0", "mlx5_1")
                          for metric in ("tx_bytes", "rx_bytes", "rx_bits_phy", "rx_corrected_bits_phy",
                                         "symbol_error", "port_state")]
_MOVING = [at for at, key in enumerate(_KEYS) if key[0] not in ("symbol_error", "port_state")]


def _line(host: str, ts: float) -> HostSample:
    """Every counter but the errors up by ``ts`` x something of the host's own."""
    scale = 1000.0 * (1 + int(host[1:]))
    return HostSample(host, ts, packed({key: 0.0 if key[0] in ("symbol_error", "port_state") else ts * scale
                                        for key in _KEYS}))


async def test_lines_wait_then_go_together_with_what_update_gives() -> None:
    hosts = [f"n{i}" for i in range(BATCH_FROM + 4)]
    tracker, reference = RateTracker(), {host: RateTracker() for host in hosts}
    batch = RateBatch(tracker, hold_s=0.05)
    kept: list[tuple[HostSample, DerivedRates]] = []
    for ts in (1.0, 2.0):  # a first full line, then one to set up the standing rates
        for host in hosts:
            sample = _line(host, ts)
            reference[host].update(sample)
            tracker.update(sample) if ts == 1.0 else tracker.update_changed(sample, places=_MOVING)
    all_kept = asyncio.Event()

    def keep(sample: HostSample, rates: DerivedRates) -> None:
        kept.append((sample, rates))
        if len(kept) == len(hosts):
            all_kept.set()

    for host in hosts:
        batch.add(_line(host, 3.0), _MOVING, keep)
    assert kept == [] and all(batch.holds(host) for host in hosts)
    await asyncio.wait_for(all_kept.wait(), 10)  # after the hold (0.05 s), not at each line
    assert [sample.host for sample, _ in kept] == hosts
    assert not any(batch.holds(host) for host in hosts)
    for sample, rates in kept:
        assert isinstance(rates.sample.values, PackedValues)  # derived in one pass
        assert rates == reference[sample.host].update(sample)


async def test_a_nodes_next_line_lets_its_held_one_go_first() -> None:
    tracker, reference = RateTracker(), RateTracker()
    batch = RateBatch(tracker, hold_s=10.0)
    kept: list[tuple[HostSample, DerivedRates]] = []
    for ts in (1.0, 2.0):
        reference.update(_line("n1", ts))
        tracker.update(_line("n1", ts)) if ts == 1.0 else tracker.update_changed(_line("n1", ts), places=_MOVING)
    for ts in (3.0, 4.0, 6.0):
        batch.add(_line("n1", ts), _MOVING, lambda sample, rates: kept.append((sample, rates)))
    assert [sample.ts for sample, _ in kept] == [3.0, 4.0]
    batch.flush()
    assert [sample.ts for sample, _ in kept] == [3.0, 4.0, 6.0]
    for sample, rates in kept:
        assert rates == reference.update(sample)


async def test_a_full_batch_goes_at_once() -> None:
    tracker = RateTracker()
    batch = RateBatch(tracker, hold_s=10.0, most=BATCH_FROM)
    kept: list[str] = []
    for at in range(BATCH_FROM):
        host = f"n{at}"
        tracker.update(_line(host, 1.0))
        batch.add(_line(host, 2.0), _MOVING, lambda sample, _: kept.append(sample.host))
    assert kept == [f"n{at}" for at in range(BATCH_FROM)]


async def test_held_agent_lines_are_written_then_derived_and_a_bad_one_is_refused() -> None:
    """Packed agent lines of nodes of one shape, held: each kept line's sample and rates are those
    of the line read whole; the one whose numbers fail their checks goes to ``refused``, not kept."""
    lines = simulated_lines(4)
    hosts = WRITE_TOGETHER_FROM + BATCH_FROM
    texts = [packed_texts(lines, full_every=100, host=f"n{at}") for at in range(hosts)]
    texts[1][3] = _bad(texts[1][3], packed=_packed_of([0], [float("nan")]))
    tracker = RateTracker()
    batch = RateBatch(tracker, hold_s=10.0)
    streams = [AgentStream(f"n{at}", optics_values) for at in range(hosts)]
    whole = [(AgentStream(f"n{at}", optics_values), RateTracker()) for at in range(hosts)]
    kept: list[tuple[HostSample, DerivedRates]] = []
    refused: list[tuple[int, str]] = []
    for seq in range(len(lines)):
        for at, stream in enumerate(streams):
            read = stream.read(texts[at][seq], hold_slots=True)
            if read.changed_at is None:
                tracker.update(read.sample)
            else:
                batch.add(read.sample, read.changed_at, lambda sample, rates: kept.append((sample, rates)),
                          read.slots, lambda reason, at=at: refused.append((at, reason)))
        batch.flush()
    assert refused == [(1, "values: expected finite numbers under 1e300, got nan")]
    assert len(kept) == (len(lines) - 1) * hosts - 1
    expected: dict[tuple[str, float], tuple[HostSample, DerivedRates]] = {}
    for at, (stream, reference) in enumerate(whole):
        for seq, text in enumerate(texts[at]):
            if (at, seq) != (1, 3):
                sample = stream.read(text).sample
                expected[(sample.host, sample.ts)] = (sample, reference.update(sample))
    for sample, rates in kept:
        want_sample, want_rates = expected[(sample.host, sample.ts)]
        assert sample == want_sample and rates == want_rates
