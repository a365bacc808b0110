"""`fleet bench store`: ingest, size and query speed of the store on a synthetic 1,024-node fleet.

Three phases, each on its own temporary file (or under --dir):

1. **Fleet**: ``--nodes`` nodes (default 1,024; 424 series each, 10 s
   interval) for ``--minutes`` simulated minutes through a real
   :class:`StoreWriter`. Sustained ingest is samples over the writer thread's
   busy time (commits plus sealing; the generator's time is not counted) after
   it has caught up; bytes per sample are on-disk bytes of the sealed chunks
   (table and index pages, from SQLite's dbstat) over the samples they hold.
   Then, on that file: p99 of ``latest()`` for the whole fleet, and of
   ``as_of()`` for the whole fleet at random past times (sealed and unsealed).
2. **Day**: ``--day-nodes`` nodes (default 4) for ``--day-hours`` (26) simulated hours, so that
   one whole day has its 1 min and 1 h rollups. Gives the rollup bytes per
   series per day, and the p99 of ``series()`` over 24 h (1 min rollups).
3. **Growth per day** of a ``--nodes`` fleet at the default retention,
   extrapolated: raw is kept 48 h, so it stops growing after two days; what
   keeps growing is the 1 min rollups (for 30 days), the 1 h rollups (for
   400 days) and error-counter changes. growth/day = series x (1 min + 1 h
   rollup bytes per series-day from phase 2) + changes per day (phase 1 rate).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from fleet.console.cli.bench_store_fleet import INTERVAL_S, SERIES_PER_NODE, SyntheticFleet
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

TARGETS = {
    "ingest_samples_per_s": (">=", 300_000),
    "bytes_per_sample": ("<=", 3.0),
    "growth_gb_per_day": ("<=", 2.0),
    "latest_fleet_p99_ms": ("<=", 30.0),
    "series_24h_p99_ms": ("<=", 20.0),
    "as_of_fleet_p99_ms": ("<=", 100.0),
}
START_TS = 1_767_225_600.0  # 2026-01-01 00:00 UTC: a day boundary


def _p99_ms(samples_s: list[float]) -> float:
    return float(np.percentile(np.array(samples_s) * 1000.0, 99))


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - began, result


def _ingest(path: Path, nodes: int, ticks: int, flush_every: int) -> dict[str, float]:
    fleet = SyntheticFleet(nodes, START_TS)
    writer = StoreWriter(path, max_queued_samples=(flush_every + 2) * nodes * SERIES_PER_NODE).start()
    offered = 0
    began = time.perf_counter()
    for k in range(ticks):
        for sample in fleet.tick(k):
            offered += len(sample.values)
            writer.put_samples(sample)
        if k % flush_every == flush_every - 1:
            writer.flush(600)
    writer.flush(600)
    writer.settle(1800)
    wall = time.perf_counter() - began
    stats = writer.stats()
    writer.close()
    assert stats.dropped == 0 and stats.failing is None, stats
    return {"offered": offered, "busy_s": stats.busy_s, "wall_s": wall,
            "longest_step_ms": stats.longest_step_s * 1000}


def _table_bytes(conn: sqlite3.Connection, *names: str) -> int:
    marks = ", ".join("?" * len(names))
    row = conn.execute(f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", names).fetchone()
    return int(row[0] or 0)


def _live_latest(path: Path, nodes: int, ticks: int, repeats: int) -> list[float]:
    """latest() as a console polling once a second sees it while a staggered collector
    writes: between two reads, a tenth of the hosts (one second of a 10 s cycle) report."""
    fleet = SyntheticFleet(nodes, START_TS, seed=11)
    writer = StoreWriter(path).start()
    reader = StoreReader(path)
    reader.latest()
    times: list[float] = []
    samples = fleet.tick(ticks)
    for i in range(repeats):
        if i % 10 == 0:
            samples = fleet.tick(ticks + 1 + i // 10)
        for sample in samples[i % 10 :: 10]:
            writer.put_samples(sample)
        writer.flush(60)
        times.append(_timed(reader.latest)[0])
    writer.close()
    return times


def _fleet_phase(path: Path, nodes: int, minutes: float, repeats: int) -> dict[str, Any]:
    ticks = int(minutes * 60 / INTERVAL_S)
    ingest = _ingest(path, nodes, ticks, flush_every=1)
    conn = sqlite3.connect(path)
    sealed = int(conn.execute("SELECT sum(n) FROM chunks").fetchone()[0] or 0)
    chunk_bytes = _table_bytes(conn, "chunks", "chunks_t0", "sqlite_autoindex_chunks_1")
    frame_rows, frame_samples = conn.execute("SELECT count(*), sum(n) FROM frames").fetchone()
    frame_bytes = _table_bytes(conn, "frames", "frames_ts")
    changes = int(conn.execute("SELECT count(*) FROM changes").fetchone()[0])
    first_changes = int(conn.execute(
        "SELECT count(*) FROM changes WHERE ts_ms < ?", (int((START_TS + INTERVAL_S) * 1000),)).fetchone()[0])
    conn.close()
    StoreReader(path).latest()  # warm-up: first calls import numpy submodules and fill caches
    open_s, cold = _timed(StoreReader, path)
    latest_cold_s, points = _timed(cold.latest)  # the first read loads the series catalogue (if open did not)
    latest_warm_s = _timed(cold.latest)[0]
    arrays_cold_s, arrays = _timed(lambda: StoreReader(path).latest_arrays())  # open included
    reader = StoreReader(path)
    span = reader.time_span()
    assert span is not None
    rng = np.random.default_rng(1)
    moments = rng.uniform(span[0] + 60, span[1] - 60, repeats)
    reader.as_of_arrays(float(moments[0]))
    as_of_arrays_s = [_timed(reader.as_of_arrays, float(t))[0] for t in moments]
    as_of_points_s = [_timed(reader.as_of, float(t))[0] for t in moments[: max(3, repeats // 10)]]
    live_s = _live_latest(path, nodes, ticks, repeats)
    simulated_s = ticks * INTERVAL_S
    return {
        "nodes": nodes,
        "series": nodes * SERIES_PER_NODE,
        "simulated_minutes": minutes,
        "samples_offered": ingest["offered"],
        "ingest_samples_per_s": ingest["offered"] / ingest["busy_s"],
        "ingest_wall_samples_per_s": ingest["offered"] / ingest["wall_s"],
        "longest_maintenance_step_ms": ingest["longest_step_ms"],
        "sealed_samples": sealed,
        "bytes_per_sample": chunk_bytes / sealed if sealed else None,
        "frame_bytes_per_sample": frame_bytes / frame_samples if frame_samples else None,
        "frames_held": frame_rows,
        "file_bytes_per_sample": path.stat().st_size / ingest["offered"],
        "error_changes_per_day": (changes - first_changes) / (simulated_s - INTERVAL_S) * 86400,
        "latest_points": len(points),
        "latest_fleet_live_p99_ms": _p99_ms(live_s),
        "reader_open_ms": open_s * 1000,
        "latest_fleet_cold_ms": latest_cold_s * 1000,
        "open_and_first_latest_ms": (open_s + latest_cold_s) * 1000,
        "latest_fleet_unchanged_ms": latest_warm_s * 1000,
        "open_and_latest_arrays_ms": arrays_cold_s * 1000,
        "as_of_fleet_arrays_p99_ms": _p99_ms(as_of_arrays_s),
        "as_of_fleet_points_p99_ms": _p99_ms(as_of_points_s),
        "latest_arrays_points": len(arrays),
    }


def _day_phase(path: Path, nodes: int, hours: float, repeats: int) -> dict[str, Any]:
    ticks = int(hours * 3600 / INTERVAL_S)
    _ingest(path, nodes, ticks, flush_every=60)
    conn = sqlite3.connect(path)
    series = nodes * SERIES_PER_NODE
    day_ms = (int(START_TS * 1000), int((START_TS + 86400) * 1000))
    bytes_1m = int(conn.execute("SELECT sum(length(data)) FROM rollup_1m WHERE t0_ms >= ? AND t0_ms < ?",
                                day_ms).fetchone()[0] or 0)
    bytes_1h = int(conn.execute("SELECT sum(length(data)) FROM rollup_1h").fetchone()[0] or 0)
    rows_1m = int(conn.execute("SELECT count(*) FROM rollup_1m WHERE t0_ms >= ? AND t0_ms < ?", day_ms).fetchone()[0])
    rows_1h = int(conn.execute("SELECT count(*) FROM rollup_1h").fetchone()[0])  # one day rolled up
    per_row_overhead = 40  # key, row header and index entry per rollup row, bytes (generous)
    keys = conn.execute("SELECT host, metric, device, port FROM series WHERE kind != 'error'").fetchall()
    conn.close()
    reader = StoreReader(path)
    span = reader.time_span()
    assert span is not None
    rng = np.random.default_rng(2)
    picks = [keys[int(i)] for i in rng.integers(0, len(keys), repeats)]
    host, metric, device, port = picks[0]
    reader.series(host, metric, device, port, start=span[1] - 86400, end=span[1])
    series_s = [_timed(reader.series, h, m, d, p, start=span[1] - 86400, end=span[1])[0]
                for h, m, d, p in picks]
    # as_of older than the replay window reads chunks: per host, then scaled to the fleet.
    # Moments within the raw data (the time span starts at the first rollup row, long before).
    conn = sqlite3.connect(path)
    raw_start_s = int(conn.execute("SELECT min(first_ms) FROM chunks").fetchone()[0]) / 1000.0
    conn.close()
    moments = rng.uniform(raw_start_s + 600, span[1] - 2 * 3600, repeats)  # older than the kept frames
    old_as_of_s = [_timed(reader.as_of_arrays, float(t))[0] / nodes for t in moments]
    return {
        "nodes": nodes,
        "rollup_1m_bytes_per_series_day": (bytes_1m + rows_1m * per_row_overhead) / series,
        "rollup_1h_bytes_per_series_day": (bytes_1h + rows_1h * per_row_overhead) / series,
        "series_24h_p99_ms": _p99_ms(series_s),
        "series_24h_p50_ms": float(np.median(series_s) * 1000.0),
        "as_of_old_per_host_p99_ms": _p99_ms(old_as_of_s),
        "as_of_old_per_host_p50_ms": float(np.median(old_as_of_s) * 1000.0),
    }


MIN_MINUTES = 12.0
"""The fleet phase seals its first block (``StoreWriter``'s 600 s) once the store's clock is past the
block's end and the seal's grace (``fleet.store.maintenance.SEAL_GRACE_MS``, 60 s): 11 minutes, and a
minute's margin. Bytes per sample are measured on sealed blocks, so a shorter run has none."""

MIN_DAY_HOURS = 2.5
"""The old as-of queries pick moments between 10 minutes after the first raw point and 2 hours
before the end (older than the 1 hour of frames kept for fast replay): that needs 2 h 10 min."""


@click.command("store")
@click.option("--nodes", default=1024, show_default=True, help="Nodes of the synthetic fleet.")
@click.option("--minutes", default=15.0, show_default=True, type=click.FloatRange(min=MIN_MINUTES),
              help="Simulated minutes of the fleet phase (12 at least: one sealed block).")
@click.option("--day-nodes", default=4, show_default=True, help="Nodes of the day phase (rollups).")
@click.option("--day-hours", default=26.0, show_default=True,
              type=click.FloatRange(min=MIN_DAY_HOURS),
              help="Simulated hours of the day phase; 26 gives one whole day of rollups.")
@click.option("--repeats", default=50, show_default=True, help="Timed repetitions per query.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the databases here (default: a temporary folder, removed after).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def bench_store(nodes: int, minutes: float, day_nodes: int, day_hours: float, repeats: int,
                directory: Path | None, as_json: bool) -> None:
    """Ingest rate, bytes per sample, growth per day and query latencies of the store."""
    load_before = os.getloadavg()[0]
    cpu_began, wall_began = time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        folder = directory or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        fleet = _fleet_phase(folder / "bench-fleet.db", nodes, minutes, repeats)
        day = _day_phase(folder / "bench-day.db", day_nodes, day_hours, repeats)
    series = fleet["series"]
    rollup_day = series * (day["rollup_1m_bytes_per_series_day"] + day["rollup_1h_bytes_per_series_day"])
    changes_day = fleet["error_changes_per_day"] * 40  # a changes row with its key: ~40 bytes
    raw_day = series * (86400 / INTERVAL_S) * (fleet["bytes_per_sample"] or 0.0)
    results = {
        "ingest_samples_per_s": fleet["ingest_samples_per_s"],
        "bytes_per_sample": fleet["bytes_per_sample"],
        "growth_gb_per_day": (rollup_day + changes_day) / 1e9,
        "latest_fleet_p99_ms": fleet["latest_fleet_live_p99_ms"],
        "series_24h_p99_ms": day["series_24h_p99_ms"],
        "as_of_fleet_p99_ms": fleet["as_of_fleet_arrays_p99_ms"],
    }
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg()[0],
            "cpu_share": (time.process_time() - cpu_began) / (time.perf_counter() - wall_began),
        },
        "results": results,
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()},
        "met": {k: (results[k] >= v if op == ">=" else results[k] <= v) for k, (op, v) in TARGETS.items()},
        "raw_gb_per_day": raw_day / 1e9,
        "replay_frames_gb": series * 360 * (fleet["frame_bytes_per_sample"] or 0.0) / 1e9,
        "as_of_fleet_older_than_replay_ms": day["as_of_old_per_host_p99_ms"] * nodes,
        "as_of_fleet_older_than_replay_p50_ms": day["as_of_old_per_host_p50_ms"] * nodes,
        "steady_state_gb": (2 * raw_day + 30 * series * day["rollup_1m_bytes_per_series_day"]
                            + 400 * series * day["rollup_1h_bytes_per_series_day"]) / 1e9,
        "fleet_phase": fleet,
        "day_phase": day,
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for key, value in results.items():
        op, target = TARGETS[key]
        click.echo(f"{key:<24}{value:>14.2f}   target {op} {target}   {'ok' if report['met'][key] else 'MISSED'}")
    click.echo(f"{'raw_gb_per_day':<24}{report['raw_gb_per_day']:>14.2f}   (kept 48 h)")
    click.echo(f"{'steady_state_gb':<24}{report['steady_state_gb']:>14.2f}   (after 400 days)")
    click.echo(f"{'replay_frames_gb':<24}{report['replay_frames_gb']:>14.2f}   (1 h of frames kept)")
