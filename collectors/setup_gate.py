"""Connection set-up, paced: a bounded number of hosts being set up at once, and the fleet's progress.

Why: a set-up (TCP, the SSH handshake, authentication, the session, the first answer) costs both
ends a burst of CPU, public-key operations most of it. Started for 1,024 hosts at once, the
collector's one event loop interleaves a thousand handshakes, each finishes late, and our own
storm makes hosts look hung (no SSH set-up within the timeout) or slow (first line late), while
the first lines of the hosts already up wait behind it. Set-ups in flight are therefore bounded;
a host holds its place until its first answer (or its failure), so first lines come before the
next set-ups, and each set-up takes about what it costs alone.

Switches and the Slurm head have places of their own (``Budget.SWITCHES``): they never queue
behind a thousand nodes. Every set-up goes through the gate, the first and every reconnection
after an outage alike; ``progress()`` counts hosts whose first set-up has ended, for the console's
"connecting 812/1,024", and ``settled`` is set once every host's has.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Budget(Enum):
    NODES = "nodes"
    SWITCHES = "switches"
    """Switches and the Slurm head."""


NODE_SETUPS = 32
"""Node set-ups in flight. Measured against the simulator (256 nodes, 2026-12-03): the handshake,
key exchange and authentication cost the collector 1.8 ms of CPU and the far end 1.6 ms, the
agent's first (full) line 1.0 ms here and 4.8 ms there to make. With 32 in flight, a set-up waits
for at most 32 x ~9 ms, about 0.3 s, even were the two ends one CPU: far inside the 2 s after
which a node is called slow and the 10 s after which it is hung. Fewer would leave the handshakes'
round trips idle; more buys nothing once both ends' CPUs are busy, and lets each set-up take
longer, towards those thresholds."""
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
    """A host's place in the gate: ``release()`` when its set-up has ended (idempotent)."""

    __slots__ = ("_gate", "_host", "_semaphore")

    def __init__(self, gate: SetupGate, host: str, semaphore: asyncio.Semaphore) -> None:
        self._gate = gate
        self._host = host
        self._semaphore: asyncio.Semaphore | None = semaphore

    def release(self) -> None:
        if self._semaphore is not None:
            self._semaphore.release()
            self._semaphore = None
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
        """Wait for a place in ``budget``; the caller releases it when the set-up has ended."""
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


__all__ = ["NODE_SETUPS", "SWITCH_SETUPS", "Budget", "Place", "Progress", "SetupGate"]
