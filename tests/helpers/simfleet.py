"""A real simulated fleet, in-process, on loopback: what collector and console tests talk to.

The simulator listens with real asyncssh servers on 127.x addresses and
writes its state dir (inventory, known_hosts, client key) exactly as
``fleet sim`` does; tests then use that inventory like a user would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from fleet.simulator.main import serve
from fleet.simulator.scenario import Scenario, parse_scenario

SMALL_FLEET = """
[fabric]
nodes = {nodes}
nodes_per_leaf = 4
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 3

[[switch_os]]
names = "leaf[09-16]"
os = "sonic"

[[jobs]]
id = 501
tenant = "acme"
nodes = "gpu[001-004]"
load = 0.6

{faults}
"""


def small_scenario(faults: str = "", nodes: int = 8) -> Scenario:
    return parse_scenario(SMALL_FLEET.format(faults=faults, nodes=nodes), source="small-fleet.toml")


@contextlib.asynccontextmanager
async def running_fleet(scenario: Scenario, state_dir: Path) -> AsyncIterator[Path]:
    """Start the simulator, yield its inventory path once it is ready, stop it afterwards."""
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.ensure_future(serve(scenario, state_dir, ready=lambda _line: ready.set(), stop=stop))
    waiter = asyncio.ensure_future(ready.wait())
    done, _ = await asyncio.wait({task, waiter}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
    if waiter not in done:
        waiter.cancel()
        stop.set()
        raise RuntimeError(f"simulator did not become ready: {task.exception() if task.done() else 'timeout'}")
    try:
        yield state_dir / "inventory.toml"
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=30)
