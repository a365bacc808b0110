"""The scrape text fleet writes itself is byte for byte what prometheus-client writes for the same families.

fleet encodes the scrape by hand because the library builds, sorts and escapes
labels per sample on every scrape (16 CPU-s at 1,024 nodes). The oracle below
builds the same families with the library's own ``Metric`` classes, from the
store's ``Point``s, and lets the library encode both formats.
"""

from __future__ import annotations

import gzip
import re
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import exposition
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.registry import Collector, CollectorRegistry

from fleet.collectors.openmetrics import EXPORTED, StoreMetrics, serve_metrics
from fleet.collectors.openmetrics_records import (
    HOST,
    HOST_STATE_TIME,
    HOST_UP,
    JOB_LATENCY_P50,
    JOB_LATENCY_P99,
    JOB_LATENCY_WINDOW_S,
    JOB_NODE,
    JOB_START,
    PORT,
)
from fleet.fabric.records import HostRecord, HostStatus, JobRecord, PortRecord, ProbeRecord
from fleet.fabric.samples import METRICS, HostSample, MetricKind
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

NOW = 1_790_000_000.0
ODD = 'gpu"9\\x\n\u00e9'
"""A host name no inventory should allow, to prove label values are escaped like the library does."""


class LibraryOracle(Collector):
    """The families as the library would serve them, built from the store's records and ``Point``s."""

    def __init__(self, reader: StoreReader, max_age_s: float) -> None:
        self.reader, self.max_age_s = reader, max_age_s

    def records(self) -> list[Metric]:
        statuses = sorted(self.reader.host_statuses().items())
        up = GaugeMetricFamily("fleet_host_up", HOST_UP.help, labels=("node", "state"))
        since = GaugeMetricFamily("fleet_host_state_time_seconds", HOST_STATE_TIME.help,
                                  labels=("node", "state", "reason"))
        for host, status in statuses:
            up.add_metric((host, status.state.value), 0.0 if status.state.is_failure else 1.0)
            since.add_metric((host, status.state.value, status.reason), status.since)
        hosts = InfoMetricFamily("fleet_host", HOST.help)
        for h in self.reader.hosts():
            facts = {"info_" + re.sub(r"[^a-zA-Z0-9_]", "_", k): v for k, v in h.info.items()}
            hosts.add_metric([], facts | {"node": h.name, "role": h.role, "address": h.address, "os": h.os,
                                          "group": str(h.group)})
        ports = InfoMetricFamily("fleet_port", PORT.help)
        for p in self.reader.ports():
            ports.add_metric([], {"node": p.host, "device": p.device, "port": p.port, "netdev": p.netdev,
                                  "link_layer": p.link_layer, "peer_node": p.peer_host, "peer_port": p.peer_port})
        jobs = self.reader.jobs()
        start = GaugeMetricFamily("fleet_slurm_job_start_time_seconds", JOB_START.help,
                                  labels=("slurm_job", "name", "user", "tenant", "state", "partition"))
        members = InfoMetricFamily("fleet_slurm_job_node", JOB_NODE.help, labels=("node", "slurm_job", "tenant"))
        p50 = GaugeMetricFamily("fleet_slurm_job_rdma_latency_p50_usec", JOB_LATENCY_P50.help,
                                labels=("slurm_job", "tenant"))
        p99 = GaugeMetricFamily("fleet_slurm_job_rdma_latency_p99_usec", JOB_LATENCY_P99.help,
                                labels=("slurm_job", "tenant"))
        for job in jobs:
            start.add_metric((job.job_id, job.name, job.user, job.account, job.state, job.partition), job.start_ts)
            for node in sorted(set(job.nodes)):
                members.add_metric((node, job.job_id, job.account), {})
            probes = [p for p in self.reader.probes(kind="lat", job=job.job_id, since=NOW - JOB_LATENCY_WINDOW_S)
                      if p.ok]
            if probes:
                p50.add_metric((job.job_id, job.account),
                               float(np.percentile([p.result["t_typical_usec"] for p in probes], 50)))
                p99.add_metric((job.job_id, job.account),
                               float(np.percentile([p.result["p99_usec"] for p in probes], 99)))
        return [up, since, hosts, ports, start, members, p50, p99]

    def collect(self) -> list[Metric]:
        points = self.reader.latest()
        newest: dict[str, float] = {}
        for point in points:
            if METRICS[point.metric].kind is not MetricKind.ERROR:
                newest[point.host] = max(newest.get(point.host, point.ts), point.ts)
        families: dict[str, Metric] = {}
        for point in points:
            entry = EXPORTED.get(point.metric)
            error = METRICS[point.metric].kind is MetricKind.ERROR
            if entry is None or (point.ts < NOW - self.max_age_s and not error):
                continue
            if point.metric not in families:
                kind = CounterMetricFamily if entry.counter else GaugeMetricFamily
                families[point.metric] = kind(entry.family, entry.help, labels=entry.labels)
            values = {"node": point.host, "device": point.device, "port": point.port,
                      "gpu": point.device.removeprefix("gpu")}
            if entry.labels == ("node", "port"):
                values["port"] = point.device
            ts = max(point.ts, newest.get(point.host, point.ts)) if error else point.ts
            families[point.metric].add_metric(tuple(values[label] for label in entry.labels), point.value,  # type: ignore[attr-defined]
                                              timestamp=ts)
        return [*self.records(), *(families[name] for name in sorted(families))]


def _store(path: Path) -> None:
    with StoreWriter(path) as writer:
        for host, ts in (("gpu001", NOW - 5), ("gpu002", NOW - 5), (ODD, NOW - 5), ("gpu003", NOW - 3600)):
            values = {("tx_bytes", "mlx5_0", "1"): 123456789.0 * 4, ("tx_gbps", "mlx5_0", "1"): 311.25,
                      ("symbol_error", "mlx5_1", "1"): 7.0, ("gpu_temp_c", "gpu3", ""): 61.0,
                      ("optics_rx_power_dbm", "mlx5_0", "L2"): -2.125, ("rx_gbps", "mlx5_0", "1"): 0.0,
                      ("tx_bytes", "mlx5_1", "1"): 1e22}
            writer.put_samples(HostSample(host, ts, values))
        writer.put_samples(HostSample("leaf01", NOW - 2, {("sw_tx_bytes", "swp1", ""): 9e15,
                                                          ("sw_rx_pfc_pause", "swp2", ""): 0.0}))
        for host, state in (("gpu001", HostState.OK), ("gpu002", HostState.HUNG), (ODD, HostState.SLOW),
                            ("gpu003", HostState.UNREACHABLE), ("leaf01", HostState.OK)):
            writer.put_host_status(HostStatus(host, state, NOW - 60, "why"))
        writer.put_jobs([JobRecord(NOW - 100, "501", "train", "ana", 'acme"\\', "RUNNING", ("gpu001", ODD),
                                   "gpu", NOW - 3000),
                         JobRecord(NOW - 100, "502", "eval", "bo", "", "RUNNING", ("gpu001",))], ts=NOW - 100)
        writer.put_hosts([HostRecord("gpu001", "node", "10.0.0.1", "linux", 3,
                                     {"kernel": "6.1", "fw_mlx5_0": "28.39", "odd key/é": 'x"\\'}),
                          HostRecord(ODD, "node"), HostRecord("leaf01", "leaf", os="sonic")])
        writer.put_ports([PortRecord("gpu001", "mlx5_0", "1", "enp12s0np0", "Ethernet", "leaf01", "swp1"),
                          PortRecord("leaf01", "swp1", "", "", "Ethernet", "gpu001", "enp12s0np0")])
        for ts, typical, p99 in ((NOW - 200, 9.0, 30.0), (NOW - 90, 2.5, 4.25), (NOW - 30, 3.5, 6.0)):
            writer.put_probe(ProbeRecord(ts, "lat", "gpu001", ODD, "mlx5_0", "mlx5_0", job="501",
                                         result={"t_typical_usec": typical, "p99_usec": p99}))
        assert writer.flush(timeout=20)


@pytest.mark.parametrize("openmetrics", [True, False], ids=["openmetrics", "text-0.0.4"])
def test_the_scrape_is_the_librarys_text_byte_for_byte(tmp_path: Path, openmetrics: bool) -> None:
    _store(tmp_path / "fleet.db")
    reader = StoreReader(tmp_path / "fleet.db")
    try:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(LibraryOracle(reader, max_age_s=600))
        expected = (om_exposition.generate_latest(registry) if openmetrics
                    else exposition.generate_latest(registry)).decode("utf-8")
        mine = StoreMetrics(reader, max_age_s=600, clock=lambda: NOW)
        assert mine.render(openmetrics) == expected
        assert mine.render(openmetrics) == expected  # the cached series lines give the same text
    finally:
        reader.close()
    assert "gpu003" not in expected.split("fleet_nic_tx_gbps", 1)[1].split("# HELP", 1)[0]  # stale gauge left out
    assert 'fleet_nic_symbol_error_total{device="mlx5_1",node="gpu003",port="1"} 7.0' in expected  # error counter kept
    assert 'fleet_slurm_job_rdma_latency_p99_usec{slurm_job="501",tenant="acme\\"\\\\"}' in expected
    assert "info_odd_key__" in expected


def test_the_cached_lines_follow_new_jobs_and_new_series(tmp_path: Path) -> None:
    _store(tmp_path / "fleet.db")
    reader = StoreReader(tmp_path / "fleet.db")
    try:
        mine = StoreMetrics(reader, max_age_s=600, clock=lambda: NOW)
        assert 'fleet_slurm_job_node_info{node="gpu001",slurm_job="502",tenant=""} 1.0' in mine.render(True)
        with StoreWriter(tmp_path / "fleet.db") as writer:
            writer.put_jobs([JobRecord(NOW - 1, "777", "new", "cy", "zeta", "RUNNING", ("gpu002",))], ts=NOW - 1)
            writer.put_samples(HostSample("gpu002", NOW - 1, {("gpu_power_w", "gpu0", ""): 650.5}))
            assert writer.flush(timeout=20)
        text = mine.render(True)
        plain = mine.render(False)
    finally:
        reader.close()
    assert f'fleet_gpu_power_w{{gpu="0",node="gpu002"}} 650.5 {NOW - 1}\n' in text
    assert f'fleet_gpu_power_w{{gpu="0",node="gpu002"}} 650.5 {int((NOW - 1) * 1000)}\n' in plain
    assert 'fleet_slurm_job_node_info{node="gpu002",slurm_job="777",tenant="zeta"} 1.0' in text
    assert 'slurm_job="502"' not in text  # the jobs of the newest snapshot only


def test_the_server_negotiates_the_format_and_gzip(tmp_path: Path) -> None:
    _store(tmp_path / "fleet.db")
    reader = StoreReader(tmp_path / "fleet.db")
    server = serve_metrics(reader, "127.0.0.1", 0, max_age_s=1e9)
    try:
        host, port = server.address
        url = f"http://{host}:{port}/metrics"
        request = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text;version=1.0.0",
                                                       "Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
            assert response.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(response.read()).decode().endswith("# EOF\n")
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            assert "# EOF" not in response.read().decode()
    finally:
        server.close()
        reader.close()
