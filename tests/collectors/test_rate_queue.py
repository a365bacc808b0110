"""``RateQueue``: nodes' samples held for a moment, completed and derived together, each node's in
order, each handed on as one sample: its values, its rates, its readings."""

from __future__ import annotations

import asyncio

from helpers.agent_lines import full_samples, sent, simulated_lines
from helpers.rates_reference import ReferenceTracker

from fleet.collectors.agent_reader import AgentKeys, AgentStream
from fleet.collectors.optics import OpticsReader
from fleet.collectors.rate_queue import RateQueue
from fleet.fabric.rates import RateTracker
from fleet.fabric.samples import HostSample, PackedValues, SeriesKey, SeriesLayouts

_KEYS: list[SeriesKey] = [(metric, device, "1") for device in ("mlx5_0", "mlx5_1")
                          for metric in ("tx_bytes", "rx_bytes", "rx_bits_phy", "rx_corrected_bits_phy",
                                         "symbol_error", "port_state")]
OPTICS: SeriesKey = ("optics_temp_c", "mlx5_0", "")


def _sample(host: str, ts: float) -> HostSample:
    """Every counter but the errors up by ``ts`` x something of the host's own."""
    scale = 1000.0 * (1 + int(host[1:]))
    return HostSample(host, ts, {key: 0.0 if key[0] in ("symbol_error", "port_state") else ts * scale
                                 for key in _KEYS})


class _Done:
    """What the queue handed on, and an event once ``expected`` samples are in."""

    def __init__(self, expected: int) -> None:
        self.samples: list[HostSample] = []
        self.expected = expected
        self.all_in = asyncio.Event()

    def __call__(self, sample: HostSample) -> None:
        self.samples.append(sample)
        if len(self.samples) >= self.expected:
            self.all_in.set()


async def test_samples_wait_then_go_together_with_their_rates_and_readings() -> None:
    hosts = [f"n{i}" for i in range(8)]
    queue = RateQueue(RateTracker(), hold_s=0.05)
    reference = ReferenceTracker()
    done = _Done(2 * len(hosts))
    for ts in (1.0, 2.0):
        for host in hosts:
            queue.put(_sample(host, ts), done, {OPTICS: 40.0 + ts})
        assert len(done.samples) == (0 if ts == 1.0 else len(hosts))  # held until the timer, or the next of a host
    await asyncio.wait_for(done.all_in.wait(), 10)
    assert [sample.host for sample in done.samples] == hosts * 2
    for sample in done.samples[len(hosts):]:
        reference.update(_sample(sample.host, 1.0))
        rates = reference.update(_sample(sample.host, 2.0))
        assert isinstance(sample.values, PackedValues)  # values, rates and readings as one array
        assert dict(sample.values) == {**_sample(sample.host, 2.0).values, **rates.sample.values, OPTICS: 42.0}


async def test_a_full_queue_goes_at_once() -> None:
    queue = RateQueue(RateTracker(), hold_s=1000.0, most=4)
    done = _Done(4)
    for host in ("n0", "n1", "n2", "n3"):
        queue.put(_sample(host, 1.0), done)
    assert [sample.host for sample in done.samples] == ["n0", "n1", "n2", "n3"]
    queue.put(_sample("n0", 2.0), done)
    queue.flush()
    assert len(done.samples) == 5 and ("tx_gbps", "mlx5_0", "1") in done.samples[-1].values


async def test_streams_lines_are_completed_in_order_and_stored_as_their_full_lines() -> None:
    """Three nodes' changed-only lines, each node's next line put while its last is still held:
    every sample handed on is its full line's values, with the rates the rules give its counters."""
    lines = simulated_lines(8)
    layouts = SeriesLayouts()
    keys, optics = AgentKeys(layouts), OpticsReader()
    queue = RateQueue(RateTracker(layouts=layouts), hold_s=1000.0)
    hosts = ("n0", "n1", "n2")
    texts = {host: sent(lines, full_every=100, host=host) for host in hosts}
    streams = {host: AgentStream(host, optics, keys) for host in hosts}
    done = _Done(len(lines) * len(hosts))
    for seq in range(len(lines)):
        for host in hosts:
            read = streams[host].read(texts[host][seq])
            queue.put(read.sample, done, read.optics, read.moved)
    queue.flush()
    expected = {host: full_samples(lines, host) for host in hosts}
    references = {host: ReferenceTracker() for host in hosts}
    seen = {host: 0 for host in hosts}
    for sample in done.samples:
        whole = expected[sample.host][seen[sample.host]]
        seen[sample.host] += 1
        counters = {key: value for key, value in whole.values.items() if not key[0].startswith("optics_")}
        rates = references[sample.host].update(HostSample(whole.host, whole.ts, counters))
        assert dict(sample.values) == {**whole.values, **rates.sample.values}
    assert seen == {host: len(lines) for host in hosts}
