"""`fleet bench ui`: the console headless against a store filled for N nodes.

Reports time to first frame (app start to the Fleet table drawn from the
store: every node with its collection state), to the first frame with values,
the time to apply one refresh to the Fleet table (p50/p99, over
refreshes in which a third of the nodes changed), the time to read and build
one refresh off the UI thread, and the resident memory. Targets (issue 5):
first frame <= 1.0 s, apply p99 <= 50 ms, RSS <= 300 MB.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import multiprocessing
import random
import statistics
import tempfile
import time
from pathlib import Path

import click

TICKS = 3


def _fill(path: str, nodes: int, start_ts: float) -> None:
    """Write the synthetic fleet (in a child process, so its memory is not the console's)."""
    from fleet.console.cli.bench_store_fleet import SyntheticFleet
    from fleet.fabric.records import HostRecord, HostStatus
    from fleet.fabric.states import HostState
    from fleet.store.writer import StoreWriter

    fleet = SyntheticFleet(nodes, start_ts)
    with StoreWriter(path) as writer:
        writer.put_hosts([HostRecord(name, "node", group=i // 32) for i, name in enumerate(fleet.names)])
        for name in fleet.names:
            writer.put_host_status(HostStatus(name, HostState.OK, start_ts - 60))
        for samples in fleet.ticks(TICKS):
            for sample in samples:
                writer.put_samples(sample)
        writer.flush(600.0)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def _measure(db: Path, now_ts: float, refreshes: int, size: tuple[int, int]) -> dict[str, object]:
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
            raise click.ClickException(f"first frame holds {table.row_count} of {len(view.rows)} nodes")
        while app.view is None or not app.view.snapshot.complete:
            try:
                await asyncio.wait_for(app.next_view(), 60)
            except TimeoutError:
                problems = "; ".join(str(n.message) for n in app._notifications) or "none shown"
                raise click.ClickException(f"no view with values within 60 s (problems: {problems})") from None
        view = app.view
        # Timed like the first frame: the screen refresh after the table took the values.
        await asyncio.wait_for(table.wait_for_refresh(), 60)
        full_frame_s = time.perf_counter() - started
        top = table.current_node()
        if top is None or not table.get_cell(top, "tx").plain.strip():
            raise click.ClickException("the frame after the values arrived shows no tx value on the cursor's row")
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
            "refresh_apply_ms": {"p50": round(_percentile(apply_ms, 50), 2),
                                 "p99": round(_percentile(apply_ms, 99), 2)},
            "cells_redrawn_per_refresh_p50": statistics.median(cells),
            "refresh_read_build_ms": {"p50": round(_percentile(read_ms, 50), 1),
                                      "p99": round(_percentile(read_ms, 99), 1)},
            "rss_mb": round(_rss_mb(), 1),
        }


@click.command("ui")
@click.option("--nodes", default=1024, show_default=True, help="Nodes in the synthetic store.")
@click.option("--refreshes", default=100, show_default=True, help="Refreshes to time.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only.")
def bench_ui(nodes: int, refreshes: int, as_json: bool) -> None:
    """Time the console on a store of NODES nodes: first frame, refresh apply, memory."""
    start_ts = time.time() - 60.0
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        fill_started = time.perf_counter()
        child = multiprocessing.get_context("spawn").Process(target=_fill, args=(str(db), nodes, start_ts))
        child.start()
        child.join()
        if child.exitcode != 0:
            raise click.ClickException(f"filling the store failed (exit {child.exitcode})")
        fill_s = time.perf_counter() - fill_started
        result = asyncio.run(_measure(db, start_ts + 10.0 * TICKS, refreshes, (200, 60)))
    result["store_fill_s"] = round(fill_s, 1)
    if as_json:
        click.echo(json.dumps(result))
    else:
        for key, value in result.items():
            click.echo(f"{key}: {value}")
