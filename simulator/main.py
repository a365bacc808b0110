"""Run the simulated fleet: listen, write the state directory, report ready, stop on a signal.

The state directory receives what a console needs to reach the fleet exactly
as it would reach a real one: ``inventory.toml`` (one entry per machine with
its loopback address and port), ``known_hosts`` (every machine's host key, in
the ``[address]:port`` form OpenSSH uses for ports other than 22),
``id_ed25519`` / ``id_ed25519.pub`` (the client key every machine accepts)
and ``cabling.csv`` (the cabling plan as designed, before any miswire).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import uvloop

from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import Scenario
from fleet.simulator.server import FleetServer

READY_LINE = "fleet-sim ready: {nodes} nodes, {switches} switches, inventory at {path}"


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def collection_interval_s(nodes: int) -> float:
    """Agent interval the inventory suggests: 1 s up to 1,024 nodes, 5 s beyond, so one 2-core machine
    can both simulate and collect the fleet.

    An agent line costs the simulator about 0.6-0.7 ms of CPU with SSH, so 1,024 nodes at 1 s take
    about 0.6 CPU-s/s next to the collector's ~0.7 (``python -m benchmarks collect`` on 2 cores);
    at twice the nodes and 1 s the two would not fit on two cores."""
    return 1.0 if nodes <= 1024 else 5.0


def inventory_text(server: FleetServer, state_dir: Path) -> str:
    """The console's inventory for this fleet (see docs: "Inventory format")."""
    model = server.model
    interval_s = collection_interval_s(len(model.topology.nodes))
    topology = model.topology
    lines = [
        f"# Written by `fleet sim` (scenario {model.scenario.name!r}, seed {model.seed}).",
        "[defaults]",
        'user = "fleet"',
        f"identity_file = {_toml_string(str(state_dir / 'id_ed25519'))}",
        f"known_hosts = {_toml_string(str(state_dir / 'known_hosts'))}",
        'mode = "agent"',
        f"interval = {interval_s}",
        "",
    ]
    for node in topology.nodes:
        listener = server.listeners[node]
        lines += ["[[nodes]]", f'names = "{node}"', f'address = "{listener.address}"', f"port = {listener.port}", ""]
    for switch in topology.switches:
        listener = server.listeners[switch]
        lines += [
            "[[switches]]",
            f'names = "{switch}"',
            f'os = "{topology.os_of(switch)}"',
            f'role = "{topology.role_of(switch)}"',
            f'address = "{listener.address}"',
            f"port = {listener.port}",
            "",
        ]
    head = server.listeners[topology.head]
    lines += ["[slurm]", f'host = "{topology.head}"', f'address = "{head.address}"', f"port = {head.port}", ""]
    lines += ["[cabling]", 'plan = "cabling.csv"', ""]
    return "\n".join(lines)


def known_hosts_text(server: FleetServer) -> str:
    """One line per machine: ``[address]:port,[name]:port ssh-ed25519 KEY``."""
    lines = []
    for listener in server.listeners.values():
        assert listener.key is not None
        public = listener.key.export_public_key().decode().split()
        lines.append(f"[{listener.address}]:{listener.port},[{listener.host}]:{listener.port} {public[0]} {public[1]}")
    return "\n".join(lines) + "\n"


def write_state(server: FleetServer, state_dir: Path) -> Path:
    """Write the state directory; returns the inventory's path."""
    state_dir.mkdir(parents=True, exist_ok=True)
    key_path = state_dir / "id_ed25519"
    key_path.unlink(missing_ok=True)
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(server.client_key.export_private_key())
    (state_dir / "id_ed25519.pub").write_bytes(server.client_key.export_public_key())
    (state_dir / "known_hosts").write_text(known_hosts_text(server), encoding="utf-8")
    (state_dir / "cabling.csv").write_text(server.model.topology.cabling_csv(), encoding="utf-8")
    inventory = state_dir / "inventory.toml"
    inventory.write_text(inventory_text(server, state_dir), encoding="utf-8")
    return inventory


async def serve(
    scenario: Scenario,
    state_dir: Path,
    *,
    ready: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> int:
    """Run the fleet until ``stop`` is set or SIGINT/SIGTERM arrives; returns the exit status."""
    state_dir = state_dir.absolute()
    model = FleetModel(scenario)
    server = FleetServer(model)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
    try:
        await server.start()
        inventory = write_state(server, state_dir)
        topology = model.topology
        ready(
            READY_LINE.format(nodes=len(topology.nodes), switches=len(topology.switches), path=inventory)
        )
        await stop.wait()
    finally:
        await server.close()
        for signum in handled:
            loop.remove_signal_handler(signum)
    return 0


def run(scenario: Scenario, state_dir: Path) -> int:
    """Blocking entry point for ``fleet sim``: prints the ready line on stdout, flushed."""

    def ready(line: str) -> None:
        # The model, listeners and host keys live as long as the process: out of the collector's
        # sight, so that a full collection (tens of ms on one CPU at 1,024 nodes) does not walk
        # them while every session waits. (``fleet sim`` sets the collector's thresholds.)
        gc.freeze()
        print(line, flush=True)

    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(serve(scenario, state_dir, ready=ready))
    except OSError as error:
        print(f"fleet sim: cannot listen: {error}", file=sys.stderr)
        return 1
