"""The scrape text fleet writes itself is byte for byte what prometheus-client writes for the same families.

fleet encodes the scrape by hand because the library builds, sorts and escapes
labels per sample on every scrape (16 CPU-s at 1,024 nodes). The oracle below
builds the same families with the library's own ``Metric`` classes, from the
store's ``Point``s, and lets the library encode both formats.
"""

from __future__ import annotations

import gzip
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import exposition
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.registry import Collector, CollectorRegistry

from fleet.collectors.openmetrics import EXPORTED, HOST_UP_HELP, StoreMetrics, serve_metrics
from fleet.fabric.records import HostStatus, JobRecord
from fleet.fabric.samples import METRICS, HostSample, MetricKind
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

NOW = 1_790_000_000.0
ODD = 'gpu"9\\x\n\u00e9'
"""A host name no inventory should allow, to prove label values are escaped like the library does."""


class LibraryOracle(Collector):
    """The families as the library would serve them (the way fleet exported before encoding itself)."""

    def __init__(self, reader: StoreReader, max_age_s: float) -> None:
        self.reader, self.max_age_s = reader, max_age_s

    def collect(self) -> list[Metric]:
        jobs: dict[str, set[str]] = {}
        tenants: dict[str, set[str]] = {}
        for job in self.reader.jobs():
            for node in job.nodes:
                jobs.setdefault(node, set()).add(job.job_id)
                if job.account:
                    tenants.setdefault(node, set()).add(job.account)
        up = GaugeMetricFamily("fleet_host_up", HOST_UP_HELP, labels=("node", "state"))
        for host, status in sorted(self.reader.host_statuses().items()):
            up.add_metric((host, status.state.value), 0.0 if status.state.is_failure else 1.0)
        families: dict[str, Metric] = {}
        for point in self.reader.latest():
            entry = EXPORTED.get(point.metric)
            if entry is None or (point.ts < NOW - self.max_age_s and METRICS[point.metric].kind is not MetricKind.ERROR):
                continue
            if point.metric not in families:
                kind = CounterMetricFamily if entry.counter else GaugeMetricFamily
                families[point.metric] = kind(entry.family, entry.help, labels=entry.labels)
            job_ids, tenant = ",".join(sorted(jobs.get(point.host, ()))), ",".join(sorted(tenants.get(point.host, ())))
            values = {"node": point.host, "device": point.device, "port": point.port,
                      "gpu": point.device.removeprefix("gpu"), "job": job_ids, "tenant": tenant}
            if entry.labels == ("node", "port"):
                values["port"] = point.device
            families[point.metric].add_metric(tuple(values[label] for label in entry.labels), point.value)  # type: ignore[attr-defined]
        return [up, *(families[name] for name in sorted(families))]


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
        writer.put_jobs([JobRecord(NOW - 100, "501", "train", "ana", 'acme"\\', "RUNNING", ("gpu001", ODD)),
                         JobRecord(NOW - 100, "502", "eval", "bo", "", "RUNNING", ("gpu001",))], ts=NOW - 100)
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
    assert 'fleet_nic_symbol_error_total{device="mlx5_1",job="",node="gpu003"' in expected  # error counter kept


def test_the_cached_lines_follow_new_jobs_and_new_series(tmp_path: Path) -> None:
    _store(tmp_path / "fleet.db")
    reader = StoreReader(tmp_path / "fleet.db")
    try:
        mine = StoreMetrics(reader, max_age_s=600, clock=lambda: NOW)
        assert 'job="501,502",node="gpu001"' in mine.render(True)
        with StoreWriter(tmp_path / "fleet.db") as writer:
            writer.put_jobs([JobRecord(NOW - 1, "777", "new", "cy", "zeta", "RUNNING", ("gpu002",))], ts=NOW - 1)
            writer.put_samples(HostSample("gpu002", NOW - 1, {("gpu_power_w", "gpu0", ""): 650.5}))
            assert writer.flush(timeout=20)
        text = mine.render(True)
    finally:
        reader.close()
    assert 'fleet_gpu_power_w{gpu="0",job="777",node="gpu002",tenant="zeta"} 650.5' in text
    assert 'job="501,502",node="gpu001"' not in text  # the jobs of the newest snapshot only


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
