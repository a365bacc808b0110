"""The console headless against a store filled for N nodes: first frame, refresh, memory.

Measured: time to the first frame (app start to the Fleet table drawn from the store: every node
with its collection state), to the first frame with values, the time to apply one refresh to the
Fleet table (p50/p99, over refreshes in which a third of the nodes changed) and the cells it
redrew, the time to read and build one refresh off the UI thread, and the resident memory.

Targets: first frame <= 1.0 s, refresh apply p99 <= 50 ms, resident memory <= 300 MiB.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._filled_store import TICKS, fill_store
from benchmarks._options import int_in, parser
from benchmarks._processes import rss_mib
from benchmarks.report import BenchmarkFailed, Measured, at_most

TERMINAL = (200, 60)
"""Columns and rows of the headless terminal."""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def _measure(db: Path, now_ts: float, refreshes: int, size: tuple[int, int]) -> dict[str, Any]:
    from fleet.console.app import FleetApp
    from fleet.console.config import Config
    from fleet.console.feed import Feed, open_store_loader
    from fleet.console.screens.fleet import FleetScreen
    from fleet.console.widgets.fleet_table import FleetTable

    opening = time.perf_counter()
    open_store_loader(db)
    store_open_s = time.perf_counter() - opening
    started = time.perf_counter()
    # The table's path only: the diagnosis worker (a thread every 30 s; `fleet diagnose` times it) stays off.
    config = Config(db_path=db, refresh_s=3600.0, diagnose=False)
    app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=3600.0, now=lambda: now_ts))
    async with app.run_test(size=size) as pilot:
        view = app.view if app.view is not None else await asyncio.wait_for(app.next_view(), 60)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        # The frame drawn after the table took the view: not ``pilot.pause()``, which waits for the
        # whole process to idle (at most 1 s), so it also waited on the reader thread reading values.
        await asyncio.wait_for(table.wait_for_refresh(), 60)
        first_frame_s = time.perf_counter() - started
        if table.row_count != len(view.rows):
            raise BenchmarkFailed(f"the first frame holds {table.row_count} of {len(view.rows)} nodes")
        while app.view is None or not app.view.snapshot.complete:
            try:
                await asyncio.wait_for(app.next_view(), 60)
            except TimeoutError:
                problems = "; ".join(str(n.message) for n in app._notifications) or "none shown"
                raise BenchmarkFailed(f"no view with values within 60 s (problems: {problems})") from None
        view = app.view
        # Timed like the first frame: the screen refresh after the table took the values.
        await asyncio.wait_for(table.wait_for_refresh(), 60)
        full_frame_s = time.perf_counter() - started
        top = table.current_node()
        if top is None or not table.get_cell(top, "tx").plain.strip():
            raise BenchmarkFailed("the frame after the values arrived shows no tx value on the cursor's row")
        rng = random.Random(5)
        apply_ms, cells = [], []
        for _ in range(refreshes):
            rows = tuple(
                dataclasses.replace(r, tx_gbps=(r.tx_gbps or 0.0) + rng.random(), rx_gbps=rng.random() * 400)
                if rng.random() < 0.33 else r for r in view.rows)
            changed = dataclasses.replace(view, rows=rows)
            t = time.perf_counter()
            screen.show_view(changed)
            apply_ms.append((time.perf_counter() - t) * 1000)
            cells.append(table.applied_cells)
            await pilot.pause()
        read_ms = []
        for _ in range(max(3, refreshes // 10)):
            t = time.perf_counter()
            await app.feed.load_view(None)
            read_ms.append((time.perf_counter() - t) * 1000)
        return {
            "nodes": len(view.rows),
            "terminal": f"{size[0]}x{size[1]}",
            "store_open_s": round(store_open_s, 3),
            "first_frame_s": round(first_frame_s, 3),
            "first_frame_with_values_s": round(full_frame_s, 3),
            "refresh_apply_p50_ms": round(_percentile(apply_ms, 50), 2),
            "refresh_apply_p99_ms": round(_percentile(apply_ms, 99), 2),
            "cells_redrawn_per_refresh_p50": statistics.median(cells),
            "refresh_read_build_p50_ms": round(_percentile(read_ms, 50), 1),
            "refresh_read_build_p99_ms": round(_percentile(read_ms, 99), 1),
            "rss_mib": round(rss_mib(), 1),
        }


def run(argv: list[str]) -> Measured:
    options = parser("ui", __doc__)
    options.add_argument("--nodes", type=int_in(1, 100_000), default=1024,
                         help="nodes in the synthetic store (default 1024)")
    options.add_argument("--refreshes", type=int_in(1, 100_000), default=100,
                         help="refreshes to time (default 100)")
    args = options.parse_args(argv)
    start_ts = time.time() - 60.0
    with tempfile.TemporaryDirectory(prefix="fleet-bench-ui-") as tmp:
        db = Path(tmp) / "bench.db"
        print(f"filling a store with {args.nodes} nodes...", file=sys.stderr)
        fill_started = time.perf_counter()
        fill_store(db, args.nodes, start_ts)
        fill_s = time.perf_counter() - fill_started
        print("starting the console headless...", file=sys.stderr)
        results = asyncio.run(_measure(db, start_ts + 10.0 * TICKS, args.refreshes, TERMINAL))
    results["store_fill_s"] = round(fill_s, 1)
    return Measured(results, {
        "first_frame_s": at_most(1.0),
        "refresh_apply_p99_ms": at_most(50.0),
        "rss_mib": at_most(300.0),
    })
