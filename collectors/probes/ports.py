"""TCP ports for perftest servers, handed out so that parallel probes never collide.

perftest's server and client exchange their QP data over TCP on ``-p PORT``
(default 18515). Two servers on one node need two ports; a link test runs up
to eight (one per rail) on a node at once. The allocator gives each server a
port no other probe of this process holds on that node. Another fleet process
(or an engineer's own perftest) may still hold a port: the probe retries on
the next one when the server says it cannot listen.
"""

from __future__ import annotations

import os
from collections import defaultdict

FIRST_PORT = 18600
"""Start of the range: above perftest's default 18515, so a hand-run test keeps its port."""

PORT_COUNT = 1000
"""Ports in the range; a node never needs more than one per NIC at once."""


class PortAllocator:
    """Free ports per server host, from ``first`` to ``first + count - 1``.

    The starting point inside the range depends on the process id, so two
    fleet processes probing the same node usually start on different ports.
    """

    def __init__(self, first: int = FIRST_PORT, count: int = PORT_COUNT, *, offset: int | None = None) -> None:
        self.first = first
        self.count = count
        self._next: dict[str, int] = defaultdict(lambda: (os.getpid() * 7 if offset is None else offset) % count)
        self._held: dict[str, set[int]] = defaultdict(set)

    def acquire(self, host: str) -> int:
        """A port no probe of this process holds on ``host``; RuntimeError when all are held."""
        held = self._held[host]
        for _ in range(self.count):
            port = self.first + self._next[host]
            self._next[host] = (self._next[host] + 1) % self.count
            if port not in held:
                held.add(port)
                return port
        raise RuntimeError(f"all {self.count} perftest ports on {host} are in use")

    def release(self, host: str, port: int) -> None:
        """Give ``port`` on ``host`` back (a no-op when it was not held)."""
        self._held[host].discard(port)

    def held(self, host: str) -> frozenset[int]:
        """Ports currently held on ``host``."""
        return frozenset(self._held[host])
