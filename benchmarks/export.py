"""What one Prometheus scrape of ``fleet export`` costs on a store of N nodes: one shard's load.

The store is the synthetic fleet of ``benchmarks ui`` (filled in a child process), with one Slurm
job per 32 nodes (each node's job is a series of its own, ``fleet_slurm_job_node_info``); or, with
``--simulated``, what ``fleet collect`` stored from the simulated fleet of ``benchmarks collect`` (N
RoCE nodes with 8 NICs and 8 GPUs each, 64 switches at 1,024 nodes, 4 jobs), collected for a few
seconds so that rates exist: the series a real shard serves. A scrape is timed in this process, as
the exporter's server thread runs it: the first (which builds each series' line up to its value)
and then warm ones, in both text formats, plus the gzip Prometheus asks for. Also given: series per
node and per switch (by their ``node`` label, records included), and the samples per second
Prometheus ingests from the shard at ``--scrape-interval`` (each series once a scrape: the collector
reads faster than Prometheus scrapes). No targets: a scrape's cost is weighed against the scrape
interval (docs/scale-out.md).
"""

from __future__ import annotations

import asyncio
import gzip
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._filled_store import fill_store
from benchmarks._options import float_in, int_in, parser
from benchmarks._simulated import busy_fleet, simulator
from benchmarks._synthetic_fleet import SyntheticFleet
from benchmarks.report import BenchmarkFailed, Measured
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.openmetrics import GZIP_LEVEL, StoreMetrics
from fleet.console.cli.common import run_async
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


def _collect_simulated(db: Path, nodes: int, workdir: Path, seconds: float) -> float:
    """``fleet collect``'s collector on the simulated fleet into ``db`` for ``seconds`` after every host
    has answered once; the time the collection ended (unix seconds)."""
    with simulator(busy_fleet(nodes), workdir) as simulated:
        inventory = load_inventory(simulated.sim.inventory)

        async def collect() -> None:
            writer = StoreWriter(db).start()
            collector = Collector(inventory, writer, settings=CollectSettings(interval_s=1.0))
            task = asyncio.ensure_future(collector.run())
            try:
                began = time.monotonic()
                while len(collector.status.all()) < len(inventory.hosts) and time.monotonic() - began < 300:
                    await asyncio.sleep(0.5)
                await asyncio.sleep(seconds)
            finally:
                await collector.close()
                await task
                writer.flush(120.0)
                writer.close()

        run_async(collect())
    return time.time()


_NODE_LABEL = re.compile(r'[{,]node="((?:[^"\\]|\\.)*)"')


def series_per_host(text: str, roles: dict[str, str]) -> dict[str, Any]:
    """Series of one scrape by the host in their ``node`` label: a node's and a switch's (medians over
    the hosts), all the nodes' and all the switches' together, and the rest (the Slurm jobs' own series).

    Every series counts, the records (``fleet_host_info``, ``fleet_port_info``...) too: Prometheus
    stores each of them."""
    per_host: Counter[str] = Counter()
    others = 0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        found = _NODE_LABEL.search(line)
        if found is None:
            others += 1
        else:
            per_host[found.group(1)] += 1
    nodes = [count for host, count in per_host.items() if roles.get(host) == "node"]
    switches = [count for host, count in per_host.items() if roles.get(host) in ("leaf", "spine")]
    return {"series_per_node": statistics.median(nodes) if nodes else 0,
            "series_per_switch": statistics.median(switches) if switches else 0,
            "node_series": sum(nodes), "switch_series": sum(switches),
            "other_series": others + sum(count for host, count in per_host.items()
                                         if roles.get(host) not in ("node", "leaf", "spine"))}


def measure(db: Path, now_ts: float, scrapes: int) -> dict[str, Any]:
    """Cold and warm scrapes of one store, and its series by host; CPU seconds of this process, sizes in bytes."""
    reader = StoreReader(db)
    try:
        roles = {host.name: host.role for host in reader.hosts()}
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
        **series_per_host(text, roles),
    }


def run(argv: list[str]) -> Measured:
    options = parser("export", __doc__)
    options.add_argument("--nodes", type=int_in(1, 4096), default=1024,
                         help="nodes in the store: one shard's (default 1024)")
    options.add_argument("--scrapes", type=int_in(1, 100), default=5,
                         help="warm scrapes to time after the first (default 5)")
    options.add_argument("--simulated", action="store_true",
                         help="collect the simulated fleet instead of filling a synthetic store")
    options.add_argument("--collect-s", type=float_in(2.0, 600.0), default=5.0,
                         help="with --simulated: seconds collected after every host answered (default 5)")
    options.add_argument("--scrape-interval", type=float_in(1.0, 600.0), default=30.0,
                         help="Prometheus's scrape interval, for the samples per second (default 30)")
    args = options.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fleet-bench-export-") as tmp:
        db = Path(tmp) / "bench.db"
        if args.simulated:
            print(f"collecting {args.nodes} simulated nodes...", file=sys.stderr)
            now_ts = _collect_simulated(db, args.nodes, Path(tmp), args.collect_s)
        else:
            start_ts = time.time() - 60.0
            print(f"filling a store with {args.nodes} nodes...", file=sys.stderr)
            fill_store(db, args.nodes, start_ts)
            _add_jobs(db, args.nodes, start_ts)
            now_ts = start_ts + 60.0
        if not db.exists():
            raise BenchmarkFailed(f"nothing was stored in {db}")
        scrape = measure(db, now_ts, args.scrapes)
        return Measured({"nodes": args.nodes, "store": "simulated" if args.simulated else "synthetic",
                         **scrape, "scrape_interval_s": args.scrape_interval,
                         "samples_per_s": round(scrape["samples"] / args.scrape_interval),
                         "bytes_per_sample": round(scrape["bytes"] / max(1, scrape["samples"]), 1),
                         "gzip_bytes_per_s": round(scrape["gzip_bytes"] / args.scrape_interval)})
