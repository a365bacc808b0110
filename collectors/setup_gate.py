"""Connection set-up, paced: a bounded number of hosts being set up at once, and the fleet's progress.

Why: a set-up (TCP, the SSH handshake and authentication, the session that starts the agent) costs
both ends a burst of CPU, public-key operations most of it. Started for 1,024 hosts at once, the
collector's one event loop interleaves a thousand handshakes, each finishes late, and our own
storm makes hosts look hung (no SSH set-up within the timeout) while the first lines of the hosts
already up wait behind it. Set-ups in flight are therefore bounded.

A host holds its place only for what costs: the handshake, and for a node's agent stream the
session that starts the agent (``Place.opened()``, once the far end accepted the command). It does
not hold it until the first answer: how soon a node's agent prints its first line is the node's
own work, on its own CPUs, and a place held through it makes every later set-up queue behind the
slowest first lines.

Waiting for a place is waiting on us: a host's hung and slow clocks start once it has its place
(``SshPool``'s set-up timeout, a command's or a stream's first-line deadline), so a host that
waits here is ``connecting``, never ``hung`` or ``slow``.

Switches and the Slurm head have places of their own (``Budget.SWITCHES``): they never queue
behind a thousand nodes. Every set-up goes through the gate, the first and every reconnection
after an outage alike; ``progress()`` counts hosts whose first set-up has ended (first answer or
failure, ``Place.ended()``), for the console's "connecting 812/1,024", and ``settled`` is set once
every host's has.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from fleet.collectors.sshpool import RunResult, SshPool
from fleet.collectors.status import StatusBook


class Budget(Enum):
    NODES = "nodes"
    SWITCHES = "switches"
    """Switches and the Slurm head."""


NODE_SETUPS = 32
"""Node set-ups in flight. Measured against the simulator (256 nodes, 2026-12-03): the handshake,
key exchange and authentication cost the collector 1.8 ms of CPU and the far end 1.6 ms; opening
the agent's session is one more round trip. With 32 in flight, a set-up waits for at most
32 x ~3.4 ms, about 0.1 s, for the others' CPU even were the two ends one CPU: far inside the 10 s
after which a set-up is hung. Fewer would leave the handshakes' round trips idle; more buys nothing
once both ends' CPUs are busy, and lets each handshake take longer, towards that timeout."""
SWITCH_SETUPS = 8
"""Switch and head set-ups in flight: few hosts, apart from the nodes' queue."""


@dataclass(frozen=True, slots=True)
class Progress:
    """Hosts whose first set-up has ended (answered or failed), of ``total``."""

    done: int
    total: int

    @property
    def complete(self) -> bool:
        return self.done >= self.total


class Place:
    """A host's place in the gate.

    ``opened()`` when what costs is done (the handshake; for an agent stream, its session open):
    the place goes to the next host. ``ended()`` when the set-up has ended, with the first answer
    or a failure: the host counts as set up (and the place is freed, were it still held). Both are
    idempotent; ``ended()`` belongs in a ``finally``.
    """

    __slots__ = ("_gate", "_host", "_semaphore")

    def __init__(self, gate: SetupGate, host: str, semaphore: asyncio.Semaphore) -> None:
        self._gate = gate
        self._host = host
        self._semaphore: asyncio.Semaphore | None = semaphore

    def opened(self) -> None:
        if self._semaphore is not None:
            self._semaphore.release()
            self._semaphore = None

    def ended(self) -> None:
        self.opened()
        self._gate._ended(self._host)


class SetupGate:
    """Places for set-ups in flight, by budget; ``hosts``: every host whose first set-up counts."""

    def __init__(self, hosts: Iterable[str], *, node_setups: int = NODE_SETUPS,
                 switch_setups: int = SWITCH_SETUPS) -> None:
        self._waiting = set(hosts)
        self._total = len(self._waiting)
        self._semaphores = {Budget.NODES: asyncio.Semaphore(node_setups),
                            Budget.SWITCHES: asyncio.Semaphore(switch_setups)}
        self.settled = asyncio.Event()
        """Set once every host's first set-up has ended: steady-state work may start."""
        if not self._waiting:
            self.settled.set()

    async def enter(self, host: str, budget: Budget) -> Place:
        """Wait for a place in ``budget`` (no clock of the host's runs meanwhile); the caller says
        when the place is ``opened()`` and when the set-up has ``ended()``."""
        semaphore = self._semaphores[budget]
        await semaphore.acquire()
        return Place(self, host, semaphore)

    def _ended(self, host: str) -> None:
        if host in self._waiting:
            self._waiting.discard(host)
            if not self._waiting:
                self.settled.set()

    def progress(self) -> Progress:
        return Progress(self._total - len(self._waiting), self._total)


async def handshake(pool: SshPool, host: str, place: Place | None) -> RunResult | None:
    """Open ``host``'s connection in its ``place``, then give the place up: a command's start costs
    one more round trip, its answer is the host's work. None when there is nothing more in the way
    (connected, or no place: the command connects itself), else why the connection failed."""
    if place is None:
        return None
    connected = await pool.connect(host)
    place.opened()
    return None if connected.ok else connected


async def poll_in_place(gate: SetupGate | None, pool: SshPool, status: StatusBook, host: str,
                        poll: Callable[[], Awaitable[bool]]) -> bool:
    """One poll of a switch or the Slurm head: a place in the switches' budget for its set-up when it
    is not connected (the place given up after the handshake, ended after the answer), a failed
    set-up recorded as the host's state (False), else ``poll()``'s verdict."""
    place = None
    if gate is not None and not pool.connected(host):
        place = await gate.enter(host, Budget.SWITCHES)
    try:
        failed = await handshake(pool, host, place)
        if failed is not None:
            status.set(host, failed.state, failed.reason)
            return False
        return await poll()
    finally:
        if place is not None:
            place.ended()


__all__ = ["NODE_SETUPS", "SWITCH_SETUPS", "Budget", "Place", "Progress", "SetupGate", "handshake", "poll_in_place"]
