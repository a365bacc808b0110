"""Set-ups are paced: a bounded number in flight per budget, the fleet's progress, and its end."""

from __future__ import annotations

import asyncio

from fleet.collectors.setup_gate import Budget, SetupGate
from fleet.collectors.switch_budget import MAX_PERIOD_S, SwitchBudget


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
        place.release()
        place.release()  # a second release changes nothing

    tasks = [asyncio.ensure_future(set_up(host)) for host in nodes]
    while in_flight < 3:
        await asyncio.sleep(0)
    switch = await asyncio.wait_for(gate.enter("leaf01", Budget.SWITCHES), 5)  # its own places: no wait
    switch.release()
    assert gate.progress().done == 1 and not gate.settled.is_set()
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert most == 3
    assert gate.progress().complete and gate.settled.is_set()


async def test_a_reconnection_goes_through_the_gate_but_counts_once() -> None:
    gate = SetupGate(["gpu001"], node_setups=1)
    (await gate.enter("gpu001", Budget.NODES)).release()
    (await gate.enter("gpu001", Budget.NODES)).release()
    assert gate.progress().done == 1 and gate.progress().total == 1


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
