"""What one Prometheus scrape of ``fleet export`` costs on a store of N nodes.

The store is the synthetic fleet of ``benchmarks ui`` (filled in a child process), with one Slurm
job per 32 nodes so every series carries job and tenant labels. A scrape is timed in this process,
as the exporter's server thread runs it: the first (which builds each series' line up to its
value) and then warm ones, in both text formats, plus the gzip Prometheus asks for. No targets: a
scrape's cost is weighed against the scrape interval of the Prometheus that reads it.
"""

from __future__ import annotations

import gzip
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._filled_store import fill_store
from benchmarks._options import int_in, parser
from benchmarks._synthetic_fleet import SyntheticFleet
from benchmarks.report import Measured
from fleet.collectors.openmetrics import GZIP_LEVEL, StoreMetrics
from fleet.fabric.records import JobRecord
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

NODES_PER_JOB = 32


def _add_jobs(db: Path, nodes: int, ts: float) -> None:
    names = SyntheticFleet(nodes, ts).names
    jobs = [JobRecord(ts, str(9000 + k), f"train-{k}", "bench", f"tenant{k % 5}", "RUNNING",
                      tuple(names[k * NODES_PER_JOB:(k + 1) * NODES_PER_JOB]))
            for k in range((nodes + NODES_PER_JOB - 1) // NODES_PER_JOB)]
    with StoreWriter(db) as writer:
        writer.put_jobs(jobs, ts=ts)
        writer.flush(60.0)


def _timed(render: Callable[[bool], str], openmetrics: bool) -> tuple[float, float, str]:
    cpu, wall = time.process_time(), time.perf_counter()
    text = render(openmetrics)
    return time.process_time() - cpu, time.perf_counter() - wall, text


def measure(db: Path, now_ts: float, scrapes: int) -> dict[str, Any]:
    """Cold and warm scrapes of one store; CPU seconds of this process, sizes in bytes."""
    reader = StoreReader(db)
    try:
        metrics = StoreMetrics(reader, clock=lambda: now_ts)
        cold_cpu, cold_wall, text = _timed(metrics.render, True)
        warm = [_timed(metrics.render, True) for _ in range(scrapes)]
        plain = [_timed(metrics.render, False) for _ in range(max(1, scrapes // 2))]
    finally:
        reader.close()
    body = text.encode("utf-8")
    cpu = time.process_time()
    packed = gzip.compress(body, compresslevel=GZIP_LEVEL)
    gzip_cpu = time.process_time() - cpu
    return {
        "samples": sum(1 for line in text.splitlines() if line and not line.startswith("#")),
        "bytes": len(body),
        "gzip_bytes": len(packed),
        "first_scrape_cpu_s": round(cold_cpu, 3),
        "first_scrape_wall_s": round(cold_wall, 3),
        "openmetrics_scrape_cpu_s_p50": round(statistics.median(c for c, _, _ in warm), 3),
        "openmetrics_scrape_wall_s_p50": round(statistics.median(w for _, w, _ in warm), 3),
        "text_0_0_4_scrape_cpu_s_p50": round(statistics.median(c for c, _, _ in plain), 3),
        "gzip_cpu_s": round(gzip_cpu, 3),
    }


def run(argv: list[str]) -> Measured:
    options = parser("export", __doc__)
    options.add_argument("--nodes", type=int_in(1, 4096), default=1024,
                         help="nodes in the synthetic store (default 1024)")
    options.add_argument("--scrapes", type=int_in(1, 100), default=5,
                         help="warm scrapes to time after the first (default 5)")
    args = options.parse_args(argv)
    start_ts = time.time() - 60.0
    with tempfile.TemporaryDirectory(prefix="fleet-bench-export-") as tmp:
        db = Path(tmp) / "bench.db"
        print(f"filling a store with {args.nodes} nodes...", file=sys.stderr)
        fill_store(db, args.nodes, start_ts)
        _add_jobs(db, args.nodes, start_ts)
        return Measured({"nodes": args.nodes, **measure(db, start_ts + 60.0, args.scrapes)})
