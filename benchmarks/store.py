"""Ingest, size and query speed of the store on a synthetic fleet of 1,024 nodes.

Two phases, each on its own file (in a temporary folder, or under ``--dir``), and a projection:

1. **Fleet** (``fleet_*``): ``--nodes`` nodes (424 series each, 10 s interval) for ``--minutes``
   simulated minutes through a real ``StoreWriter``. Sustained ingest is samples over the writer
   thread's busy time (commits plus sealing; the generator's time is not counted) after it has
   caught up; bytes per sample are on-disk bytes of the sealed chunks (table and index pages, from
   SQLite's dbstat) over the samples they hold. Then, on that file: p99 of ``latest()`` for the
   whole fleet while a collector writes, and of ``as_of_arrays()`` for the whole fleet at random
   past times (sealed and unsealed).
2. **Day** (``day_*``): ``--day-nodes`` nodes for ``--day-hours`` simulated hours, so that one
   whole day has its 1 min and 1 h rollups: the rollup bytes per series per day, and the p99 of
   ``series()`` over 24 h (1 min rollups).
3. **Growth per day** of a ``--nodes`` fleet at the default retention, extrapolated: raw is kept
   48 h, so it stops growing after two days; what keeps growing is the 1 min rollups (for 30 days),
   the 1 h rollups (for 400 days) and error-counter changes. growth/day = series x (1 min + 1 h
   rollup bytes per series-day from phase 2) + changes per day (phase 1 rate).

Targets: ingest >= 300,000 samples/s, <= 3 bytes per sample, growth <= 2 GB/day, whole-fleet
latest p99 <= 30 ms, one series over 24 h p99 <= 20 ms, whole fleet as of a past time p99 <= 100 ms.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from benchmarks._options import float_in, int_in, parser
from benchmarks._synthetic_fleet import INTERVAL_S, SERIES_PER_NODE, SyntheticFleet
from benchmarks.report import BenchmarkFailed, Measured, at_least, at_most
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

START_TS = 1_767_225_600.0  # 2026-01-01 00:00 UTC: a day boundary

MIN_MINUTES = 12.0
"""The fleet phase seals its first block (``StoreWriter``'s 600 s) once the store's clock is past the
block's end and the seal's grace (``fleet.store.maintenance.SEAL_GRACE_MS``, 60 s): 11 minutes, and a
minute's margin. Bytes per sample are measured on sealed blocks, so a shorter run has none."""

MIN_DAY_HOURS = 2.5
"""The old as-of queries pick moments between 10 minutes after the first raw point and 2 hours
before the end (older than the 1 hour of frames kept for fast replay): that needs 2 h 10 min."""

T = TypeVar("T")


def _p99_ms(samples_s: list[float]) -> float:
    return float(np.percentile(np.array(samples_s) * 1000.0, 99))


def _timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
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
    if stats.dropped or stats.failing is not None:
        raise BenchmarkFailed(f"the writer dropped {stats.dropped} values (failing: {stats.failing})")
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


def run(argv: list[str]) -> Measured:
    options = parser("store", __doc__)
    options.add_argument("--nodes", type=int_in(1, 100_000), default=1024,
                         help="nodes of the synthetic fleet (default 1024)")
    options.add_argument("--minutes", type=float_in(MIN_MINUTES), default=15.0,
                         help="simulated minutes of the fleet phase (12 at least: one sealed block; default 15)")
    options.add_argument("--day-nodes", type=int_in(1, 100_000), default=4,
                         help="nodes of the day phase, rollups (default 4)")
    options.add_argument("--day-hours", type=float_in(MIN_DAY_HOURS), default=26.0,
                         help="simulated hours of the day phase; 26 gives one whole day of rollups (default 26)")
    options.add_argument("--repeats", type=int_in(1, 100_000), default=50,
                         help="timed repetitions per query (default 50)")
    options.add_argument("--dir", dest="directory", type=Path, default=None,
                         help="keep the databases here (default: a temporary folder, removed after)")
    args = options.parse_args(argv)
    cpu_began, wall_began = time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fleet-bench-store-") as scratch:
        folder = args.directory or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        fleet = _fleet_phase(folder / "bench-fleet.db", args.nodes, args.minutes, args.repeats)
        day = _day_phase(folder / "bench-day.db", args.day_nodes, args.day_hours, args.repeats)
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
        "raw_gb_per_day": raw_day / 1e9,
        "replay_frames_gb": series * 360 * (fleet["frame_bytes_per_sample"] or 0.0) / 1e9,
        "as_of_fleet_older_than_replay_ms": day["as_of_old_per_host_p99_ms"] * args.nodes,
        "as_of_fleet_older_than_replay_p50_ms": day["as_of_old_per_host_p50_ms"] * args.nodes,
        "steady_state_gb": (2 * raw_day + 30 * series * day["rollup_1m_bytes_per_series_day"]
                            + 400 * series * day["rollup_1h_bytes_per_series_day"]) / 1e9,
        "cpu_s_per_s": (time.process_time() - cpu_began) / (time.perf_counter() - wall_began),
        **{f"fleet_{key}": value for key, value in fleet.items()},
        **{f"day_{key}": value for key, value in day.items()},
    }
    return Measured(results, {
        "ingest_samples_per_s": at_least(300_000),
        "bytes_per_sample": at_most(3.0),
        "growth_gb_per_day": at_most(2.0),
        "latest_fleet_p99_ms": at_most(30.0),
        "series_24h_p99_ms": at_most(20.0),
        "as_of_fleet_p99_ms": at_most(100.0),
    })
