"""A full-mesh link test on one rail, against the same pairs one at a time.

The simulator runs as its own process (``fleet sim``), as it would face a real console. The link
test runs exactly as ``fleet linktest --rails R`` does (local checks, then n-1 rounds of n/2
disjoint pairs). The one-at-a-time baseline runs a sample of the same pairs sequentially with the
same probe settings (GID indices already known, connections already open, the nodes' probe runners
started: the baseline gets every advantage) and extrapolates its mean to all pairs
(``sequential_extrapolated``, from ``sequential_sample_pairs``). The CPU each side spent per pair
during the link test is given too (the console's own process and the simulator's), because on a
small machine that, not waiting, bounds it.

The link test's wall time is split into the local checks (``linktest_checks_s``, before and after
the probes) and the probes (``linktest_probes_s``). ``speedup_bound_x`` is the best the schedule
could do: the local checks plus every round lasting exactly one pair's one-at-a-time time from the
start of its client to its end (``sequential_client_s_per_pair``; the link test starts a pair's
server while its NICs are still in their previous probes, so a round need not last the server's
start too). Every NIC measures once a round, one probe after the other, so rounds cannot be shorter
than that: that bound, not the number of pairs per round, is what a speedup is to be held against;
``probes_speedup_x`` leaves the local checks out.

``--compare-sim TREE`` runs the same benchmark a second time, first, in the same invocation,
against the simulator of another source tree (an earlier commit checked out with
``git worktree add TREE REV``), so a simulator change is measured side by side under the same load:
its figures are the ``compare_sim_*`` keys.

Targets: the 128-node full mesh on one rail in at most 120 s (``linktest_s``), at least 60 times
fewer seconds than one pair at a time (``speedup_x``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._options import fleet_path, int_in, parser
from benchmarks._processes import cpu_s
from benchmarks._simulated import idle_fleet, simulator
from benchmarks.report import Measured, at_least, at_most
from fleet.console.cli.common import run_async


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
        started, console_cpu, sim_cpu = time.monotonic(), time.process_time(), cpu_s(sim_pid)
        report = await run_linktest(pool, spec, cabling=inventory.cabling)
        parallel_s = time.monotonic() - started
        console_cpu, sim_cpu = time.process_time() - console_cpu, cpu_s(sim_pid) - sim_cpu
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
        "speedup_x": round(sequential_s / parallel_s, 1),
        "probes_speedup_x": round(sequential_s / report.probes_seconds, 1),
        "speedup_bound_x": round(sequential_s / bound_s, 1),
    }


def _once(args: argparse.Namespace, tree: Path | None) -> dict[str, Any]:
    """One benchmark against a fresh ``fleet sim``; ``tree``: run the simulator from that source tree."""
    with tempfile.TemporaryDirectory(prefix="fleet-bench-linktest-") as temp:
        print(f"starting {args.nodes} nodes" + (f" (simulator of {tree})" if tree else "") + "...",
              file=sys.stderr)
        with simulator(idle_fleet(args.nodes), Path(temp), tree=tree) as (sim, _):
            print(f"link test on rail {args.rail}, then {args.sample} pairs one at a time...", file=sys.stderr)
            return run_async(_measure(sim.inventory, args.rail, args.iterations, args.sample,
                                      args.max_parallel, sim.process.pid))


def _source_tree(text: str) -> Path:
    """An argparse type: a checkout whose ``fleet`` namespace holds a simulator."""
    tree = Path(text)
    if not (fleet_path(tree) / "fleet" / "simulator" / "main.py").is_file():
        raise argparse.ArgumentTypeError(f"{tree} has no fleet/simulator/main.py")
    return tree


def run(argv: list[str]) -> Measured:
    options = parser("linktest", __doc__)
    options.add_argument("--nodes", type=int_in(2, 4096), default=128, help="nodes (default 128)")
    options.add_argument("--rail", type=int_in(0, 7), default=0, help="rail tested (default 0)")
    options.add_argument("--iterations", type=int_in(1, 10_000_000), default=None,
                         help="perftest -n per probe (default: perftest's 1000)")
    options.add_argument("--sample", type=int_in(1, 100_000), default=64,
                         help="pairs measured one at a time for the baseline, extrapolated to all pairs "
                              "(default 64)")
    options.add_argument("--max-parallel", type=int_in(1, 100_000), default=512,
                         help="probes at once (default 512)")
    options.add_argument("--compare-sim", type=_source_tree, default=None, metavar="TREE",
                         help="also run against the simulator of this source tree (e.g. a git worktree "
                              "of an earlier commit), first, and report both")
    args = options.parse_args(argv)
    other = _once(args, args.compare_sim) if args.compare_sim is not None else None
    results = _once(args, None)
    if other is not None:
        results |= {"compare_sim_tree": str(args.compare_sim),
                    **{f"compare_sim_{key}": value for key, value in other.items()},
                    "linktest_faster_than_compare_x": round(other["linktest_s"] / results["linktest_s"], 2),
                    "sequential_faster_than_compare_x": round(other["sequential_s"] / results["sequential_s"], 2)}
    return Measured(results, {"linktest_s": at_most(120.0), "speedup_x": at_least(60.0)})
