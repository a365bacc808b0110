"""`fleet bench linktest`: a full-mesh link test on one rail, against the same pairs one at a time.

The simulator runs as its own process (``fleet sim``), as it would face a real
console. The link test runs exactly as ``fleet linktest --rails R`` does
(local checks, then n-1 rounds of n/2 disjoint pairs). The one-at-a-time
baseline runs a sample of the same pairs sequentially with the same probe
settings (GID indices already known, connections already open, the nodes'
probe runners started: the baseline gets every advantage) and extrapolates its mean to all pairs; the JSON says
that it is extrapolated and from how many pairs. The JSON also says how much
CPU each side spent per pair during the link test (the console's own process
and the simulator's), because on a small machine that, not waiting, bounds it.

It also splits the link test's wall time into the local checks
(``linktest_checks_s``, before and after the probes) and the probes
(``linktest_probes_s``), and gives the best the schedule could do
(``speedup_bound``): the local checks plus every round lasting exactly one
pair's one-at-a-time time from the start of its client to its end
(``sequential_client_s_per_pair``; the link test starts a pair's server
while its NICs are still in their previous probes, so a round need not last
the server's start too). Every NIC measures once a round, one probe after
the other, so rounds cannot be shorter than that: that bound, not the number
of pairs per round, is what a speedup is to be held against;
``probes_speedup`` leaves the local checks out.

``--compare-sim PATH`` runs the same benchmark a second time, in the same
invocation, against the simulator of another source tree (an earlier commit
checked out with ``git worktree add PATH REV``), so a simulator change is
measured side by side under the same load.
"""

from __future__ import annotations

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
                   max_parallel: int, sim_pid: int) -> dict[str, Any]:
    from fleet.collectors.commands import command
    from fleet.collectors.inventory import load_inventory
    from fleet.collectors.probe_sessions import ProbeSessions
    from fleet.collectors.probes.linktest import LinktestSpec, run_linktest
    from fleet.collectors.probes.perftest_probe import GidCache, PerftestSpec, run_perftest
    from fleet.collectors.sshpool import PoolSettings, SshPool
    from fleet.fabric.naming import nic_name
    from fleet.fabric.pairing import schedule

    inventory = load_inventory(inventory_path)
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=PoolSettings(ssh_config=()))
    nodes = tuple(host.name for host in inventory.nodes)
    try:
        spec = LinktestSpec(nodes, rails=(rail,), iterations=iterations, max_parallel=max_parallel)
        started, console_cpu, sim_cpu = time.monotonic(), time.process_time(), _cpu_s(sim_pid)
        report = await run_linktest(pool, spec, cabling=inventory.cabling)
        parallel_s = time.monotonic() - started
        console_cpu, sim_cpu = time.process_time() - console_cpu, _cpu_s(sim_pid) - sim_cpu
        pairs = [t for r in schedule(nodes, (rail,)) for t in r]
        step = max(1, len(pairs) // sample)
        chosen = pairs[::step][:sample]
        gids = GidCache()
        sessions = ProbeSessions(pool)
        for test in chosen[:2]:  # warm the GID cache the way the link test had it warm
            for node in (test.src, test.dst):
                await gids.index(pool, node, nic_name(rail), 1, 30.0)
        for node in {node for test in chosen for node in (test.src, test.dst)}:  # and the runners started
            await sessions.run(node, command("true"), 30.0)
        started = time.monotonic()
        ok = 0
        stages: dict[str, float] = {}  # when the probe under way reached each stage
        client_s = 0.0  # the pairs from their client's start to their end
        for test in chosen:
            stages["server"] = time.monotonic()
            record = await run_perftest(sessions, PerftestSpec(test.src, test.dst, test=spec.test, src_nic=nic_name(rail),
                                                           iterations=iterations), gids=gids,
                                        on_stage=lambda stage: stages.update({stage: time.monotonic()}))
            ok += record.ok
            client_s += time.monotonic() - stages.pop("client", stages["server"])
        per_pair_s = (time.monotonic() - started) / len(chosen)
        client_s /= len(chosen)
        await sessions.close()
    finally:
        await pool.close()
    sequential_s = per_pair_s * len(pairs)
    speedup = sequential_s / parallel_s
    checks_s = parallel_s - report.probes_seconds
    bound_s = checks_s + report.rounds * client_s
    return {
        "nodes": len(nodes),
        "rail": rail,
        "pairs": len(pairs),
        "rounds": report.rounds,
        "iterations": iterations,
        "linktest_s": round(parallel_s, 2),
        "linktest_checks_s": round(checks_s, 2),
        "linktest_probes_s": round(report.probes_seconds, 2),
        "linktest_probe_s_per_round": round(report.probes_seconds / max(1, report.rounds), 4),
        "linktest_console_cpu_ms_per_pair": round(console_cpu / len(pairs) * 1e3, 2),
        "linktest_sim_cpu_ms_per_pair": round(sim_cpu / len(pairs) * 1e3, 2),
        "linktest_bad_pairs": len(report.bad),
        "linktest_suspects": len(report.suspects),
        "sequential_sample_pairs": len(chosen),
        "sequential_sample_ok": ok,
        "sequential_per_pair_s": round(per_pair_s, 4),
        "sequential_client_s_per_pair": round(client_s, 4),
        "sequential_s": round(sequential_s, 1),
        "sequential_extrapolated": len(chosen) < len(pairs),
        "speedup": round(speedup, 1),
        "probes_speedup": round(sequential_s / report.probes_seconds, 1),
        "speedup_bound": round(sequential_s / bound_s, 1),
        "target_speedup": TARGET_SPEEDUP,
        "target_wall_s": TARGET_WALL_S,
        "meets_speedup_target": speedup >= TARGET_SPEEDUP,
        "meets_wall_target": parallel_s <= TARGET_WALL_S,
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (0 where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _bench(nodes: int, rail: int, iterations: int | None, sample: int, max_parallel: int,
           sim_tree: Path | None) -> dict[str, Any]:
    """One benchmark against a fresh ``fleet sim``; ``sim_tree``: run the simulator from that source tree."""
    from fleet.console.cli.common import fail, run_async
    from fleet.console.cli.exit_codes import ExitCode
    from fleet.console.cli.sim_process import SimulatorFailed, start_sim

    with tempfile.TemporaryDirectory(prefix="fleet-bench-linktest-") as temp:
        scenario = Path(temp) / "bench.toml"
        scenario.write_text(BENCH_SCENARIO.format(nodes=nodes, per_leaf=max(1, -(-nodes // 4))), encoding="utf-8")
        saved_path, saved_cwd = os.environ.get("PYTHONPATH"), os.getcwd()
        if sim_tree is not None:  # the child (python -c: its working directory first) imports from there
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(sim_tree.resolve()), saved_path) if p)
            os.chdir(sim_tree)
        try:
            sim = start_sim(str(scenario), Path(temp) / "sim")
        except SimulatorFailed as error:
            fail(f"simulator did not start: {error}", ExitCode.FAILED)
        finally:
            if sim_tree is not None:
                os.chdir(saved_cwd)
                if saved_path is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved_path
        try:
            return run_async(_measure(sim.inventory, rail, iterations, sample, max_parallel, sim.process.pid))
        finally:
            sim.stop()


@click.command("linktest")
@click.option("--nodes", type=click.IntRange(2, 4096), default=128, show_default=True)
@click.option("--rail", type=click.IntRange(0, 7), default=0, show_default=True)
@click.option("--iterations", type=int, default=None, help="perftest -n per probe (default: perftest's 1000).")
@click.option("--sample", type=click.IntRange(1, 100_000), default=64, show_default=True,
              help="Pairs measured one at a time for the baseline (extrapolated to all pairs).")
@click.option("--max-parallel", type=int, default=512, show_default=True)
@click.option("--compare-sim", "compare_sim", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Also run against the simulator of this source tree (e.g. a git worktree of an "
                                 "earlier commit), first, and report both.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (the only output on stdout).")
def bench_linktest(nodes: int, rail: int, iterations: int | None, sample: int, max_parallel: int,
                   compare_sim: Path | None, as_json: bool) -> None:
    """Full-mesh link test on one rail of a simulated fleet vs the same pairs one at a time."""
    if compare_sim is not None and not (compare_sim / "simulator" / "main.py").is_file():
        raise click.BadParameter(f"{compare_sim} has no simulator/main.py", param_hint="--compare-sim")
    other = _bench(nodes, rail, iterations, sample, max_parallel, compare_sim) if compare_sim is not None else None
    result = _bench(nodes, rail, iterations, sample, max_parallel, None)
    if other is not None:
        result["compare_sim"] = {"tree": str(compare_sim), **other}
        result["linktest_faster_than_compare"] = round(other["linktest_s"] / result["linktest_s"], 2)
        result["sequential_faster_than_compare"] = round(other["sequential_s"] / result["sequential_s"], 2)
    if as_json:
        click.echo(json.dumps(result, indent=2, sort_keys=True))
        return
    if other is not None:
        click.echo(f"simulator of {compare_sim}: link test {other['linktest_s']} s, one at a time "
                   f"{other['sequential_s']} s, {other['speedup']}x")
    click.echo(f"{result['pairs']} pairs of {nodes} nodes on rail {rail}: link test {result['linktest_s']} s, "
               f"one at a time {result['sequential_s']} s (extrapolated from {result['sequential_sample_pairs']}), "
               f"{result['speedup']}x (target {TARGET_SPEEDUP:g}x, {TARGET_WALL_S:g} s)")
