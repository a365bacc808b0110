"""The link test's scheduling: rounds kept per NIC, no global barrier, and the same report however probes interleave.

The probes here are a stand-in for ``run_perftest`` (no SSH): called, it
"starts its server", waits for the probes ``after`` (its NICs' previous ones)
as the real probe does before its client, then records which NICs measure and
when, takes a seeded number of event-loop turns to finish (so probes end in a
different order from the one they started in), frees the client's NIC a few
turns before the server's, and answers a p99 that depends only on the pair,
so two runs can be compared value for value.
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

import fleet.collectors.probes.linktest as linktest
from fleet.collectors.inventory import CablingRow
from fleet.collectors.probes.linktest import LinktestReport, LinktestSpec, run_linktest
from fleet.collectors.probes.perftest_probe import GidCache, PerftestSpec
from fleet.collectors.probes.ports import PortAllocator
from fleet.collectors.sshpool import SshPool
from fleet.fabric.naming import nic_name
from fleet.fabric.pairing import PairTest, schedule
from fleet.fabric.records import ProbeRecord

pytestmark = pytest.mark.timeout(20)

NODES9 = tuple(f"gpu{k:03d}" for k in range(1, 10))
SLOW_NIC = ("gpu004", "mlx5_1")
"""Every probe through this NIC answers far above the rail's reference: a bad NIC to localize."""


@dataclass
class FakePerftest:
    """Stands in for run_perftest: checks that a NIC is never in two measurements at once, records the order."""

    seed: int = 0
    hold: frozenset[str] = frozenset()
    """A probe between these two nodes waits for ``release`` (a straggler)."""
    release: asyncio.Event = field(default_factory=asyncio.Event)
    busy: set[tuple[str, str]] = field(default_factory=set)
    overlaps: list[tuple[str, str]] = field(default_factory=list)
    started: list[tuple[str, str, int, int | None]] = field(default_factory=list)
    ended: list[tuple[str, str, int, int | None]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: Counter[tuple[str, str]] = field(default_factory=Counter)
    """NICs with a probe waiting for ``after`` (its server started, its client not yet)."""
    most_waiting: int = 0

    async def __call__(
        self, pool: SshPool, spec: PerftestSpec, *, ports: PortAllocator | None = None, gids: GidCache | None = None,
        on_stage: Callable[[str], None] | None = None, after: Sequence[asyncio.Future[Any]] = (),
        on_client_ended: Callable[[], None] | None = None,
    ) -> ProbeRecord:
        ends = [(spec.src, spec.src_nic), (spec.dst, spec.server_nic)]
        self.waiting.update(ends)
        self.most_waiting = max(self.most_waiting, *(self.waiting[end] for end in ends))
        self._tell()
        if after:
            await asyncio.wait(after)
        self.waiting.subtract(ends)
        if on_stage is not None:
            on_stage("client")
        self.overlaps += [end for end in ends if end in self.busy]
        self.busy.update(ends)
        key = (spec.src, spec.dst, int(spec.src_nic.rsplit("_", 1)[1]), spec.flow_label)
        self.started.append(key)
        self._tell()
        if {spec.src, spec.dst} == self.hold:
            await self.release.wait()
        draw = random.Random(_stable((self.seed, key)))
        for _ in range(draw.randrange(12)):  # a probe's own work, of varying length: not a wait for anything
            await asyncio.sleep(0)
        self.busy.discard(ends[0])  # the client has exited; the server prints its half a little later
        if on_client_ended is not None:
            on_client_ended()
        for _ in range(draw.randrange(12)):
            await asyncio.sleep(0)
        self.busy.discard(ends[1])
        self.ended.append(key)
        if on_stage is not None:
            on_stage("done")
        self._tell()
        slow = SLOW_NIC in ends
        p99 = (40.0 if slow else 2.0) + _stable((spec.src, spec.dst, spec.src_nic, spec.flow_label)) % 100 / 1000
        result: dict[str, Any] = {"p99_usec": p99, "p999_usec": p99 + 0.5, "t_typical_usec": p99 - 0.3}
        return ProbeRecord(ts=0.0, kind="lat", src=spec.src, dst=spec.dst, src_nic=spec.src_nic,
                           dst_nic=spec.server_nic, ok=True, result=result, run_id=spec.run_id)

    def _tell(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    async def until(self, condition: Any, timeout_s: float = 5.0) -> None:
        """Wait (bounded) until ``condition()`` holds, woken by every start and end."""
        async with asyncio.timeout(timeout_s):
            while not condition():
                await self.changed.wait()


def _stable(value: object) -> int:
    """A hash that is the same in every process (``hash`` of a str is salted per process)."""
    return zlib.crc32(repr(value).encode())


def _cabling(nodes: tuple[str, ...], rails: tuple[int, ...]) -> list[CablingRow]:
    """Three leaves per rail, nodes spread over them."""
    return [CablingRow(node, nic_name(rail), f"leaf{rail}{k % 3}", f"swp{k}")
            for k, node in enumerate(nodes) for rail in rails]  # fmt: skip


async def _run(fake: FakePerftest, spec: LinktestSpec, monkeypatch: pytest.MonkeyPatch) -> LinktestReport:
    monkeypatch.setattr(linktest, "run_perftest", fake)
    pool = SshPool(())
    try:
        return await run_linktest(pool, spec, cabling=_cabling(spec.nodes, spec.rails), run_id="fixed")
    finally:
        await pool.close()


def _round_of(spec: LinktestSpec) -> dict[tuple[str, str, int], int]:
    rounds = schedule(spec.nodes, spec.rails, spec.mode, sample_rounds=spec.sample_rounds, seed=spec.seed)
    return {(t.src, t.dst, t.rail): r for r, tests in enumerate(rounds) for t in tests}


@pytest.mark.parametrize("mode", ["mesh", "rail", "sample"])
async def test_every_pair_runs_once_no_nic_twice_and_rounds_in_order(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = LinktestSpec(NODES9, rails=(0, 1), mode=mode, flows=2, local_checks=False, sample_rounds=3)
    fake = FakePerftest(seed=7)
    report = await _run(fake, spec, monkeypatch)
    round_of = _round_of(spec)
    expected = Counter((src, dst, rail, label) for (src, dst, rail) in round_of
                       for label in linktest.flow_labels(PairTest(src, dst, rail), 2, roce=False))
    assert Counter(fake.started) == expected and max(expected.values()) == 1
    assert fake.overlaps == []
    assert fake.most_waiting == 1  # a NIC's next probe waits for its turn, never two of them
    assert len(fake.ended) == len(fake.started) == len(report.outcomes) == sum(expected.values())
    for node in NODES9:
        for rail in spec.rails:
            mine = [round_of[k[:3]] for k in fake.started if node in k[:2] and k[2] == rail]
            assert mine == sorted(mine), f"{node} rail {rail} ran its rounds out of order"
    assert fake.ended != fake.started  # probes really ended in another order than they started
    assert 0 < report.probes_seconds <= report.seconds


async def test_a_straggler_holds_back_only_the_probes_that_wait_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # One pair of the first round hangs. Its two nodes' next partners must wait, and theirs, and so on
    # (2, 4, 8, 16 nodes held by the first four rounds); with 32 nodes the other half still reaches the
    # fourth round meanwhile.
    nodes = tuple(f"gpu{k:03d}" for k in range(1, 33))
    spec = LinktestSpec(nodes, rails=(0,), local_checks=False)
    round_of = _round_of(spec)
    first = next(k for k, r in round_of.items() if r == 0)
    held = set(first[:2])
    fake = FakePerftest(hold=frozenset(held))
    running = asyncio.ensure_future(_run(fake, spec, monkeypatch))
    try:

        def others_reached_round_3() -> bool:
            return any(round_of[k[:3]] >= 3 and not held & set(k[:2]) for k in fake.ended)

        await fake.until(others_reached_round_3)  # with a barrier per round this never holds
        # the next probes of the straggler's NICs have started their servers and wait for it to end
        await fake.until(lambda: all(fake.waiting[(node, "mlx5_0")] == 1 for node in held))
        assert [k[:3] for k in fake.started if held & set(k[:2])] == [first]  # the straggler's nodes moved no further
        assert not running.done()
        fake.release.set()
        report = await asyncio.wait_for(running, 10)
    finally:
        running.cancel()
    assert len(report.outcomes) == 32 * 31 // 2 and fake.overlaps == []


async def test_the_report_is_the_same_as_one_probe_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    def spec(parallel: int) -> LinktestSpec:
        return LinktestSpec(NODES9, rails=(0, 1), flows=2, local_checks=False, max_parallel=parallel)

    serial = await _run(FakePerftest(seed=1), spec(1), monkeypatch)
    pipelined = await _run(FakePerftest(seed=2), spec(512), monkeypatch)
    assert (serial.suspects[0].kind, serial.suspects[0].node, serial.suspects[0].nic) == ("nic", *SLOW_NIC)
    assert pipelined.outcomes == serial.outcomes
    assert (pipelined.bad, pipelined.suspects, pipelined.references_usec, pipelined.rounds) == (
        serial.bad, serial.suspects, serial.references_usec, serial.rounds)
    assert [pipelined.matrix(rail) for rail in (0, 1)] == [serial.matrix(rail) for rail in (0, 1)]
    assert {k: v for k, v in pipelined.to_json().items() if k != "seconds"} == {
        k: v for k, v in serial.to_json().items() if k != "seconds"}


async def test_one_slot_means_one_probe_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePerftest(seed=3)
    in_flight: list[int] = []
    original = fake.__call__

    async def counted(pool: SshPool, spec: PerftestSpec, **kwargs: Any) -> ProbeRecord:
        in_flight.append(len(fake.started) - len(fake.ended))
        return await original(pool, spec, **kwargs)

    monkeypatch.setattr(linktest, "run_perftest", counted)
    pool = SshPool(())
    try:
        await run_linktest(pool, LinktestSpec(NODES9[:6], rails=(0,), local_checks=False, max_parallel=1))
    finally:
        await pool.close()
    assert len(in_flight) == 15 and set(in_flight) == {0}
