"""Set-ups are paced: a bounded number in flight per budget, each place held only for the handshake
and the agent's start, no clock of a host's running while it waits on us; the fleet's progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.agent_reader import AgentKeys
from fleet.collectors.inventory import Inventory, load_inventory
from fleet.collectors.node_poller import CollectorStats, CollectSettings, NodePoller
from fleet.collectors.optics import OpticsReader
from fleet.collectors.rate_queue import RateQueue
from fleet.collectors.setup_gate import Budget, Progress, SetupGate, handshake
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.collectors.status import StatusBook
from fleet.collectors.switch_budget import MAX_PERIOD_S, SwitchBudget
from fleet.fabric.rates import RateTracker
from fleet.fabric.records import HostStatus
from fleet.fabric.samples import SeriesLayouts
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

HUNG_FROM_THE_START = """
[[faults]]
kind = "node_hang"
target = "gpu001"
at = 0

[[faults]]
kind = "node_unreachable"
target = "gpu003"
at = 0
"""
"""gpu001 accepts, authenticates and starts a command, but never answers; gpu003 refuses TCP."""


async def test_set_ups_in_flight_are_bounded_per_budget() -> None:
    nodes = [f"gpu{n:03d}" for n in range(12)]
    gate = SetupGate([*nodes, "leaf01"], node_setups=3, switch_setups=1)
    in_flight = 0
    most = 0
    release = asyncio.Event()

    async def set_up(host: str) -> None:
        nonlocal in_flight, most
        place = await gate.enter(host, Budget.NODES)
        in_flight += 1
        most = max(most, in_flight)
        await release.wait()
        in_flight -= 1
        place.ended()
        place.ended()  # a second end changes nothing

    tasks = [asyncio.ensure_future(set_up(host)) for host in nodes]
    while in_flight < 3:
        await asyncio.sleep(0)
    switch = await asyncio.wait_for(gate.enter("leaf01", Budget.SWITCHES), 5)  # its own places: no wait
    switch.ended()
    assert gate.progress().done == 1 and not gate.settled.is_set()
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert most == 3
    assert gate.progress().complete and gate.settled.is_set()


async def test_a_reconnection_goes_through_the_gate_but_counts_once() -> None:
    gate = SetupGate(["gpu001"], node_setups=1)
    (await gate.enter("gpu001", Budget.NODES)).ended()
    (await gate.enter("gpu001", Budget.NODES)).ended()
    assert gate.progress().done == 1 and gate.progress().total == 1


async def test_an_opened_place_goes_to_the_next_host_before_the_first_answer() -> None:
    gate = SetupGate(["gpu001", "gpu002"], node_setups=1)
    first = await gate.enter("gpu001", Budget.NODES)
    second = asyncio.ensure_future(gate.enter("gpu002", Budget.NODES))
    await asyncio.sleep(0)
    assert not second.done(), "one place, held"
    first.opened()
    first.opened()  # a second open frees nothing more
    (await asyncio.wait_for(second, 5)).opened()
    assert gate.progress() == Progress(0, 2), "opened is not answered: both still connecting"
    (await asyncio.wait_for(gate.enter("gpu003", Budget.NODES), 5)).ended()  # both places free again
    first.ended()
    assert gate.progress() == Progress(1, 2) and not gate.settled.is_set()


def test_an_empty_fleet_is_settled() -> None:
    assert SetupGate([]).settled.is_set()


def test_switch_polls_keep_to_their_share_of_the_cpu() -> None:
    budget = SwitchBudget(switches=64, interval_s=1.0, share=0.25)
    assert budget.period_s() == 1.0, "nothing measured yet: the interval"
    budget.spent(0.002)
    assert budget.period_s() == 1.0, "64 polls of 2 ms a second fit in a quarter of a CPU"
    for _ in range(50):
        budget.spent(0.03)
    assert abs(budget.period_s() - 64 * 0.03 / 0.25) < 0.01
    for _ in range(50):
        budget.spent(0.5)  # a machine far too busy: the switches still come every MAX_PERIOD_S
    assert budget.period_s() == MAX_PERIOD_S


@dataclass
class _Nodes:
    inventory: Inventory
    pool: SshPool
    status: StatusBook
    writer: StoreWriter
    marks: list[HostStatus]


@asynccontextmanager
async def _simulated(tmp_path: Path, pool_settings: PoolSettings) -> AsyncIterator[_Nodes]:
    """A real simulated fleet (``HUNG_FROM_THE_START``), its SSH pool and a status book that
    records every state a host is given."""
    writer = StoreWriter(tmp_path / "fleet.db").start()
    marks: list[HostStatus] = []
    async with running_fleet(small_scenario(HUNG_FROM_THE_START), tmp_path / "sim") as path:
        inventory = load_inventory(path)
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=pool_settings)
        try:
            yield _Nodes(inventory, pool, StatusBook(writer, marks.append), writer, marks)
        finally:
            await pool.close()
            writer.close()


def _poller(nodes: _Nodes, name: str, settings: CollectSettings, gate: SetupGate) -> NodePoller:
    layouts = SeriesLayouts()
    return NodePoller(nodes.inventory.host(name), nodes.pool, nodes.writer, nodes.status,
                      RateQueue(RateTracker(layouts=layouts)), settings, CollectorStats(), AgentKeys(layouts),
                      OpticsReader(), gate=gate)


async def _stopped(stop: asyncio.Event, *tasks: asyncio.Future[None]) -> None:
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 30)


async def test_a_node_holds_its_place_for_the_handshake_and_the_agents_start_not_its_first_line(
        tmp_path: Path) -> None:
    # gpu001's first line would be late only after ten minutes: were its place held until then,
    # gpu002, behind it for the only place, would not answer within the wait below.
    settings = CollectSettings(hung_after_s=600.0, slow_after_s=60.0)
    async with _simulated(tmp_path, PoolSettings(ssh_config=())) as nodes:
        gate = SetupGate(["gpu001", "gpu002"], node_setups=1)
        hung, healthy = (_poller(nodes, name, settings, gate) for name in ("gpu001", "gpu002"))
        ours = await gate.enter("test", Budget.NODES)  # both queue behind the test's place, gpu001 first
        stop = asyncio.Event()
        tasks = [asyncio.ensure_future(poller.run(stop)) for poller in (hung, healthy)]
        await asyncio.sleep(0)
        ours.opened()
        try:
            await asyncio.wait_for(healthy.got_sample.wait(), 60)
            assert nodes.pool.connected("gpu001"), "gpu001 went first: connected, its agent started"
            assert not hung.got_sample.is_set(), "gpu001 never answers"
        finally:
            await _stopped(stop, *tasks)
    assert [(m.host, m.state) for m in nodes.marks] == [("gpu002", HostState.OK)]


async def test_a_node_waiting_for_a_place_is_connecting_never_hung_or_slow(tmp_path: Path) -> None:
    settings = CollectSettings(interval_s=1.0, hung_after_s=2.0, slow_after_s=1.0)
    async with _simulated(tmp_path, PoolSettings(ssh_config=(), connect_timeout_s=settings.hung_after_s,
                                                 slow_threshold_s=settings.slow_after_s)) as nodes:
        gate = SetupGate(["gpu002"], node_setups=1)
        node = _poller(nodes, "gpu002", settings, gate)
        nodes.status.connecting(["gpu002"])
        ours = await gate.enter("test", Budget.NODES)
        stop = asyncio.Event()
        task = asyncio.ensure_future(node.run(stop))
        try:
            with pytest.raises(TimeoutError):  # twice its set-up's timeout and its slow mark, waiting on us
                await asyncio.wait_for(node.got_sample.wait(), 2 * settings.hung_after_s)
            status = nodes.status.get("gpu002")
            assert status is not None and status.state is HostState.CONNECTING
            ours.opened()
            await asyncio.wait_for(node.got_sample.wait(), 60)
        finally:
            await _stopped(stop, task)
    assert [(m.host, m.state) for m in nodes.marks] == [("gpu002", HostState.OK)]


async def test_a_command_holds_its_place_for_the_handshake_alone(tmp_path: Path) -> None:
    async with _simulated(tmp_path, PoolSettings(ssh_config=())) as nodes:
        gate = SetupGate(["leaf01", "gpu003"], switch_setups=1)
        place = await gate.enter("leaf01", Budget.SWITCHES)
        assert await handshake(nodes.pool, "leaf01", place) is None
        assert nodes.pool.connected("leaf01")
        refused = await asyncio.wait_for(gate.enter("gpu003", Budget.SWITCHES), 5)  # the place is free again
        assert gate.progress() == Progress(0, 2), "connected is not answered"
        failed = await handshake(nodes.pool, "gpu003", refused)
        assert failed is not None and failed.state is HostState.UNREACHABLE
        (await asyncio.wait_for(gate.enter("leaf02", Budget.SWITCHES), 5)).opened()  # freed by a failure too
        assert await handshake(nodes.pool, "gpu001", None) is None, "no place: the command connects itself"
        assert not nodes.pool.connected("gpu001")


async def test_a_node_whose_lines_carry_only_what_moved_has_its_facts_spread_not_read_at_once(
        tmp_path: Path) -> None:
    """The agent sends a full line, then lines of what moved, whose values are filled in later.
    Such a line is not a node with nothing to show (no RDMA port, no GPU), whose facts are read at
    once: taken for one, a whole fleet's facts came in one second, as its set-up settled."""
    settings = CollectSettings(interval_s=0.5, hung_after_s=10.0, slow_after_s=5.0)
    async with _simulated(tmp_path, PoolSettings(ssh_config=())) as nodes:
        node = _poller(nodes, "gpu002", settings, SetupGate(["gpu002"]))
        stop = asyncio.Event()
        task = asyncio.ensure_future(node.run(stop))
        try:
            for _ in range(4):  # the full line, then what moved
                node.got_sample.clear()
                await asyncio.wait_for(node.got_sample.wait(), 30)
        finally:
            await _stopped(stop, task)
    assert not node.showed_nothing
