"""``python -m benchmarks store_lag``: how far behind the header's store lag falls during and after an
action, and how soon it is back under 2 s.

The real console (``FleetApp``, headless, 120x35) collects live from the simulated fleet (``fleet
sim`` as its own process, the ``incident`` scenario's 32 nodes by default) with its diagnosis and its
per-job latency sampler running, as ``fleet demo`` does. After ``--warm`` seconds it runs a full-mesh
link test over every node on every rail (``l`` on the Fleet screen, all nodes), then keeps watching
for ``--after`` seconds. Every second it reads the lag the summary bar shows (``FleetSummary.lag_s``:
the moment shown minus the newest stored sample).

Figures: the largest lag before, during and after the link test; ``recover_s``, the seconds from
the link test's end until the lag is under 2 s and stays there to the end of the run; the store's
size (MiB, its WAL included), the part of it that holds collected values (``samples_mib``: frames,
chunks, changes, latest rows, rollups) and that part per node-hour, and the probes' part (the link
test's ~4,000 probes with their raw output). Targets: ``recover_s`` <= 30, and
``samples_mib_per_node_hour`` <= 20 (docs/store.md, "Size": ~18 MiB a node's first hour).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._options import float_in, int_in, parser
from benchmarks.report import BenchmarkFailed, Measured, at_most

LAG_OK_S = 2.0
"""The header's lag a user reads as "keeping up"."""
RECOVER_TARGET_S = 30.0
FIRST_HOUR_MIB_PER_NODE = 20.0
"""docs/store.md, "Size": a node's first hour with its share of the switches, every sample still a frame
(~18 MiB), with room for noise."""


def store_mib(db: Path) -> float:
    """The store file and its WAL, MiB."""
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists()) / 2**20


SAMPLE_TABLES = ("frames", "chunks", "changes", "latest", "rollup_1m", "rollup_1h")
"""Where the collected values are (with their indexes); the rest is records: probes, events, jobs."""


def table_mib(db: Path) -> dict[str, float]:
    """MiB per table, its indexes counted with it (SQLite's dbstat)."""
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        pages: dict[str, int] = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        owner: dict[str, str] = dict(conn.execute(
            "SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')").fetchall())
    sizes: dict[str, float] = {}
    for name, size in pages.items():
        table = owner.get(name, name)
        sizes[table] = sizes.get(table, 0.0) + size / 2**20
    return sizes


async def _measure(scenario: str, nodes: int | None, warm_s: float, after_s: float, rails: tuple[int, ...],
                   state: Path) -> dict[str, Any]:
    from fleet.collectors.inventory import load_inventory
    from fleet.console.app import FleetApp
    from fleet.console.cli.sim_process import SimulatorFailed, start_sim
    from fleet.console.config import Config
    from fleet.console.feed import Feed, open_store_loader

    try:
        sim = start_sim(scenario, state / "sim", nodes=nodes)
    except SimulatorFailed as error:
        raise BenchmarkFailed(f"the simulator did not start: {error}") from error
    print(f"store_lag: {scenario} ready; collecting {warm_s:.0f} s before the link test", file=sys.stderr)
    db = state / "bench.sqlite"
    samples: list[tuple[float, float | None, str]] = []  # (monotonic, lag, phase)
    try:
        inventory = load_inventory(sim.inventory)
        config = Config(db_path=db, screenshot_dir=state, diagnose=True, job_latency="auto")
        app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=config.refresh_s), inventory)
        started = time.monotonic()
        async with app.run_test(size=(120, 35)) as pilot:
            phase = "before"

            async def sample_until(end: float) -> None:
                while time.monotonic() < end:
                    view = app.view
                    samples.append((time.monotonic(), view.summary.lag_s if view is not None else None, phase))
                    await pilot.pause(1.0)

            await sample_until(started + warm_s)
            names = tuple(sorted(r.name for r in app.view.rows)) if app.view is not None else ()
            phase = "during"
            linktest_started = time.monotonic()
            print(f"store_lag: link test over {len(names)} nodes, rails {rails}", file=sys.stderr)
            app.probes.start_linktest(names, rails)
            while app.probes.state.running or app.probes.state.label == "":
                samples.append((time.monotonic(), app.view.summary.lag_s if app.view is not None else None, phase))
                await pilot.pause(1.0)
            linktest_ended = time.monotonic()
            phase = "after"
            await sample_until(linktest_ended + after_s)
            run_s = time.monotonic() - started
            node_count = len(names)
    finally:
        sim.stop()

    def largest(which: str) -> float | None:
        lags = [lag for _t, lag, p in samples if p == which and lag is not None]
        return round(max(lags), 2) if lags else None

    after = [(t, lag) for t, lag, p in samples if p == "after"]
    last_bad = max((t for t, lag in after if lag is None or lag >= LAG_OK_S), default=None)
    recover_s = 0.0 if last_bad is None else last_bad + 1.0 - linktest_ended
    mib = store_mib(db)
    tables = table_mib(db)
    samples_mib = sum(tables.get(t, 0.0) for t in SAMPLE_TABLES)
    node_hours = max(1, node_count) * run_s / 3600.0
    return {
        "scenario": scenario,
        "nodes": node_count,
        "rails": len(rails),
        "linktest_s": round(linktest_ended - linktest_started, 1),
        "lag_before_max_s": largest("before"),
        "lag_during_max_s": largest("during"),
        "lag_after_max_s": largest("after"),
        "recover_s": round(recover_s, 1),
        "watched_after_s": after_s,
        "store_mib": round(mib, 1),
        "samples_mib": round(samples_mib, 1),
        "probes_mib": round(tables.get("probes", 0.0), 1),
        "samples_mib_per_node_hour": round(samples_mib / node_hours, 2),
    }


def run(argv: list[str]) -> Measured:
    options = parser("store_lag", __doc__)
    options.add_argument("--scenario", default="incident", help="a built-in scenario or a scenario file")
    options.add_argument("--nodes", type=int_in(2, 4096), default=None, help="override the scenario's node count")
    options.add_argument("--warm", type=float_in(1.0), default=45.0, help="seconds of collection before the link test")
    options.add_argument("--after", type=float_in(1.0), default=90.0, help="seconds watched after the link test")
    options.add_argument("--rails", default="0-7", help="rails of the link test, e.g. 0-7 or 0,1")
    args = options.parse_args(argv)
    first, _, last = args.rails.partition("-")
    rails = tuple(range(int(first), int(last) + 1)) if last else tuple(int(r) for r in args.rails.split(","))
    with tempfile.TemporaryDirectory(prefix="fleet-bench-lag-") as temp:
        results = asyncio.run(_measure(args.scenario, args.nodes, args.warm, args.after, rails, Path(temp)))
    return Measured(results, {"recover_s": at_most(RECOVER_TARGET_S),
                              "samples_mib_per_node_hour": at_most(FIRST_HOUR_MIB_PER_NODE)})
