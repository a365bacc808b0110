"""How long a whole fleet takes to be on screen, from the collector's start, and how it holds after
(``python -m benchmarks collect``'s first phase).

The collector runs as ``fleet collect`` and the console run it (``Collector.run()``: every node,
switch and the Slurm head, on uvloop) in this process, from cold (no connection open), into a
real store; the simulator runs in its own process. Both are pinned, as ``taskset`` pins them: the
simulator to a CPU of its own, this process to the others, so that what is measured is the
collector, as on a real cluster where every node and switch has its own CPUs. A read-only connection to the store polls the ``latest`` table (one
row per host) every ``POLL_S``; the figures are what the store holds, not what the collector
believes it sent.

- ``time_to_complete_fleet_s``: from the collector's start until every node and every switch has
  values in the store.
- ``hosts_marked_hung`` / ``hosts_marked_slow``: hosts the collector called hung or slow at any
  time. The simulated fleet is healthy: each one is a false mark, made by our own load.
- ``marks_by_reason``: those marks counted by cause (the reason in words, its figures as ``#``),
  the eight most common: whether the far end was late (``agent lines # s apart``), a set-up did not
  finish (``accepted TCP but SSH set-up did not finish``), or an agent never started.
- ``switch_counters_max_gap_s``: the longest wait between two new samples of one switch, after its
  first (its counters must arrive at least every 10 s).
- ``node_lines_per_s_mean``: agent lines the collector read per node per second over the run's
  second half (the agent's interval is 1 s: 1.0 is every line of every node).
- ``node_row_updates_per_s_median``: how often the median node's row of the ``latest`` table changed
  over the run's second half. Not a sample rate: the store rewrites a row whose values did not move
  only every 10 s (``store/latest.py``, ``MAX_DEFER_MS``), so a healthy, steady node shows about 0.1.
- ``rss_growth_after_first_minute_mib``: the collector's resident memory at the end minus at 60 s.
- ``collector_cpu_s_until_complete`` / ``simulator_cpu_s_until_complete``: what filling the fleet
  cost each side; with the CPUs the machine's other work leaves them, they say what the wall time
  would be on a quiet machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._processes import cpu_s, rss_mib
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import Inventory
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

POLL_S = 0.25
"""How often the store is read: the figures' resolution."""
FIRST_MINUTE_S = 60.0


def _set_affinity(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` on ``cpus`` (as ``taskset -a -p``)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except OSError:
            continue


@contextlib.contextmanager
def pinned(sim_pid: int) -> Iterator[tuple[set[int], set[int]]]:
    """The simulator on the last CPU this process may use, this process on the others, until the
    block ends (both then back where they were); the two CPU sets. With one CPU both share it."""
    mine_before, sim_before = os.sched_getaffinity(0), os.sched_getaffinity(sim_pid)
    cpus = sorted(mine_before)
    sim_cpus = {cpus[-1]}
    mine = set(cpus[:-1]) or sim_cpus
    _set_affinity(sim_pid, sim_cpus)
    _set_affinity(os.getpid(), mine)
    try:
        yield sim_cpus, mine
    finally:
        _set_affinity(os.getpid(), mine_before)
        _set_affinity(sim_pid, sim_before)


@dataclass
class _Watch:
    """What the store showed over the run, host by host."""

    nodes: frozenset[str]
    switches: frozenset[str]
    started: float
    first_at: dict[str, float] = field(default_factory=dict)
    seen: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    """host -> (when we saw it, the sample's ts_ms), each time its latest sample changed."""
    complete_at: float | None = None
    rss_at_minute: float | None = None

    def look(self, rows: Iterable[tuple[str, int]], now: float) -> None:
        for host, ts_ms in rows:
            history = self.seen.setdefault(host, [])
            if not history or history[-1][1] != ts_ms:
                history.append((now, ts_ms))
            self.first_at.setdefault(host, now - self.started)
        if self.complete_at is None and (self.nodes | self.switches) <= self.first_at.keys():
            self.complete_at = now - self.started

    def switch_max_gap_s(self) -> float | None:
        """The longest time between two new samples of one switch, by the samples' own stamps."""
        gaps = [(b[1] - a[1]) / 1000 for host in self.switches
                for a, b in zip(self.seen.get(host, []), self.seen.get(host, [])[1:], strict=False)]
        return round(max(gaps), 2) if gaps else None

    def node_rates(self, since: float, until: float) -> list[float]:
        window = until - since
        return [sum(1 for when, _ in self.seen.get(host, []) if since <= when < until) / window
                for host in self.nodes]


def cause(reason: str) -> str:
    """A mark's reason with its figures as ``#``: marks of one cause count together."""
    return re.sub(r"\d+(?:\.\d+)?", "#", reason)


def _latest_rows(reader: sqlite3.Connection) -> list[tuple[str, int]]:
    return reader.execute("SELECT host, ts_ms FROM latest").fetchall()


async def measure(inventory: Inventory, db: Path, duration_s: float, sim_pid: int) -> dict[str, Any]:
    """Run the whole collector for ``duration_s`` seconds against a running fleet; the figures."""
    writer = StoreWriter(db).start()
    marked: dict[HostState, dict[str, str]] = {HostState.HUNG: {}, HostState.SLOW: {}}

    def on_status(status: HostStatus) -> None:
        if status.state in marked:
            marked[status.state].setdefault(status.host, status.reason)

    collector = Collector(inventory, writer, on_status=on_status)
    watch = _Watch(frozenset(h.name for h in inventory.nodes), frozenset(h.name for h in inventory.switches),
                   time.monotonic())
    task = asyncio.ensure_future(collector.run())
    reader: sqlite3.Connection | None = None
    rss_start = rss_mib()
    me = os.getpid()
    cpu_start, sim_start = cpu_s(me), cpu_s(sim_pid)
    cpu_at_complete: tuple[float, float] | None = None
    lines_at_half: tuple[float, int] | None = None
    try:
        while (now := time.monotonic()) - watch.started < duration_s:
            if reader is None and db.exists():
                reader = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
            if reader is not None:
                try:
                    rows = await asyncio.to_thread(_latest_rows, reader)
                except sqlite3.OperationalError:  # the writer has not made the table yet
                    rows = []
                watch.look(rows, time.monotonic())
                if watch.complete_at is not None and cpu_at_complete is None:
                    cpu_at_complete = (cpu_s(me) - cpu_start, cpu_s(sim_pid) - sim_start)
            if lines_at_half is None and now - watch.started >= duration_s / 2:
                lines_at_half = (now, collector.stats.lines)
            if watch.rss_at_minute is None and now - watch.started >= FIRST_MINUTE_S:
                watch.rss_at_minute = rss_mib()
            if task.done():
                break
            await asyncio.sleep(POLL_S)
        rss_end = rss_mib()
        lines_end = (time.monotonic(), collector.stats.lines)
        cpu_end = (cpu_s(me) - cpu_start, cpu_s(sim_pid) - sim_start)
    finally:
        await collector.close()
        await asyncio.gather(task, return_exceptions=True)
        if reader is not None:
            reader.close()
        writer.flush(timeout=60)
        writer.close()
    end = time.monotonic()
    rates = watch.node_rates(watch.started + duration_s / 2, end)
    missing = sorted((watch.nodes | watch.switches) - watch.first_at.keys())
    return {
        "nodes": len(watch.nodes),
        "switches": len(watch.switches),
        "time_to_complete_fleet_s": round(watch.complete_at, 2) if watch.complete_at is not None else None,
        "hosts_without_values": len(missing),
        "hosts_without_values_first": missing[:8],
        "nodes_with_values_at_5_10_15_s": [sum(1 for h in watch.nodes if watch.first_at.get(h, 1e9) <= t)
                                           for t in (5, 10, 15)],
        "switches_with_values_at_5_10_15_s": [sum(1 for h in watch.switches if watch.first_at.get(h, 1e9) <= t)
                                              for t in (5, 10, 15)],
        "hosts_marked_hung": len(marked[HostState.HUNG]),
        "hosts_marked_slow": len(marked[HostState.SLOW]),
        "marks_first": sorted(f"{host} {state.value}: {reason}" for state, hosts in marked.items()
                              for host, reason in hosts.items())[:6],
        "marks_by_reason": dict(Counter(f"{state.value}: {cause(reason)}" for state, hosts in marked.items()
                                        for reason in hosts.values()).most_common(8)),
        "switch_counters_max_gap_s": watch.switch_max_gap_s(),
        "node_lines_per_s_mean": round((lines_end[1] - lines_at_half[1]) / (lines_end[0] - lines_at_half[0])
                                       / len(watch.nodes), 2)
        if lines_at_half is not None and lines_end[0] > lines_at_half[0] and watch.nodes else None,
        "node_row_updates_per_s_median": round(statistics.median(rates), 2) if rates else None,
        "rss_start_mib": round(rss_start, 1),
        "rss_at_60_s_mib": round(watch.rss_at_minute, 1) if watch.rss_at_minute is not None else None,
        "rss_end_mib": round(rss_end, 1),
        "rss_growth_after_first_minute_mib": round(rss_end - watch.rss_at_minute, 1)
        if watch.rss_at_minute is not None else None,
        "duration_s": round(end - watch.started, 1),
        "collector_cpu_s_until_complete": round(cpu_at_complete[0], 2) if cpu_at_complete else None,
        "simulator_cpu_s_until_complete": round(cpu_at_complete[1], 2) if cpu_at_complete else None,
        "collector_cpu_s_per_s": round(cpu_end[0] / (end - watch.started), 3),
        "simulator_cpu_s_per_s": round(cpu_end[1] / (end - watch.started), 3),
    }
