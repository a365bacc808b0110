"""`fleet bench linktest`: a full-mesh link test on one rail, against the same pairs one at a time.

The simulator runs as its own process (``fleet sim``), as it would face a real
console. The link test runs exactly as ``fleet linktest --rails R`` does
(local checks, then n-1 rounds of n/2 disjoint pairs). The one-at-a-time
baseline runs a sample of the same pairs sequentially with the same probe
settings (GID indices already known, connections already open: the baseline
gets every advantage) and extrapolates its mean to all pairs; the JSON says
that it is extrapolated and from how many pairs.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import click

TARGET_SPEEDUP = 60.0
"""Issue 6: at least 60x fewer seconds than one pair at a time."""
TARGET_WALL_S = 120.0
"""Issue 6: a 128-node full mesh on one rail in two minutes (in-house baseline: 30 minutes)."""

BENCH_SCENARIO = """\
description = "Link test benchmark: {nodes} idle nodes, 4 leaf groups."

[fabric]
nodes = {nodes}
nodes_per_leaf = {per_leaf}
spines = 8
link_layer = "roce"
link_gbps = 400
seed = 1
"""


async def _measure(inventory_path: Path, rail: int, iterations: int | None, sample: int,
                   max_parallel: int) -> dict[str, Any]:
    from collectors.inventory import load_inventory
    from collectors.probes.linktest import LinktestSpec, run_linktest
    from collectors.probes.perftest_probe import GidCache, PerftestSpec, run_perftest
    from collectors.sshpool import PoolSettings, SshPool
    from fabric.naming import nic_name
    from fabric.pairing import schedule

    inventory = load_inventory(inventory_path)
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=PoolSettings(ssh_config=()))
    nodes = tuple(host.name for host in inventory.nodes)
    try:
        spec = LinktestSpec(nodes, rails=(rail,), iterations=iterations, max_parallel=max_parallel)
        started = time.monotonic()
        report = await run_linktest(pool, spec, cabling=inventory.cabling)
        parallel_s = time.monotonic() - started
        pairs = [t for r in schedule(nodes, (rail,)) for t in r]
        step = max(1, len(pairs) // sample)
        chosen = pairs[::step][:sample]
        gids = GidCache()
        for test in chosen[:2]:  # warm the GID cache the way the link test had it warm
            for node in (test.src, test.dst):
                await gids.index(pool, node, nic_name(rail), 1, 30.0)
        started = time.monotonic()
        ok = 0
        for test in chosen:
            record = await run_perftest(pool, PerftestSpec(test.src, test.dst, test=spec.test, src_nic=nic_name(rail),
                                                           iterations=iterations), gids=gids)
            ok += record.ok
        per_pair_s = (time.monotonic() - started) / len(chosen)
    finally:
        await pool.close()
    sequential_s = per_pair_s * len(pairs)
    speedup = sequential_s / parallel_s
    return {
        "nodes": len(nodes),
        "rail": rail,
        "pairs": len(pairs),
        "rounds": report.rounds,
        "iterations": iterations,
        "linktest_s": round(parallel_s, 2),
        "linktest_bad_pairs": len(report.bad),
        "linktest_suspects": len(report.suspects),
        "sequential_sample_pairs": len(chosen),
        "sequential_sample_ok": ok,
        "sequential_per_pair_s": round(per_pair_s, 4),
        "sequential_s": round(sequential_s, 1),
        "sequential_extrapolated": len(chosen) < len(pairs),
        "speedup": round(speedup, 1),
        "target_speedup": TARGET_SPEEDUP,
        "target_wall_s": TARGET_WALL_S,
        "meets_speedup_target": speedup >= TARGET_SPEEDUP,
        "meets_wall_target": parallel_s <= TARGET_WALL_S,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


@click.command("linktest")
@click.option("--nodes", type=click.IntRange(2, 4096), default=128, show_default=True)
@click.option("--rail", type=click.IntRange(0, 7), default=0, show_default=True)
@click.option("--iterations", type=int, default=None, help="perftest -n per probe (default: perftest's 1000).")
@click.option("--sample", type=click.IntRange(1, 100_000), default=64, show_default=True,
              help="Pairs measured one at a time for the baseline (extrapolated to all pairs).")
@click.option("--max-parallel", type=int, default=512, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the only output on stdout).")
def bench_linktest(nodes: int, rail: int, iterations: int | None, sample: int, max_parallel: int,
                   as_json: bool) -> None:
    """Full-mesh link test on one rail of a simulated fleet vs the same pairs one at a time."""
    from console.cli.common import fail
    from console.cli.sim_process import SimulatorFailed, start_sim

    with tempfile.TemporaryDirectory(prefix="fleet-bench-linktest-") as temp:
        scenario = Path(temp) / "bench.toml"
        scenario.write_text(BENCH_SCENARIO.format(nodes=nodes, per_leaf=max(1, -(-nodes // 4))), encoding="utf-8")
        try:
            sim = start_sim(str(scenario), Path(temp) / "sim")
        except SimulatorFailed as error:
            fail(f"simulator did not start: {error}")
        try:
            result = asyncio.run(_measure(sim.inventory, rail, iterations, sample, max_parallel))
        finally:
            sim.stop()
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    click.echo(f"{result['pairs']} pairs of {nodes} nodes on rail {rail}: link test {result['linktest_s']} s, "
               f"one at a time {result['sequential_s']} s (extrapolated from {result['sequential_sample_pairs']}), "
               f"{result['speedup']}x (target {TARGET_SPEEDUP:g}x, {TARGET_WALL_S:g} s)")
