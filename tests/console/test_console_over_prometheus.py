"""The console over Prometheus draws what it draws over SQLite, for the same data.

Two shards collect the simulated fleet for a while, each serving ``fleet export``, and a real
Prometheus scrapes both while they collect; then collection stops. The same data is then put
in a SQLite store: every sample Prometheus holds (each first checked to be a sample a shard
stored, time and value), and the shards' hosts, ports, states and jobs. The Fleet, Node and
Topology screens read both ways, through the same reader contract, must then be equal: the
snapshots, the node's values and plots, the leaves' balances, and the tables the real app draws.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import html
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.prometheus import wait_for
from helpers.shards import ShardedFleet, sharded_fleet
from textual.widgets import DataTable, Static

from fleet.collectors.openmetrics import EXPORTED
from fleet.collectors.prom_reader import PrometheusReader
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.ecmp_ops import EcmpSettings, read_balances_and_changes, roles_inventory
from fleet.console.feed import Feed, open_store_loader
from fleet.console.messages import NodeChosen
from fleet.console.node_history import load_history, load_values
from fleet.console.remote_history import RemoteHistory, open_remote_loader
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.snapshot import Snapshot, SnapshotLoader
from fleet.fabric.samples import METRICS, HostSample, MetricKind
from fleet.store.reader import StoreReader
from fleet.store.types import SeriesName
from fleet.store.writer import StoreWriter

COLLECT_S = 30.0
SAMPLE_NAMES = {entry.sample_name: entry for entry in EXPORTED.values()}

pytestmark = pytest.mark.timeout(420)


def _series_name(labels: dict[str, str]) -> SeriesName:
    """The store's name of an exported series (the test's own reading of docs/metrics.md's labels)."""
    entry = SAMPLE_NAMES[labels["__name__"]]
    node = labels["node"]
    if entry.labels == ("node",):
        return node, entry.metric, "", ""
    if entry.labels[1] == "gpu":
        return node, entry.metric, "gpu" + labels["gpu"], ""
    if entry.labels[1] == "device":
        return node, entry.metric, labels["device"], labels.get("port", "")
    return node, entry.metric, labels["port"], ""


@dataclasses.dataclass(frozen=True)
class SameData:
    fleet: ShardedFleet
    sqlite: Path
    end: float
    """The newest sample."""


def _raw(fleet: ShardedFleet) -> dict[SeriesName, list[tuple[float, float]]]:
    """Every sample Prometheus holds of the exported families, by series."""
    names = "|".join(sorted(SAMPLE_NAMES))
    found: dict[SeriesName, list[tuple[float, float]]] = {}
    for sample in fleet.prometheus.query(f'{{__name__=~"{names}"}}[10m]'):
        found[_series_name(sample["metric"])] = [(float(t), float(v)) for t, v in sample["values"]]
    return found


def _check_stored(fleet: ShardedFleet, raw: dict[SeriesName, list[tuple[float, float]]]) -> None:
    """Prometheus holds samples the shards stored, at the times they read them: every sample of a node's and a
    leaf's series is one of its shard's, and every series' newest sample is its shard's newest."""
    readers = [StoreReader(shard.db) for shard in fleet.shards]
    try:
        owner = {host: reader for reader in readers for host in reader.host_statuses()}
        for (host, metric, device, port), points in raw.items():
            reader = owner[host]
            error = METRICS[metric].kind is MetricKind.ERROR
            if host in ("gpu001", "leaf01") and not error:
                stored = reader.series(host, metric, device, port, start=points[0][0] - 1, end=points[-1][0] + 1,
                                       resolution="raw")
                assert {(round(t, 3), v) for t, v in points} <= {(round(t, 3), v) for t, v in zip(stored.ts, stored.avg, strict=True)}
        newest = {(p.host, p.metric, p.device, p.port): p.value for reader in readers for p in reader.latest()}
        assert {name: points[-1][1] for name, points in raw.items()} == {name: newest[name] for name in raw}
    finally:
        for reader in readers:
            reader.close()


def _same_data_in_sqlite(fleet: ShardedFleet, raw: dict[SeriesName, list[tuple[float, float]]], path: Path) -> None:
    """``raw`` and the shards' records (hosts, ports, states, jobs) in a SQLite store at ``path``."""
    by_reading: dict[tuple[str, float], dict[tuple[str, str, str], float]] = defaultdict(dict)
    for (host, metric, device, port), points in raw.items():
        for ts, value in points:
            by_reading[(host, ts)][(metric, device, port)] = value
    with StoreWriter(path, max_queued_samples=10_000_000) as writer:
        for (host, ts), values in sorted(by_reading.items(), key=lambda item: item[0][1]):
            assert writer.put_samples(HostSample(host, ts, values))
        for shard in fleet.shards:
            with StoreReader(shard.db) as reader:
                writer.put_hosts(reader.hosts())
                writer.put_ports(reader.ports())
                for status in reader.host_statuses().values():
                    writer.put_host_status(status)
                jobs = reader.jobs()
                if jobs:
                    writer.put_jobs(jobs, ts=min(job.ts for job in jobs))
        assert writer.flush(timeout=120)


@contextlib.contextmanager
def same_data(folder: Path) -> Iterator[SameData]:
    """The sharded fleet collected for ``COLLECT_S`` and scraped meanwhile, and its data in SQLite too."""
    with sharded_fleet(folder, frozen_after_s=COLLECT_S) as fleet:
        collected = time.time()  # the collectors have exited: each shard's store is final

        def scraped_since() -> bool:
            scrapes = fleet.prometheus.query('timestamp(up{job="fleet"})')
            return len(scrapes) == len(fleet.shards) and all(float(s["value"][1]) > collected + 1 for s in scrapes)

        wait_for(scraped_since, 60, "a scrape of every shard's final store")
        wait_for(lambda: len(fleet.prometheus.query("fleet_slurm_job_rdma_latency_p99_usec")) == 2, 60,
                 "the latency of both jobs (the head's shard probes them)")
        raw = _raw(fleet)
        _check_stored(fleet, raw)
        _same_data_in_sqlite(fleet, raw, folder / "same.db")
        yield SameData(fleet, folder / "same.db", max(points[-1][0] for points in raw.values()))


def _loaders(same: SameData) -> tuple[SnapshotLoader, SnapshotLoader]:
    remote = RemoteHistory(PrometheusReader(same.fleet.prometheus.url), same.sqlite.parent / "no-local.db")
    return SnapshotLoader(StoreReader(same.sqlite)), SnapshotLoader(remote)


def _comparable(snapshot: Snapshot) -> dict[str, Any]:
    fields = {f.name: getattr(snapshot, f.name) for f in dataclasses.fields(snapshot) if f.name not in ("read_s",)}
    fields["jobs"] = tuple(dataclasses.replace(job, ts=0.0) for job in snapshot.jobs)  # when each read it
    return fields


async def test_the_console_draws_the_same_from_prometheus_as_from_sqlite(tmp_path: Path) -> None:
    """One test, one fleet: ``make test`` spreads tests over workers, and each would start its own fleet."""
    with same_data(tmp_path / "console-prometheus") as same:
        for cursor in (None, same.end - 3.0):
            _the_fleet_snapshot_is_the_same(same, cursor)
        _the_node_screen_reads_the_same_values_and_plots(same)
        _the_topology_screen_reads_the_same_balances(same)
        _the_jobs_screen_reads_each_jobs_latency_from_prometheus(same)
        await _the_app_draws_the_same_fleet_node_and_topology_screens(same, tmp_path)


def _the_fleet_snapshot_is_the_same(same: SameData, cursor: float | None) -> None:
    sqlite, prometheus = _loaders(same)
    now = time.time()
    a = _comparable(sqlite.load(cursor, now, 0.0))
    b = _comparable(prometheus.load(cursor, now, 0.0))
    assert len(a["node_names"]) == 16 and len(a["hosts"]) == 37 and len(a["values"]) == 36  # the Slurm head reports none
    assert a["jobs"] and a["ports"] and a["statuses"]
    for key in a:
        assert a[key] == b[key], (key, "live" if cursor is None else "replayed")


def _the_node_screen_reads_the_same_values_and_plots(same: SameData) -> None:
    sqlite, prometheus = _loaders(same)
    moment = same.end - 3.0
    for host in ("gpu001", "gpu016"):
        values = load_values(sqlite.reader, host, moment, live=False)
        assert values == load_values(prometheus.reader, host, moment, live=False)
        ports = sorted({(d, p) for (m, d, p) in values if m == "port_state"})
        history = load_history(sqlite.reader, host, ports, moment)
        assert history.throughput.series and len(history.throughput.series[0].x) > 5
        assert history == load_history(prometheus.reader, host, ports, moment)


def _the_topology_screen_reads_the_same_balances(same: SameData) -> None:
    sqlite, prometheus = _loaders(same)
    hosts = roles_inventory((h.name, h.role) for h in sqlite.reader.hosts())
    moment = same.end - 3.0
    balances, changes = read_balances_and_changes(sqlite.reader, hosts, EcmpSettings(), moment)  # type: ignore[arg-type]
    assert len(balances) == 16 and any(b.uplinks for b in balances.values())
    assert (balances, changes) == read_balances_and_changes(prometheus.reader, hosts, EcmpSettings(), moment)  # type: ignore[arg-type]


def _the_jobs_screen_reads_each_jobs_latency_from_prometheus(same: SameData) -> None:
    """The per-job latency probes of the shard that collects the Slurm head, as the Jobs screen reads them."""
    _, prometheus = _loaders(same)
    now = time.time()  # served for two minutes after the probes, whenever the sampler's round ended
    buckets = prometheus.reader.job_latency("1001", same.end - 120, now, 10.0)
    assert buckets and all(0 < p50 <= p99 < 100 for _, p50, p99 in buckets)
    assert prometheus.reader.tenant_latency("globex", same.end - 120, now, 10.0)


def _drawn(app: FleetApp) -> dict[str, Any]:
    """What the current screen shows, the header line aside: the terminal's text, line by line, and every
    table's rows."""
    svg = app.export_screenshot()
    lines: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for x, y, text in re.findall(r'<text[^>]*? x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        lines[round(float(y))].append((float(x), html.unescape(text)))
    screen_text = ["".join(text for _, text in sorted(parts)) for _, parts in sorted(lines.items())]
    tables = {f"table {t.id}": [[str(cell) for cell in t.get_row_at(i)] for i in range(t.row_count)]
              for t in app.screen.query(DataTable)}
    return {"lines": screen_text[1:]} | tables


async def _screens(config: Config, feed: Feed) -> dict[str, dict[str, Any]]:
    app = FleetApp(config, feed)
    drawn: dict[str, dict[str, Any]] = {}
    async with app.run_test(size=(200, 60)) as pilot:
        async def complete() -> None:
            while app.view is None or not app.view.snapshot.complete:
                await app.next_view()

        await asyncio.wait_for(complete(), 60)
        await pilot.pause()
        drawn["fleet"] = _drawn(app)
        app.post_message(NodeChosen("gpu001"))
        await asyncio.wait_for(_until(app, lambda: isinstance(app.screen, NodeScreen)), 30)
        node = app.screen
        assert isinstance(node, NodeScreen)
        await asyncio.wait_for(node.drawn.wait(), 60)
        await pilot.pause()
        drawn["node"] = _drawn(app)
        app.pop_screen()
        await app.switch_mode("topology")
        await asyncio.wait_for(_until(app, lambda: isinstance(app.screen, TopologyScreen)
                                      and bool(app.screen.balances)), 60)
        await pilot.pause()
        drawn["topology"] = _drawn(app)
        header = str(app.screen.query_one("#header", Static).render())
        drawn["header"] = {"history": "prometheus" in header}
    return drawn


async def _until(app: FleetApp, condition: Any) -> None:
    while not condition():
        await app.next_view()


async def _the_app_draws_the_same_fleet_node_and_topology_screens(same: SameData, tmp_path: Path) -> None:
    moment = same.end - 3.0
    local = tmp_path / "no-local.db"
    over_sqlite = Config(db_path=same.sqlite, at_ts=moment, refresh_s=0.5, diagnose=False)
    over_prometheus = Config(db_path=local, at_ts=moment, refresh_s=0.5, diagnose=False,
                             history_url=same.fleet.prometheus.url)
    sqlite = await _screens(over_sqlite, Feed(lambda: open_store_loader(same.sqlite), refresh_s=0.5))
    prometheus = await _screens(over_prometheus, Feed(lambda: open_remote_loader(same.fleet.prometheus.url, local),
                                                      refresh_s=0.5))
    assert sqlite.pop("header") == {"history": False} and prometheus.pop("header") == {"history": True}
    for screen in ("fleet", "node", "topology"):
        assert sqlite[screen] == prometheus[screen], screen
    assert sum("gpu0" in line for line in sqlite["fleet"]["lines"]) >= 16  # every node drawn
    assert len(sqlite["node"]["table ports"]) == 8 and len(sqlite["topology"]["table links"]) > 0
    assert not local.exists()  # reading wrote nothing locally
