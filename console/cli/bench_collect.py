"""`fleet bench collect`: what one collection round and a second of streaming cost, against clush.

The simulator runs as its own process (``fleet sim`` with the benchmark fleet of
``fleet bench sim``: N RoCE nodes in 4 leaf groups, 64 switches at 1,024 nodes, 4 jobs;
the built-in ``healthy`` scenario needs >= 16 nodes and brings a leaf per 8 nodes);
the collector parts run in this process, so ``time.process_time()`` around
them is the collector's CPU (the store writer's thread included) and the
simulator's CPU is read from /proc apart. One round is what an engineer would
otherwise run with clush: ``grep -H . /sys/class/infiniband/*/ports/*/counters/*``
on every node (about 12 KB per node). ClusterShell does the same round with
OpenSSH (``clush -f 64``), in the same run, for the ratio.
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import hostlist

from fleet.collectors.commands import Command, Glob, command
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import Inventory, InventoryHost, load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.console.cli.bench_sim import bench_scenario
from fleet.console.cli.common import print_json, run_async
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.sim_process import SimulatorFailed, start_sim
from fleet.simulator.main import collection_interval_s
from fleet.store.writer import StoreWriter

ROUND_COMMAND: Command = command("grep", "-H", ".", Glob("/sys/class/infiniband/*/ports/*/counters/*"))
WRITER_THREAD = "fleet-store-writer"
"""The name ``StoreWriter`` gives its thread (tests/console/test_bench_collect.py holds the two equal)."""
TARGETS = {"open_round_wall_s_max": 1.0, "stream_cpu_s_per_s_max": 0.3, "clush_ratio_min": 20.0}
"""Issue 3, at 1,024 nodes on the 2-core benchmark machine, simulator included."""


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (the simulator), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class RoundResult:
    """One command on every node: seconds of wall time, CPU seconds of the collector and of the simulator."""

    wall_s: float
    collector_cpu_s: float
    sim_cpu_s: float
    hosts_ok: int
    output_bytes: int

    def as_json(self) -> dict[str, Any]:
        return {key: round(value, 3) if isinstance(value, float) else value
                for key, value in dataclasses.asdict(self).items()}


async def _round(pool: SshPool, hosts: list[str], sim_pid: int, timeout_s: float) -> RoundResult:
    sim_before, cpu_before, started = _cpu_s(sim_pid), time.process_time(), time.monotonic()
    results = await asyncio.gather(*(pool.run(host, ROUND_COMMAND, timeout_s=timeout_s) for host in hosts))
    wall_s = time.monotonic() - started
    return RoundResult(wall_s, time.process_time() - cpu_before, _cpu_s(sim_pid) - sim_before,
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


def _thread_cpu_s(name: str) -> float:
    """CPU seconds of this process's thread called ``name`` (0.0 when there is none), on the
    thread's own CPU clock: nanoseconds like ``time.process_time()``, not /proc's 10 ms ticks."""
    thread = next((t for t in threading.enumerate() if t.name == name and t.ident is not None), None)
    if thread is None or thread.ident is None:
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except OSError:  # the thread ended meanwhile
        return 0.0


async def _settled(writer: StoreWriter, backlog: int, timeout_s: float) -> float:
    """Wait until the writer holds at most ``backlog`` queued values; the seconds it took."""
    began = time.monotonic()
    while writer.stats().queued > backlog and time.monotonic() - began < timeout_s:
        await asyncio.sleep(0.2)
    return time.monotonic() - began


async def _stream(inventory: Inventory, db: Path, sim_pid: int, interval_s: float, window_s: float,
                  warmup_timeout_s: float) -> dict[str, Any]:
    """Every node streamed by the agent through the real NodePoller into a real store.

    Only the node pollers run (no switches, no Slurm, no facts, which come every
    300 s), so the window measures the steady stream: SSH, JSON decode, samples,
    optics every 10th line, the periodic full lines (``bench``'s default window holds
    one per node), rates, and the writer's puts and commits. The window
    opens once the writer has caught up with the start (every host's first lines
    create its series), so it holds one second's lines and their writes, no backlog.
    ``collector_cpu_s_per_s`` is the whole process (event loop and store writer
    threads), also given apart: ``loop_thread_cpu_s_per_s`` (SSH, decode, rates,
    puts) and ``store_writer_cpu_s_per_s``. ``cpu_ms_per_line`` x nodes is what
    one line per node per second costs, the same figure when the simulator (one
    Python process) keeps up with every node at 1 s, as it does up to 1,024
    nodes, and the projection where it falls behind.
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
        counters = collector.counters
        lines, samples, dropped = counters.lines, counters.samples, writer.stats().dropped
        cpu, loop_cpu, sim_cpu = time.process_time(), time.thread_time(), _cpu_s(sim_pid)
        writer_cpu = _thread_cpu_s(WRITER_THREAD)
        began = time.monotonic()
        await asyncio.sleep(window_s)
        elapsed = time.monotonic() - began
        cpu_s, lines_seen = time.process_time() - cpu, counters.lines - lines
        loop_cpu_s, writer_cpu_s = time.thread_time() - loop_cpu, _thread_cpu_s(WRITER_THREAD) - writer_cpu
        sim_cpu_s, window_dropped = _cpu_s(sim_pid) - sim_cpu, writer.stats().dropped - dropped
        samples_seen = counters.samples - samples
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await collector.pool.close()
        writer.flush(timeout=60)
        writer.close()
    nodes = len(collector.nodes)
    per_line_s = cpu_s / lines_seen if lines_seen else float("nan")
    return {
        "interval_s": interval_s,
        "window_s": round(elapsed, 2),
        "nodes_streaming": nodes - len(pending),
        "first_lines_s": round(warmup_s, 2),
        "writer_caught_up_s": round(settle_s, 2),
        "lines_per_s": round(lines_seen / elapsed, 1),
        "samples_per_s": round(samples_seen / elapsed, 1),
        "collector_cpu_s_per_s": round(cpu_s / elapsed, 3),
        "loop_thread_cpu_s_per_s": round(loop_cpu_s / elapsed, 3),
        "store_writer_cpu_s_per_s": round(writer_cpu_s / elapsed, 3),
        "sim_cpu_s_per_s": round(sim_cpu_s / elapsed, 3),
        "cpu_ms_per_line": round(per_line_s * 1000, 3),
        "loop_thread_ms_per_line": round(loop_cpu_s / lines_seen * 1000, 3) if lines_seen else None,
        "store_writer_ms_per_line": round(writer_cpu_s / lines_seen * 1000, 3) if lines_seen else None,
        "collector_cpu_s_per_s_all_nodes_at_1s": round(per_line_s * nodes, 3),
        "dropped_puts": counters.dropped,
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
    sim_before, started = _cpu_s(sim_pid), time.monotonic()
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
        "sim_cpu_s": round(_cpu_s(sim_pid) - sim_before, 3),
        "hosts_ok": len(answered),
        "output_bytes": len(done.stdout),
        "exit_status": done.returncode,
        "stderr_tail": done.stderr[-300:],
    }


def _ratios(open_: RoundResult, new: RoundResult, clush: dict[str, Any], nodes: int) -> dict[str, float | None]:
    """How many times clush's round is slower (wall) or costlier (CPU); None unless clush reached every node."""
    if not clush.get("available") or clush.get("hosts_ok") != nodes:
        return {"clush_over_open_wall": None, "clush_over_new_wall": None, "clush_over_open_cpu": None}
    return {
        "clush_over_open_wall": round(clush["wall_s"] / open_.wall_s, 1),
        "clush_over_new_wall": round(clush["wall_s"] / new.wall_s, 1),
        "clush_over_open_cpu": round(clush["cpu_s"] / max(open_.collector_cpu_s, 1e-9), 1),
    }


def bench(nodes: int, window_s: float | None, fanout: int, round_timeout_s: float, with_clush: bool,
          stream_interval_s: float | None) -> dict[str, Any]:
    """Run every measurement against one simulator; the JSON document ``--json`` prints.

    ``window_s`` None: one cycle of the agent's periodic full lines (``CollectSettings.full_every``
    intervals), so that every node's full line, which costs more than its changed-only lines, is in
    the window once, as it is in any such span of a long run."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="fleet-bench-collect-") as temp:
        workdir = Path(temp)
        click.echo(f"starting the simulator with {nodes} nodes...", err=True)
        scenario = workdir / "bench.toml"
        scenario.write_text(bench_scenario(nodes), encoding="utf-8")
        sim = start_sim(str(scenario), workdir / "sim", timeout_s=600)
        try:
            inventory = load_inventory(sim.inventory)
            pid = sim.process.pid
            click.echo("round on new connections, then on open ones...", err=True)
            new, open_ = run_async(_rounds(inventory, pid, round_timeout_s))
            clush: dict[str, Any] = {"available": False, "reason": "skipped (--no-clush)"}
            if with_clush:
                click.echo(f"the same round with clush -f {fanout}...", err=True)
                clush = _clush_round(inventory, workdir, pid, fanout, round_timeout_s)
            interval_s = stream_interval_s or collection_interval_s(nodes)
            window_s = window_s or (CollectSettings().full_every or 1) * interval_s
            click.echo(f"streaming every node at {interval_s:g} s for {window_s:g} s...", err=True)
            stream = run_async(_stream(inventory, workdir / "fleet.db", pid, interval_s, window_s,
                                       round_timeout_s))
        finally:
            sim.stop()
    ratios = _ratios(open_, new, clush, nodes)
    met = {
        "open_round_wall": open_.wall_s <= TARGETS["open_round_wall_s_max"],
        "stream_cpu": stream["collector_cpu_s_per_s_all_nodes_at_1s"] <= TARGETS["stream_cpu_s_per_s_max"],
        "clush_ratio": None if ratios["clush_over_open_wall"] is None
        else ratios["clush_over_open_wall"] >= TARGETS["clush_ratio_min"],
    }
    return {
        "nodes": nodes,
        "cpu_count": os.cpu_count(),
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "sim_start_to_ready_s": round(sim.ready_s - sim.started_s, 2),
        "round_command": ROUND_COMMAND.text,
        "round_new_connections": new.as_json(),
        "round_open_connections": open_.as_json(),
        "stream": stream,
        "clush": clush,
        "ratios": ratios,
        "targets": TARGETS,
        "targets_met": met,
    }


@click.command("collect")
@click.option("--nodes", type=click.IntRange(1, 4096), default=1024, show_default=True)
@click.option("--window", "window_s", type=click.FloatRange(1, 600), default=None,
              help="Seconds of streaming over which the collector's CPU is measured (default: one cycle of "
                   "the agent's periodic full lines, 60 intervals).")
@click.option("--fanout", type=click.IntRange(1, 1024), default=64, show_default=True, help="clush -f.")
@click.option("--round-timeout", "round_timeout_s", type=click.FloatRange(1, 600), default=120.0,
              show_default=True, help="Seconds a node may take to answer one round.")
@click.option("--stream-interval", "stream_interval_s", type=click.FloatRange(0.1, 60), default=None,
              help="Agent interval while streaming (default: the simulator's, 1 s up to 1,024 nodes, else 5 s).")
@click.option("--no-clush", "no_clush", is_flag=True, help="Skip the ClusterShell comparison.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the only output on stdout).")
def bench_collect(nodes: int, window_s: float | None, fanout: int, round_timeout_s: float,
                  stream_interval_s: float | None, no_clush: bool, as_json: bool) -> None:
    """One round on new and on open connections, streaming CPU at 1 s, and clush's round, side by side."""
    try:
        result = bench(nodes, window_s, fanout, round_timeout_s, not no_clush, stream_interval_s)
    except SimulatorFailed as error:
        click.echo(f"fleet bench collect: {error}", err=True)
        sys.exit(int(ExitCode.FAILED))
    if as_json:
        print_json(result)
        return
    for key, value in result.items():
        click.echo(f"{key:24s} {value}")
