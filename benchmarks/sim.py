"""How long a large simulated fleet takes to start, and what it costs idle and for its first commands.

``fleet sim`` runs as its own process on the benchmark fleet (``--nodes`` RoCE nodes in 4 leaf
groups, 32 spines, 4 jobs: 1,024 nodes come with 64 switches). Measured: start to ready line,
idle CPU over ``--window`` seconds (from /proc), resident memory idle and after the first commands,
and the wall time of one SSH command (connection included) on the first node, the last node and a
leaf switch. The first command after a change of network state solves the traffic model, so the
first command costs more than the next. No targets: these figures size the other benchmarks.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benchmarks._options import float_in, int_in, parser
from benchmarks._processes import cpu_s, rss_mib
from benchmarks._simulated import busy_fleet, simulator
from benchmarks.report import Measured
from fleet.console.cli.common import run_async


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


def run(argv: list[str]) -> Measured:
    options = parser("sim", __doc__)
    options.add_argument("--nodes", type=int_in(1, 4096), default=1024, help="nodes (default 1024)")
    options.add_argument("--window", dest="window_s", type=float_in(1, 600), default=10.0,
                         help="seconds over which idle CPU is measured (default 10)")
    args = options.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fleet-bench-sim-") as temp:
        print(f"starting {args.nodes} nodes...", file=sys.stderr)
        with simulator(busy_fleet(args.nodes), Path(temp)) as (sim, start_to_ready_s):
            pid = sim.process.pid
            print(f"ready; measuring idle CPU for {args.window_s:g} s...", file=sys.stderr)
            cpu_before, wall_before = cpu_s(pid), time.monotonic()
            time.sleep(args.window_s)  # the measurement itself: the simulator left alone
            idle_cpu_pct = (cpu_s(pid) - cpu_before) / (time.monotonic() - wall_before) * 100
            rss_idle = rss_mib(pid)
            first = run_async(_command_s(sim.inventory, "gpu001", "ibstat"))
            second = run_async(_command_s(sim.inventory, f"gpu{args.nodes:03d}", "ibstat"))
            switch = run_async(_command_s(sim.inventory, "leaf01", "nv show interface"))
            rss_after = rss_mib(pid)
        status = sim.process.returncode
    return Measured({
        "nodes": args.nodes,
        "ready_line": sim.ready_line,
        "start_to_ready_s": round(start_to_ready_s, 3),
        "idle_window_s": args.window_s,
        "idle_cpu_pct": round(idle_cpu_pct, 2),
        "rss_idle_mib": round(rss_idle, 1),
        "first_command_s": round(first, 3),
        "second_command_s": round(second, 3),
        "switch_command_s": round(switch, 3),
        "rss_after_commands_mib": round(rss_after, 1),
        "sim_exit_status": status,
    })
