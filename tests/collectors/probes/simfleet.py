"""A small simulated fleet, started in-process, and an SSH pool that reaches it (probe tests' helpers).

The fleet is the real simulator (asyncssh listeners on loopback, the simulated
shell, perftest and nccl-tests); the pool is the real SshPool reading the
state directory the simulator writes, as the CLI does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fleet.collectors.inventory import Inventory, load_inventory
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario
from fleet.simulator.server import FleetServer


def fabric_text(nodes: int = 4, link_layer: str = "roce", faults: str = "") -> str:
    """A scenario of ``nodes`` nodes, two per leaf group, two spines."""
    return (
        f'[fabric]\nnodes = {nodes}\nnodes_per_leaf = 2\nspines = 2\nlink_layer = "{link_layer}"\n'
        f"link_gbps = 400\nseed = 1\n{faults}"
    )


@dataclass
class Fleet:
    server: FleetServer
    inventory: Inventory
    pool: SshPool

    def perftest_servers(self) -> list[tuple[str, int]]:
        """(node, port) of every perftest server still waiting on the simulated nodes."""
        return sorted(self.server.rendezvous.servers)

    def runner_sessions(self, *hosts: str) -> int:
        """How many open sessions of ``hosts`` run the probe runner (``python3 ... --probe-runner``),
        read off the simulated sshd's own bookkeeping."""
        return sum(1 for host in hosts for conn in self.server.listeners[host].connections
                   for chan in list(conn._channels.values()) if "--probe-runner" in (chan.get_command() or ""))

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float = 15.0) -> bool:
        """Poll ``condition`` on the event loop until it holds or ``timeout_s`` passes (generous: a loaded
        machine is slow to end processes, and a condition that holds returns at once)."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True


async def start_fleet(tmp_path: Path, text: str) -> Fleet:
    server = FleetServer(FleetModel(parse_scenario(text)))
    await server.start()
    inventory = load_inventory(write_state(server, tmp_path / "sim"))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts,
                   settings=PoolSettings(ssh_config=(), connect_timeout_s=3.0))
    return Fleet(server, inventory, pool)
