"""The reader contract over a real Prometheus: a store served by ``fleet export``, scraped, and read back.

The store is written here (odd host names included, to prove the quoting both ways), one reading at a
time, each scraped before the next is written, so Prometheus holds every reading; it scrapes with the
shipped rules, so a GPU off the bus is also an alert the reader reads back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.prometheus import Prometheus, running_prometheus, scrape_config, spare_port, wait_for
from helpers.shards import RULES

from fleet.collectors.openmetrics import serve_metrics
from fleet.collectors.prom_reader import PrometheusError, PrometheusReader, go_duration_s
from fleet.fabric.events import Severity
from fleet.fabric.records import HostRecord, HostStatus, JobRecord, PortRecord
from fleet.fabric.samples import HostSample
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

ODD = 'gpu"9\\x.é'
"""A host name no inventory allows: quotes, a backslash, a regex dot, non-ASCII."""
READINGS = 16


@dataclass(frozen=True)
class Served:
    prometheus: Prometheus
    store: Path
    times: tuple[float, ...]


def _records(writer: StoreWriter, start: float) -> None:
    writer.put_hosts([HostRecord("gpu001", "node", "10.0.0.1", "linux", 2, {"kernel": "6.1", "fw_mlx5_0": "28.39"}),
                      HostRecord(ODD, "node", "10.0.0.9", "linux"), HostRecord("leaf01", "leaf", os="sonic")])
    writer.put_ports([PortRecord("gpu001", "mlx5_0", "1", "enp12s0np0", "Ethernet", "leaf01", "swp1"),
                      PortRecord("leaf01", "swp1", "", "", "Ethernet", "gpu001", "enp12s0np0")])
    for host, state, reason in (("gpu001", HostState.OK, ""), (ODD, HostState.SLOW, 'answered in 3.2 s "late"'),
                                ("leaf01", HostState.OK, "")):
        writer.put_host_status(HostStatus(host, state, start - 60, reason))
    writer.put_jobs([JobRecord(start, "501", "train", "ana", "acme", "RUNNING", ("gpu001", ODD), "gpu", start - 600)],
                    ts=start)


def _reading(writer: StoreWriter, k: int, ts: float) -> None:
    for host in ("gpu001", ODD):
        writer.put_samples(HostSample(host, ts, {
            ("tx_gbps", "mlx5_0", "1"): 100.0 + k, ("port_state", "mlx5_0", "1"): 4.0,
            ("gpu_util_pct", "gpu3", ""): float(k % 7), ("gpu_xid_last", "gpu3", ""): 79.0 if host == ODD else 0.0,
            ("optics_rx_power_dbm", "mlx5_0", "L2"): -1.5, ("tx_bytes", "mlx5_0", "1"): 1e9 * k,
            ("symbol_error", "mlx5_0", "1"): float(k // 10)}))
    writer.put_samples(HostSample("leaf01", ts, {("sw_tx_gbps", "swp1", ""): 50.0 + k}))
    assert writer.flush(timeout=30)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("prom-reader")
    path = folder / "fleet.db"
    writer = StoreWriter(path).start()
    times: list[float] = []
    try:
        _records(writer, time.time())
        _reading(writer, 0, round(time.time(), 3))
        reader = StoreReader(path)
        server = serve_metrics(reader, "127.0.0.1", 0, max_age_s=3600)
        try:
            host, port = server.address
            config = scrape_config([f"{host}:{port}"], interval_s=0.25)
            with running_prometheus(folder / "prometheus", config, rule_files=RULES) as prometheus:
                for k in range(READINGS):
                    ts = round(time.time(), 3)
                    _reading(writer, k, ts)
                    times.append(ts)

                    def scraped(ts: float = ts) -> bool:
                        found = prometheus.query('timestamp(fleet_nic_tx_gbps{node="gpu001"})')
                        return bool(found) and float(found[0]["value"][1]) == ts

                    wait_for(scraped, 30, f"reading {k} scraped", poll_s=0.05)
                wait_for(lambda: prometheus.query('ALERTS{alertname="FleetGpuXid"}') or None, 60, "the XID alert")
                yield Served(prometheus, path, tuple(times))
        finally:
            server.close()
            reader.close()
    finally:
        writer.close()


def test_latest_values_and_times_are_the_stores(served: Served) -> None:
    reader = PrometheusReader(served.prometheus.url)
    with StoreReader(served.store) as store:
        expected = sorted(store.latest())
        assert sorted(reader.latest()) == expected
        assert sorted(reader.latest(hosts=[ODD], metrics=["tx_gbps", "gpu_xid_last"])) == sorted(
            store.latest(hosts=[ODD], metrics=["tx_gbps", "gpu_xid_last"]))
    arrays = reader.latest_arrays(metrics=["tx_gbps"])
    assert sorted(arrays.points()) == sorted(p for p in expected if p.metric == "tx_gbps")
    assert reader.latest(hosts=[]) == [] and reader.latest(metrics=["no_such_metric"]) == []


def test_a_moment_in_the_past_holds_the_values_read_by_then(served: Served) -> None:
    reader = PrometheusReader(served.prometheus.url)
    with StoreReader(served.store) as store:
        for moment in (served.times[3] + 0.01, served.times[-2] + 0.01):
            found = sorted(reader.as_of(moment, metrics=["tx_gbps", "sw_tx_gbps"]))
            assert found and found == sorted(store.as_of(moment, metrics=["tx_gbps", "sw_tx_gbps"]))
        assert reader.as_of(served.times[0] - 600) == []  # before the first reading


def test_a_series_is_the_samples_scraped_and_its_rollups_are_per_minute(served: Served) -> None:
    reader = PrometheusReader(served.prometheus.url)
    end = served.times[-1]
    raw = reader.series(ODD, "tx_gbps", "mlx5_0", "1", start=served.times[0], end=end)
    with StoreReader(served.store) as store:
        stored = store.series(ODD, "tx_gbps", "mlx5_0", "1", start=served.times[0], end=end)
    assert raw.resolution == "raw" and (raw.ts, raw.avg) == (stored.ts, stored.avg)
    assert len(raw.ts) == READINGS
    minute = reader.series("gpu001", "gpu_util_pct", "gpu3", "", start=end - 120, end=end, resolution="1m")
    assert minute.resolution == "1m" and minute.ts and all(t % 60 == 0 for t in minute.ts)
    assert all(lo <= mean <= hi for lo, mean, hi in zip(minute.min, minute.avg, minute.max, strict=True))
    assert max(minute.max) == 6.0 and min(minute.min) == 0.0
    counter = reader.series("gpu001", "tx_bytes", "mlx5_0", "1", start=end - 120, end=end, resolution="1m")
    assert counter.avg[-1] == counter.max[-1] == counter.min[-1] == 1e9 * (READINGS - 1)  # a counter's last value
    assert reader.series("gpu001", "no_such_metric").ts == []


def test_records_come_back_as_the_store_holds_them(served: Served) -> None:
    reader = PrometheusReader(served.prometheus.url)
    with StoreReader(served.store) as store:
        assert reader.hosts() == store.hosts()
        assert reader.ports() == store.ports() and reader.ports("leaf01") == store.ports("leaf01")
        assert reader.host_statuses() == store.host_statuses()
        jobs = reader.jobs()
        assert [(j.job_id, j.account, j.nodes, j.start_ts, j.partition) for j in jobs] == [
            (j.job_id, j.account, tuple(sorted(j.nodes)), j.start_ts, j.partition) for j in store.jobs()]
    span = reader.time_span()
    assert span is not None and span[1] >= served.times[-1] and span[1] - span[0] == go_duration_s("15d")


def test_the_alert_rules_firing_are_read_as_findings(served: Served) -> None:
    reader = PrometheusReader(served.prometheus.url)
    found = reader.alerts()
    assert [(e.kind, e.severity, e.host, e.device) for e in found] == [("gpu_xid", Severity.CRITICAL, ODD, "3")]
    assert found[0].data["finding"] and found[0].data["evidence"] == {"gpu": "3"}
    assert reader.alerts(served.times[0] - 3600) == []  # nothing fired an hour before


def test_job_latency_is_empty_without_latency_series(served: Served) -> None:
    reader = PrometheusReader(served.prometheus.url)
    assert reader.job_latency("501", served.times[0], served.times[-1]) == []


@pytest.mark.parametrize(("text", "seconds"), [("15d", 15 * 86400.0), ("1y2w", 365 * 86400.0 + 14 * 86400.0),
                                               ("90m", 5400.0), ("500ms", 0.5), ("15d or 500MiB", None), ("", None)])
def test_prometheus_durations(text: str, seconds: float | None) -> None:
    assert go_duration_s(text) == seconds


def test_an_unreachable_prometheus_is_one_line() -> None:
    reader = PrometheusReader(f"http://127.0.0.1:{spare_port()}", timeout_s=5)
    with pytest.raises(PrometheusError, match="refused"):
        reader.latest()


def test_a_refused_query_says_why(served: Served) -> None:
    with pytest.raises(PrometheusError, match="HTTP 400"):
        PrometheusReader(served.prometheus.url).query("sum(")
