"""A whole fleet on screen from a cold start, then what one collection round and a second of
streaming cost at N nodes, against clush.

The simulator runs as its own process (``fleet sim`` on the fleet of ``benchmarks sim``: N RoCE
nodes in 4 leaf groups, 64 switches at 1,024 nodes, 4 jobs); the collector parts run in this
process, so ``time.process_time()`` around them is the collector's CPU (the store writer's thread
included) and the simulator's CPU is read from /proc apart. One round is what an engineer would
otherwise run with clush: ``grep -H . /sys/class/infiniband/*/ports/*/counters/*`` on every node
(about 12 KB per node). ClusterShell does the same round with OpenSSH (``clush -f 64``), in the
same run, for the ratio.

First, with the simulator pinned to a CPU of its own and this process to the others (as
``taskset`` pins them), the whole collector (every node, switch and the head) runs from cold for
``--fleet-duration`` seconds (``benchmarks._fleet_complete`` says what each ``fleet_`` figure is).
Targets: every node and switch in the store within 15 s (``time_to_complete_fleet_s``), no host
marked hung or slow (the simulated fleet is healthy), every switch's counters at least every 10 s,
the collector's memory flat after the first minute (at most 32 MiB more by the end).

Then, targets at 1,024 nodes on a 2-core machine with the simulator on it: a round on open connections
in at most 1 s of wall time (``round_open_wall_s``); every node streaming a line a second for at
most 0.3 CPU-s/s of the collector (``stream_collector_cpu_s_per_s_all_nodes_at_1s``); clush's round
at least 20 times slower (``clush_over_open_wall_x``: not met when clush did not run).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hostlist

from benchmarks._fleet_complete import measure, pinned
from benchmarks._options import float_in, int_in, parser
from benchmarks._processes import cpu_s, thread_cpu_s
from benchmarks._simulated import busy_fleet, simulator
from benchmarks.report import Measured, at_least, at_most
from fleet.collectors.commands import Command, Glob, command
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import Inventory, InventoryHost, load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.console.cli.common import run_async
from fleet.simulator.main import collection_interval_s
from fleet.store.writer import StoreWriter

ROUND_COMMAND: Command = command("grep", "-H", ".", Glob("/sys/class/infiniband/*/ports/*/counters/*"))
WRITER_THREAD = "fleet-store-writer"
"""The name ``StoreWriter`` gives its thread (tests/benchmarks/test_bench_collect.py holds the two equal)."""


@dataclass(frozen=True, slots=True)
class RoundResult:
    """One command on every node: seconds of wall time, CPU seconds of the collector and of the simulator."""

    wall_s: float
    collector_cpu_s: float
    sim_cpu_s: float
    hosts_ok: int
    output_bytes: int

    def as_results(self, prefix: str) -> dict[str, Any]:
        return {f"{prefix}_{key}": round(value, 3) if isinstance(value, float) else value
                for key, value in dataclasses.asdict(self).items()}


async def _round(pool: SshPool, hosts: list[str], sim_pid: int, timeout_s: float) -> RoundResult:
    sim_before, cpu_before, started = cpu_s(sim_pid), time.process_time(), time.monotonic()
    results = await asyncio.gather(*(pool.run(host, ROUND_COMMAND, timeout_s=timeout_s) for host in hosts))
    wall_s = time.monotonic() - started
    return RoundResult(wall_s, time.process_time() - cpu_before, cpu_s(sim_pid) - sim_before,
                       sum(1 for r in results if r.ok), sum(len(r.stdout) for r in results))


async def _rounds(inventory: Inventory, sim_pid: int, timeout_s: float) -> tuple[RoundResult, RoundResult]:
    """A round on new connections (handshakes included), then one on the connections left open."""
    hosts = [h.name for h in inventory.nodes]
    pool = SshPool(inventory.nodes, known_hosts=inventory.known_hosts,
                   settings=PoolSettings(ssh_config=(), slow_threshold_s=timeout_s))
    try:
        new = await _round(pool, hosts, sim_pid, timeout_s)
        open_ = await _round(pool, hosts, sim_pid, timeout_s)
    finally:
        await pool.close()
    return new, open_


async def _settled(writer: StoreWriter, backlog: int, timeout_s: float) -> float:
    """Wait until the writer holds at most ``backlog`` queued values; the seconds it took."""
    began = time.monotonic()
    while writer.stats().queued > backlog and time.monotonic() - began < timeout_s:
        await asyncio.sleep(0.2)
    return time.monotonic() - began


async def _stream(inventory: Inventory, db: Path, sim_pid: int, interval_s: float, window_s: float,
                  warmup_timeout_s: float) -> dict[str, Any]:
    """Every node streamed by the agent through the real NodePoller into a real store.

    Only the node pollers run (no switches, no Slurm, no facts, which come every 300 s), so the
    window measures the steady stream: SSH, JSON decode, samples, optics every 10th line, the
    periodic full lines (the default window holds one per node), rates, and the writer's puts and
    commits. The window opens once the writer has caught up with the start (every host's first
    lines create its series), so it holds one second's lines and their writes, no backlog.
    ``collector_cpu_s_per_s`` is the whole process (event loop and store writer threads), also
    given apart: ``loop_thread_cpu_s_per_s`` (SSH, decode, rates, puts) and
    ``store_writer_cpu_s_per_s``. ``cpu_ms_per_line`` x nodes is what one line per node per second
    costs, the same figure when the simulator (one Python process) keeps up with every node at
    1 s, as it does up to 1,024 nodes, and the projection where it falls behind.
    """
    nodes_only = dataclasses.replace(inventory, hosts=inventory.nodes)
    writer = StoreWriter(db).start()
    collector = Collector(nodes_only, writer, settings=CollectSettings(interval_s=interval_s))
    stop = asyncio.Event()
    tasks = [asyncio.ensure_future(poller.run(stop)) for poller in collector.nodes]
    try:
        started = time.monotonic()
        first = [asyncio.ensure_future(p.got_sample.wait()) for p in collector.nodes]
        _, pending = await asyncio.wait(first, timeout=warmup_timeout_s)
        for waiter in pending:
            waiter.cancel()
        warmup_s = time.monotonic() - started
        # Two more intervals, so the burst of first lines (which have no rates yet) is behind us.
        await asyncio.sleep(2 * interval_s)
        settle_s = await _settled(writer, backlog=len(collector.nodes) * 1000, timeout_s=warmup_timeout_s)
        stats = collector.stats
        lines, samples, dropped = stats.lines, stats.samples, writer.stats().dropped
        cpu, loop_cpu, sim_cpu = time.process_time(), time.thread_time(), cpu_s(sim_pid)
        writer_cpu = thread_cpu_s(WRITER_THREAD)
        began = time.monotonic()
        await asyncio.sleep(window_s)  # the window measured
        elapsed = time.monotonic() - began
        cpu_used, lines_seen = time.process_time() - cpu, stats.lines - lines
        loop_cpu_s, writer_cpu_s = time.thread_time() - loop_cpu, thread_cpu_s(WRITER_THREAD) - writer_cpu
        sim_cpu_s, window_dropped = cpu_s(sim_pid) - sim_cpu, writer.stats().dropped - dropped
        samples_seen = stats.samples - samples
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await collector.pool.close()
        writer.flush(timeout=60)
        writer.close()
    nodes = len(collector.nodes)
    per_line_s = cpu_used / lines_seen if lines_seen else float("nan")
    return {
        "interval_s": interval_s,
        "window_s": round(elapsed, 2),
        "nodes_streaming": nodes - len(pending),
        "first_lines_s": round(warmup_s, 2),
        "writer_caught_up_s": round(settle_s, 2),
        "lines_per_s": round(lines_seen / elapsed, 1),
        "samples_per_s": round(samples_seen / elapsed, 1),
        "collector_cpu_s_per_s": round(cpu_used / elapsed, 3),
        "loop_thread_cpu_s_per_s": round(loop_cpu_s / elapsed, 3),
        "store_writer_cpu_s_per_s": round(writer_cpu_s / elapsed, 3),
        "sim_cpu_s_per_s": round(sim_cpu_s / elapsed, 3),
        "cpu_ms_per_line": round(per_line_s * 1000, 3),
        "loop_thread_ms_per_line": round(loop_cpu_s / lines_seen * 1000, 3) if lines_seen else None,
        "store_writer_ms_per_line": round(writer_cpu_s / lines_seen * 1000, 3) if lines_seen else None,
        "collector_cpu_s_per_s_all_nodes_at_1s": round(per_line_s * nodes, 3),
        "dropped_puts": stats.dropped,
        "dropped_values_in_window": window_dropped,
    }


def ssh_config_for(hosts: tuple[InventoryHost, ...], known_hosts: Path | None) -> str:
    """An OpenSSH client config naming every host's own address and port (the simulator gives each its own)."""
    lines = []
    for host in hosts:
        lines += [f"Host {host.name}", f"  HostName {host.connect_address}"]
        if host.port:
            lines.append(f"  Port {host.port}")
        if host.user:
            lines.append(f"  User {host.user}")
        if host.identity_file:
            lines.append(f"  IdentityFile {host.identity_file}")
    lines += ["Host *", "  IdentitiesOnly yes", "  BatchMode yes", "  StrictHostKeyChecking yes",
              "  ForwardAgent no", "  ControlMaster no", "  LogLevel ERROR"]
    if known_hosts is not None:
        lines += [f"  UserKnownHostsFile {known_hosts}", "  GlobalKnownHostsFile /dev/null"]
    return "\n".join(lines) + "\n"


def node_set(names: list[str]) -> str:
    """A ClusterShell node set; one range per name length, since clush refuses
    ``gpu[001-1024]`` (the padding changes) but takes ``gpu[001-999],gpu[1000-1024]``."""
    by_length: dict[int, list[str]] = {}
    for name in names:
        by_length.setdefault(len(name), []).append(name)
    return ",".join(hostlist.collect_hostlist(group) for _, group in sorted(by_length.items()))


def _clush_round(inventory: Inventory, workdir: Path, sim_pid: int, fanout: int, timeout_s: float) -> dict[str, Any]:
    """The same round by ClusterShell over OpenSSH; wall time and the CPU of clush and its ssh children."""
    clush = shutil.which("clush", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    ssh = shutil.which("ssh")
    if clush is None or ssh is None:
        missing = "clush (ClusterShell, the test extras)" if clush is None else "the OpenSSH client `ssh`"
        return {"available": False, "reason": f"{missing} is not installed"}
    config = workdir / "ssh_config"
    config.write_text(ssh_config_for(inventory.nodes, inventory.known_hosts), encoding="utf-8")
    names = node_set([h.name for h in inventory.nodes])
    argv = [clush, "-f", str(fanout), "-w", names, "-o", f"-F {config}", "-u", str(int(timeout_s)),
            ROUND_COMMAND.text]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sim_before, started = cpu_s(sim_pid), time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 60, check=False)
    wall_s = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    answered = {line.split(":", 1)[0] for line in done.stdout.splitlines() if ": " in line}
    return {
        "available": True,
        "command": shlex.join(argv),
        "fanout": fanout,
        "wall_s": round(wall_s, 3),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 3),
        "sim_cpu_s": round(cpu_s(sim_pid) - sim_before, 3),
        "hosts_ok": len(answered),
        "output_bytes": len(done.stdout),
        "exit_status": done.returncode,
        "stderr_tail": done.stderr[-300:],
    }


def _ratios(open_: RoundResult, new: RoundResult, clush: dict[str, Any], nodes: int) -> dict[str, float | None]:
    """How many times clush's round is slower (wall) or costlier (CPU); None unless clush reached every node."""
    if not clush.get("available") or clush.get("hosts_ok") != nodes:
        return {"clush_over_open_wall_x": None, "clush_over_new_wall_x": None, "clush_over_open_cpu_x": None}
    return {
        "clush_over_open_wall_x": round(clush["wall_s"] / open_.wall_s, 1),
        "clush_over_new_wall_x": round(clush["wall_s"] / new.wall_s, 1),
        "clush_over_open_cpu_x": round(clush["cpu_s"] / max(open_.collector_cpu_s, 1e-9), 1),
    }


def run(argv: list[str]) -> Measured:
    options = parser("collect", __doc__)
    options.add_argument("--nodes", type=int_in(1, 4096), default=1024, help="nodes (default 1024)")
    options.add_argument("--window", dest="window_s", type=float_in(1, 600), default=None,
                         help="seconds of streaming over which the collector's CPU is measured (default: "
                              "one cycle of the agent's periodic full lines, 60 intervals)")
    options.add_argument("--fanout", type=int_in(1, 1024), default=64, help="clush -f (default 64)")
    options.add_argument("--round-timeout", dest="round_timeout_s", type=float_in(1, 600), default=120.0,
                         help="seconds a node may take to answer one round (default 120)")
    options.add_argument("--stream-interval", dest="stream_interval_s", type=float_in(0.1, 60), default=None,
                         help="agent interval while streaming (default: the simulator's, 1 s up to "
                              "1,024 nodes, else 5 s)")
    options.add_argument("--no-clush", action="store_true", help="skip the ClusterShell comparison")
    options.add_argument("--fleet-duration", dest="fleet_duration_s", type=float_in(0, 3600), default=120.0,
                         help="seconds the whole collector runs from cold, the simulator pinned (default "
                              "120: the first minute and one more; 0 skips it)")
    options.add_argument("--fleet-only", action="store_true",
                         help="measure only the whole fleet from cold (no rounds, clush or streaming)")
    args = options.parse_args(argv)
    nodes = args.nodes
    with tempfile.TemporaryDirectory(prefix="fleet-bench-collect-") as temp:
        workdir = Path(temp)
        print(f"starting the simulator with {nodes} nodes...", file=sys.stderr)
        with simulator(busy_fleet(nodes), workdir, timeout_s=600) as (sim, start_to_ready_s):
            inventory = load_inventory(sim.inventory)
            pid = sim.process.pid
            fleet: dict[str, Any] = {}
            if args.fleet_duration_s:
                with pinned(pid) as (sim_cpus, mine):
                    print(f"the whole fleet from cold for {args.fleet_duration_s:g} s, the simulator on CPU "
                          f"{sorted(sim_cpus)}, the collector on {sorted(mine)}...", file=sys.stderr)
                    fleet = run_async(measure(inventory, workdir / "fleet-complete.db", args.fleet_duration_s, pid))
                fleet |= {"simulator_cpus": sorted(sim_cpus), "collector_cpus": sorted(mine)}
            if args.fleet_only:
                return _fleet_measured(nodes, start_to_ready_s, fleet)
            print("round on new connections, then on open ones...", file=sys.stderr)
            new, open_ = run_async(_rounds(inventory, pid, args.round_timeout_s))
            clush: dict[str, Any] = {"available": False, "reason": "skipped (--no-clush)"}
            if not args.no_clush:
                print(f"the same round with clush -f {args.fanout}...", file=sys.stderr)
                clush = _clush_round(inventory, workdir, pid, args.fanout, args.round_timeout_s)
            interval_s = args.stream_interval_s or collection_interval_s(nodes)
            window_s = args.window_s or (CollectSettings().full_every or 1) * interval_s
            print(f"streaming every node at {interval_s:g} s for {window_s:g} s...", file=sys.stderr)
            stream = run_async(_stream(inventory, workdir / "fleet.db", pid, interval_s, window_s,
                                       args.round_timeout_s))
    fleet_part = _fleet_measured(nodes, start_to_ready_s, fleet)
    results: dict[str, Any] = {
        **fleet_part.results,
        "round_command": ROUND_COMMAND.text,
        **new.as_results("round_new"),
        **open_.as_results("round_open"),
        **{f"stream_{key}": value for key, value in stream.items()},
        **{f"clush_{key}": value for key, value in clush.items()},
        **_ratios(open_, new, clush, nodes),
    }
    return Measured(results, {
        **fleet_part.targets,
        "round_open_wall_s": at_most(1.0),
        "stream_collector_cpu_s_per_s_all_nodes_at_1s": at_most(0.3),
        "clush_over_open_wall_x": at_least(20.0),
    })


def _fleet_measured(nodes: int, start_to_ready_s: float, fleet: dict[str, Any]) -> Measured:
    """The cold-start figures (``time_to_complete_fleet_s``, the rest ``fleet_...``) and their targets."""
    results: dict[str, Any] = {"nodes": nodes, "sim_start_to_ready_s": round(start_to_ready_s, 2)}
    if not fleet:
        return Measured(results)
    results["time_to_complete_fleet_s"] = fleet.pop("time_to_complete_fleet_s")
    results |= {f"fleet_{key}": value for key, value in fleet.items() if key != "nodes"}
    return Measured(results, {
        "time_to_complete_fleet_s": at_most(15.0),
        "fleet_hosts_marked_hung": at_most(0),
        "fleet_hosts_marked_slow": at_most(0),
        "fleet_switch_counters_max_gap_s": at_most(10.0),
        "fleet_rss_growth_after_first_minute_mib": at_most(32.0),
    })
