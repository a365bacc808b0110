"""One switch, polled through its OS driver every interval, or as often as switch polling's CPU
budget allows (``fleet.collectors.switch_budget``)."""

from __future__ import annotations

import asyncio
import time

from fleet.collectors.inventory import InventoryHost
from fleet.collectors.isolation import Unparsable
from fleet.collectors.node_poller import CollectorStats, CollectSettings
from fleet.collectors.setup_gate import SetupGate, poll_in_place
from fleet.collectors.sshpool import SshPool
from fleet.collectors.status import StatusBook
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.collectors.switch_budget import SwitchBudget
from fleet.collectors.switches import driver_for
from fleet.fabric.rates import RateTracker
from fleet.fabric.records import HostRecord
from fleet.fabric.samples import HostSample, SeriesKey
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

PORTS_EVERY = 30
"""Neighbour tables change rarely: store the port list every this many polls."""


class SwitchPoller:
    def __init__(self, host: InventoryHost, pool: SshPool, writer: StoreWriter, status: StatusBook,
                 rates: RateTracker, settings: CollectSettings, stats: CollectorStats,
                 gate: SetupGate | None = None, budget: SwitchBudget | None = None) -> None:
        """``gate``: paces set-ups with the other hosts'; ``budget``: switch polling's CPU (a
        collector's, shared by its switches); None for either: at once, every interval."""
        self.host = host
        self._gate = gate
        self._budget = budget
        self.driver = driver_for(host.name, host.os)
        self._pool = pool
        self._writer = writer
        self._status = status
        self._rates = rates
        self._settings = settings
        self._stats = stats
        self._polls = 0

    @property
    def polls(self) -> int:
        """Successful polls so far."""
        return self._polls

    async def poll(self) -> bool:
        """One poll; True when it produced samples."""
        return await poll_in_place(self._gate, self._pool, self._status, self.host.name, self._poll)

    async def _poll(self) -> bool:
        result = await self._pool.run(self.host.name, self.driver.poll_command(),
                                      timeout_s=self._settings.hung_after_s)
        if not result.ok:
            self._status.set(self.host.name, result.state, result.reason)
            return False
        cpu_before = time.perf_counter()
        try:
            if self._polls == 0 and self.host.os == "cumulus":
                # NVUE lists its ports first; the counters come from the next poll on.
                self.driver.read_poll(result.stdout, time.time())
                result = await self._pool.run(self.host.name, self.driver.poll_command(),
                                              timeout_s=self._settings.hung_after_s)
                if not result.ok:
                    self._status.set(self.host.name, result.state, result.reason)
                    return False
                cpu_before = time.perf_counter()
            polled = self.driver.read_poll(result.stdout, time.time())
        except Unparsable as error:  # one of its commands printed what cannot be read: this switch's problem
            self._status.set(self.host.name, HostState.UNPARSABLE, error.reason)
            return False
        if not polled.sample.values:
            reason = "; ".join(polled.problems[:2]) or "no port counters in the output"
            self._status.set(self.host.name, HostState.UNPARSABLE, reason)
            return False
        derived = self._rates.update(polled.sample).sample
        values: dict[SeriesKey, float] = dict(derived.values)
        for (metric, port, sub), gbps in derived.values.items():
            speed = polled.speeds_gbps.get(port)
            if metric in ("sw_rx_gbps", "sw_tx_gbps") and speed:
                key: SeriesKey = ("sw_util_pct", port, sub)
                values[key] = max(values.get(key, 0.0), 100.0 * gbps / speed)
        for item in (polled.sample, HostSample(self.host.name, derived.ts, values)):
            if item.values:
                self._writer.put_samples(item)
                self._stats.samples += len(item.values)
        if self._polls % PORTS_EVERY == 0:
            self._writer.put_hosts([HostRecord(self.host.name, self.host.role, self.host.connect_address,
                                               self.host.os)])
            self._writer.put_ports(list(polled.ports))
        self._polls += 1
        self._status.set(self.host.name, result.state, result.reason)
        if self._budget is not None:
            # The reading has no await: its wall time is its CPU (or more, when the machine is busy,
            # which then stretches the period too). A CPU clock costs ~1 ms a read in some VMs.
            self._budget.spent(time.perf_counter() - cpu_before)
        return True

    def period_s(self) -> float:
        """Seconds from one poll to the next: the interval, or longer as the CPU budget needs."""
        return self._budget.period_s() if self._budget is not None else self._settings.interval_s

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            ok = await self.poll()
            wait_s = (self.period_s() - (time.monotonic() - started) if ok
                      else max(self._pool.next_retry_s(self.host.name), self.period_s()))
            await sleep_until_stopped(stop, wait_s)
