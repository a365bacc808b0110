"""`fleet bench sim`: how long a large simulated fleet takes to start, and what it costs when idle."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import click

from fleet.console.cli.exit_codes import ExitCode

BENCH_SCENARIO = """\
description = "Benchmark fleet: {nodes} nodes in 4 leaf groups, 4 jobs."

[fabric]
nodes = {nodes}
nodes_per_leaf = {per_leaf}
spines = {spines}
link_layer = "roce"
link_gbps = 400
seed = 1
{jobs}"""


def bench_scenario(nodes: int) -> str:
    """4 leaf groups (32 leaves) and 32 spines: 1,024 nodes come with 64 switches."""
    per_leaf = -(-nodes // 4)
    jobs = ""
    quarter = max(1, nodes // 4)
    for k in range(min(4, nodes)):
        first, last = k * quarter + 1, nodes if k == 3 else (k + 1) * quarter
        if first <= last:
            jobs += f'\n[[jobs]]\nid = {9000 + k}\ntenant = "t{k}"\nnodes = "gpu[{first:03d}-{last:03d}]"\nload = 0.6\n'
    return BENCH_SCENARIO.format(nodes=nodes, per_leaf=per_leaf, spines=32, jobs=jobs)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _command_s(inventory: Path, host: str, command: str) -> float:
    """Seconds for one SSH command on ``host`` (connect included), as the console would run it."""
    import asyncssh

    from fleet.collectors.inventory import load_inventory

    loaded = load_inventory(inventory)
    target = loaded.host(host)
    started = time.monotonic()
    async with asyncssh.connect(
        target.address, target.port, username="fleet", client_keys=[str(target.identity_file)],
        known_hosts=str(loaded.known_hosts), agent_path=None, config=[],
    ) as conn:  # fmt: skip
        await conn.run(command, check=True)
    return time.monotonic() - started


@click.command("sim")
@click.option("--nodes", type=click.IntRange(1, 4096), default=1024, show_default=True)
@click.option("--window", "window_s", type=click.FloatRange(1, 600), default=10.0, show_default=True,
              help="Seconds over which idle CPU is measured.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the only output on stdout).")
def bench_sim(nodes: int, window_s: float, as_json: bool) -> None:
    """Start a fleet of --nodes, measure start-up time, idle CPU and memory, then the first commands."""
    from fleet.console.cli.common import run_async
    from fleet.console.cli.sim_process import SimulatorFailed, start_sim

    with tempfile.TemporaryDirectory(prefix="fleet-bench-sim-") as temp:
        scenario = Path(temp) / "bench.toml"
        scenario.write_text(bench_scenario(nodes), encoding="utf-8")
        click.echo(f"starting {nodes} nodes...", err=True)
        try:
            sim = start_sim(str(scenario), Path(temp) / "state", timeout_s=300)
        except SimulatorFailed as error:
            click.echo(f"fleet bench sim: {error}", err=True)
            sys.exit(int(ExitCode.FAILED))
        try:
            pid = sim.process.pid
            click.echo(f"ready; measuring idle CPU for {window_s:.0f} s...", err=True)
            cpu_before, wall_before = _cpu_s(pid), time.monotonic()
            time.sleep(window_s)
            idle_cpu_pct = (_cpu_s(pid) - cpu_before) / (time.monotonic() - wall_before) * 100
            rss_idle = _rss_mib(pid)
            first = run_async(_command_s(sim.inventory, "gpu001", "ibstat"))
            second = run_async(_command_s(sim.inventory, f"gpu{nodes:03d}", "ibstat"))
            switch = run_async(_command_s(sim.inventory, "leaf01", "nv show interface"))
            rss_after = _rss_mib(pid)
            ready_line = sim.ready_line
        finally:
            status = sim.stop()
    result = {
        "nodes": nodes,
        "ready_line": ready_line,
        "start_to_ready_s": round(sim.ready_s - sim.started_s, 3),
        "idle_window_s": window_s,
        "idle_cpu_pct": round(idle_cpu_pct, 2),
        "rss_idle_mib": round(rss_idle, 1),
        "first_command_s": round(first, 3),
        "second_command_s": round(second, 3),
        "switch_command_s": round(switch, 3),
        "rss_after_commands_mib": round(rss_after, 1),
        "exit_status": status,
        "cpu_count": os.cpu_count(),
    }
    if as_json:
        click.echo(json.dumps(result))
    else:
        for key, value in result.items():
            click.echo(f"{key:24s} {value}")
