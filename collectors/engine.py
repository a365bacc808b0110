"""The collector: every node, switch and the Slurm head, streamed into the store.

One ``SshPool`` for the whole fleet; one poller task per host, so a slow or
hung host only ever delays itself, and each runs guarded, so a host whose
output cannot be read only ever fails itself (docs/hostile-input.md). Set-ups
are paced (``SetupGate``: a bounded number of handshakes and agent starts in
flight, switches apart from nodes), switch polling keeps to its own CPU budget
(``SwitchBudget``), and every host is ``connecting`` until its first answer. The
console runs ``Collector.run()`` as a worker; ``fleet collect`` runs it
headless, or ``run_once()`` for one round.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from fleet.collectors.agent_reader import AgentKeys
from fleet.collectors.inventory import Inventory
from fleet.collectors.isolation import guarded, guarded_once
from fleet.collectors.node_poller import CollectorStats, CollectSettings, NodePoller
from fleet.collectors.optics import OpticsReader
from fleet.collectors.rate_queue import RateQueue
from fleet.collectors.setup_gate import Progress, SetupGate
from fleet.collectors.slurm_poller import SlurmPoller
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.collectors.status import StatusBook
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.collectors.switch_budget import SwitchBudget
from fleet.collectors.switch_poller import SwitchPoller
from fleet.fabric.rates import RateTracker
from fleet.fabric.records import HostRecord, HostStatus
from fleet.fabric.samples import SeriesLayouts
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter


@dataclass(frozen=True, slots=True)
class RoundSummary:
    """Where the fleet stands: hosts by state, samples written so far, seconds since start."""

    ts: float
    hosts_ok: int
    hosts_failed: dict[str, int]
    samples: int
    seconds: float
    states: dict[str, HostStatus] = field(default_factory=dict)
    setup: Progress = field(default_factory=lambda: Progress(0, 0))
    """Hosts whose first set-up has ended, of all: "connecting 812/1,088" until they all have."""
    node_states: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """What nodes are, where it is worth saying (``fleet.fabric.node_hardware``: "no RDMA devices", ...)."""

    def as_json(self) -> dict[str, object]:
        return {
            "hosts_ok": self.hosts_ok,
            "hosts_failed": self.hosts_failed,
            "samples_written": self.samples,
            "seconds": round(self.seconds, 3),
            "connecting": self.setup.total - self.setup.done,
            "hosts": {host: {"state": s.state.value, "reason": s.reason,
                             "node_states": list(self.node_states.get(host, ()))}
                      for host, s in sorted(self.states.items())},
        }


class Collector:
    def __init__(
        self,
        inventory: Inventory,
        writer: StoreWriter,
        *,
        interval_s: float | None = None,
        tofu: bool = False,
        settings: CollectSettings | None = None,
        on_status: Callable[[HostStatus], None] | None = None,
        on_round: Callable[[RoundSummary], None] | None = None,
    ) -> None:
        interval = interval_s if interval_s is not None else inventory.interval_s
        self.settings = settings or CollectSettings(interval_s=interval)
        self.inventory = inventory
        self._writer = writer
        self._on_round = on_round
        self.status = StatusBook(writer, on_status)
        self.pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, tofu=tofu,
                            on_event=writer.put_event,
                            settings=PoolSettings(slow_threshold_s=self.settings.slow_after_s,
                                                  connect_timeout_s=self.settings.hung_after_s))
        self.stats = CollectorStats()
        """What the collector has done: collector statistics, not RDMA counters."""
        layouts = SeriesLayouts()
        rates = RateTracker(max_gap_s=max(10.0, 3 * self.settings.interval_s), layouts=layouts)
        self._queue = RateQueue(rates)
        keys, optics = AgentKeys(layouts), OpticsReader()
        self.gate = SetupGate(h.name for h in inventory.hosts)
        switch_budget = SwitchBudget(len(inventory.switches), self.settings.interval_s)
        self.nodes = [NodePoller(h, self.pool, writer, self.status, self._queue, self.settings, self.stats, keys, optics,
                                 self.gate)
                      for h in inventory.nodes]
        self.switches = [SwitchPoller(h, self.pool, writer, self.status, rates, self.settings, self.stats,
                                      self.gate, switch_budget)
                         for h in inventory.switches]
        head = inventory.head
        self.slurm = SlurmPoller(head, self.pool, writer, self.status, self.settings, self.gate) if head else None
        self._started = time.monotonic()
        self._stop = asyncio.Event()
        writer.put_hosts([HostRecord(h.name, h.role, h.connect_address, h.os, group=-1)
                          for h in inventory.hosts])

    def summary(self) -> RoundSummary:
        states = self.status.all()
        failed = Counter(s.state.value for s in states.values() if s.state.is_failure)
        ok = sum(1 for s in states.values() if s.state in (HostState.OK, HostState.SLOW))
        node_states = {node.host.name: node.hardware.states for node in self.nodes
                       if node.hardware is not None and node.hardware.states}
        return RoundSummary(time.time(), ok, dict(failed), self.stats.samples,
                            time.monotonic() - self._started, states, self.gate.progress(), node_states)

    def status_failed(self, host: str) -> bool:
        """Whether ``host``'s last state is a failure (it will not answer this round)."""
        status = self.status.get(host)
        return status is not None and status.state.is_failure

    def _retry_s(self, host: str) -> Callable[[], float]:
        """When a failed host is tried again: the pool's backoff, and never sooner than an interval."""
        return lambda: max(self.pool.next_retry_s(host), self.settings.interval_s)

    def _loops(self, stop: asyncio.Event) -> list[tuple[str, Callable[[], Awaitable[object]]]]:
        """Every host's poller loops, by host."""
        loops: list[tuple[str, Callable[[], Awaitable[object]]]] = []
        for node in self.nodes:
            loops.append((node.host.name, functools.partial(node.run, stop)))
            if node.mode == "agent":
                loops.append((node.host.name, functools.partial(node.facts_loop, stop)))
        loops += [(switch.host.name, functools.partial(switch.run, stop)) for switch in self.switches]
        if self.slurm is not None:
            loops.append((self.slurm.host.name, functools.partial(self.slurm.run, stop)))
        return loops

    async def run(self) -> None:
        """Collect until cancelled or ``close()``; never raises for a machine's fault.

        Each host's loops run ``guarded`` (``fleet.collectors.isolation``): whatever one
        host prints, it becomes that host's ``unparsable`` state and its loop starts again
        on the retry schedule, while every other host goes on.
        """
        self._started = time.monotonic()
        self.status.connecting(h.name for h in self.inventory.hosts)
        stop = self._stop
        tasks = [asyncio.ensure_future(guarded(host, self.status, loop, stop, self._retry_s(host)))
                 for host, loop in self._loops(stop)]
        tasks.append(asyncio.ensure_future(self._report(stop)))
        try:
            await asyncio.gather(*tasks)
        finally:
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._queue.flush()  # the last samples are stored before the writer may close
            await self.pool.close()

    async def run_once(self) -> RoundSummary:
        """One round over every host at once; a hung host costs ``hung_after_s``, never more."""
        self._started = time.monotonic()
        self.status.connecting(h.name for h in self.inventory.hosts)
        rounds: list[tuple[str, Callable[[], Awaitable[object]]]] = [(p.host.name, p.once) for p in self.nodes]
        rounds += [(p.host.name, p.poll) for p in self.switches]
        if self.slurm is not None:
            rounds.append((self.slurm.host.name, self.slurm.poll))
        jobs = [guarded_once(host, self.status, work) for host, work in rounds]
        try:
            await asyncio.gather(*jobs)
        finally:
            self._queue.flush()
            await self.pool.close()
        return self.summary()

    async def close(self) -> None:
        self._stop.set()

    async def _report(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await sleep_until_stopped(stop, self.settings.interval_s)
            if self._on_round is not None:
                self._on_round(self.summary())

