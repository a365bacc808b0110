"""`fleet export`: a real collection of a simulated fleet, served and scraped over HTTP, parsed back."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet, small_scenario
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus

from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.openmetrics import EXPORTED, metrics_table, serve_metrics
from fleet.console.cli import main
from fleet.console.cli.export import READY_PREFIX, parse_listen
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
FAULT = """
[[faults]]
kind = "node_unreachable"
target = "gpu006"
at = 0
"""
FAST = CollectSettings(interval_s=1.0, hung_after_s=4.0, slow_after_s=1.0, facts_every_s=60.0)


def test_docs_metrics_md_is_generated_from_the_catalogue() -> None:
    assert DOC.read_text(encoding="utf-8") == metrics_table(), (
        "docs/metrics.md is stale: regenerate it with "
        "`python -c 'from fleet.collectors.openmetrics import metrics_table; print(metrics_table(), end=\"\")' > docs/metrics.md`")


def test_exported_names_are_unique_valid_and_carry_units() -> None:
    names = [entry.sample_name for entry in EXPORTED.values()]
    assert len(set(names)) == len(names)
    assert "fleet_host_up" not in names  # served from host states, once
    assert all(re.fullmatch(r"fleet_[a-z][a-z0-9_]*", name) for name in names)
    assert EXPORTED["tx_bytes"].sample_name == "fleet_nic_tx_bytes_total"
    assert EXPORTED["tx_gbps"].sample_name == "fleet_nic_tx_gbps"
    assert EXPORTED["rx_prio3_pause"].sample_name == "fleet_nic_rx_prio3_pause_frames_total"
    assert EXPORTED["symbol_error"].sample_name == "fleet_nic_symbol_error_total"
    assert EXPORTED["gpu_temp_c"].sample_name == "fleet_gpu_temp_c"
    assert EXPORTED["sw_rx_pfc_pause"].sample_name == "fleet_switch_rx_pfc_pause_frames_total"
    assert EXPORTED["collect_seconds"].sample_name == "fleet_host_collect_seconds"


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:9464", ("127.0.0.1", 9464)), ("[::1]:0", ("::1", 0)), (":9464", ("0.0.0.0", 9464)),
    ("9464", ("0.0.0.0", 9464)),
])
def test_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


def test_a_missing_history_is_refused_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["export", "--listen", "127.0.0.1:0", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 3  # nothing collected there (docs/exit-codes.md)
    assert "no history at" in result.output


def _scrape(url: str, accept: str | None) -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read().decode("utf-8")


async def _collect(tmp_path: Path) -> Path:
    """Stream a small simulated fleet until every healthy node has rates; return the store's path."""
    writer = StoreWriter(tmp_path / "fleet.db").start()
    try:
        async with running_fleet(small_scenario(FAULT), tmp_path / "sim") as inventory_path:
            collector = Collector(load_inventory(inventory_path), writer, settings=FAST)
            task = asyncio.ensure_future(collector.run())
            reader = StoreReader(writer.path)
            healthy = [f"gpu00{i}" for i in (1, 2, 3, 4, 5, 7, 8)]
            try:
                async def rates_everywhere() -> None:
                    while {p.host for p in reader.latest(hosts=[*healthy, "leaf01"],
                                                         metrics=["tx_gbps", "sw_tx_gbps"])} != {*healthy, "leaf01"}:
                        writer.flush(timeout=5)
                        await asyncio.sleep(0.1)

                await asyncio.wait_for(rates_everywhere(), timeout=30)
            finally:
                reader.close()
                await collector.close()
                await asyncio.wait_for(task, timeout=20)
        assert writer.flush(timeout=20)
    finally:
        writer.close()
    return tmp_path / "fleet.db"


async def test_scraped_values_and_labels_match_the_store(tmp_path: Path) -> None:
    db = await _collect(tmp_path)
    reader = StoreReader(db)
    server = serve_metrics(reader, "127.0.0.1", 0)
    try:
        host, port = server.address
        url = f"http://{host}:{port}/metrics"
        content_type, text = await asyncio.to_thread(_scrape, url, OPENMETRICS)
        assert content_type.startswith("application/openmetrics-text")
        families = {f.name: f for f in parse_openmetrics(text)}
        plain_type, plain = await asyncio.to_thread(_scrape, url, None)
    finally:
        server.close()
    assert plain_type.startswith("text/plain")
    assert {f.name for f in parse_prometheus(plain)} >= {"fleet_host_up", "fleet_nic_tx_bytes", "fleet_nic_tx_gbps"}

    up = {s.labels["node"]: s for s in families["fleet_host_up"].samples}
    assert up["gpu006"].labels["state"] == "unreachable" and up["gpu006"].value == 0
    assert up["gpu001"].labels["state"] == "ok" and up["gpu001"].value == 1
    assert up["leaf01"].value == 1 and up["head01"].value == 1

    latest = {(p.host, p.metric, p.device, p.port): p.value for p in reader.latest()}
    stamps = {(p.host, p.metric, p.device, p.port): p.ts for p in reader.latest()}
    reader.close()
    tx = families["fleet_nic_tx_bytes"]
    assert tx.type == "counter"
    samples = {(s.labels["node"], s.labels["device"], s.labels["port"]): s for s in tx.samples}
    one = samples[("gpu001", "mlx5_0", "1")]
    assert one.name == "fleet_nic_tx_bytes_total"
    assert one.value == latest[("gpu001", "tx_bytes", "mlx5_0", "1")]
    assert float(one.timestamp) == pytest.approx(stamps[("gpu001", "tx_bytes", "mlx5_0", "1")], abs=1e-6)  # read then
    assert set(one.labels) == {"node", "device", "port"}
    members = {(s.labels["node"], s.labels["slurm_job"], s.labels["tenant"]) for s in families["fleet_slurm_job_node"].samples}
    assert members == {(f"gpu00{i}", "501", "acme") for i in (1, 2, 3, 4)}
    assert {d for (node, d, _) in samples if node == "gpu001"} == {f"mlx5_{r}" for r in range(8)}

    gbps = {(s.labels["node"], s.labels["device"]): s.value for s in families["fleet_nic_tx_gbps"].samples}
    assert families["fleet_nic_tx_gbps"].type == "gauge"
    assert gbps[("gpu001", "mlx5_0")] == pytest.approx(latest[("gpu001", "tx_gbps", "mlx5_0", "1")])
    assert 0 < gbps[("gpu001", "mlx5_0")] <= 400

    temps = {(s.labels["node"], s.labels["gpu"]): s for s in families["fleet_gpu_temp_c"].samples}
    assert temps[("gpu002", "3")].value == latest[("gpu002", "gpu_temp_c", "gpu3", "")]

    switch = {(s.labels["node"], s.labels["port"]): s.value for s in families["fleet_switch_tx_bytes"].samples}
    assert any(node == "leaf01" for node, _ in switch)
    assert all(value == latest[(node, "sw_tx_bytes", port, "")] for (node, port), value in switch.items())
    lanes = {s.labels["port"] for s in families["fleet_optics_rx_power_dbm"].samples
             if s.labels["node"] == "gpu001" and s.labels["device"] == "mlx5_0"}
    assert lanes and all(re.fullmatch(r"L\d", lane) for lane in lanes)
    records = {"fleet_host_up", "fleet_host_state_time_seconds", "fleet_host"}
    assert not [s for f in families.values() for s in f.samples if s.labels.get("node") == "gpu006" and f.name not in records]
    since = {s.labels["node"]: s for s in families["fleet_host_state_time_seconds"].samples}
    assert since["gpu006"].labels["reason"] == "connection refused" and since["gpu006"].labels["state"] == "unreachable"

    # The command serves the same store; one line on stderr says where.
    process = subprocess.Popen(
        [sys.executable, "-c", "from fleet.console.cli import main; main()", "export", "--listen", "127.0.0.1:0",
         "--db", str(db)], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stderr.readline), timeout=30)
        assert line.startswith(READY_PREFIX), line
        _, text = await asyncio.to_thread(_scrape, line[len(READY_PREFIX):].strip(), OPENMETRICS)
        assert "fleet_nic_tx_bytes_total{" in text and text.rstrip().endswith("# EOF")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


async def test_export_with_collect_serves_what_it_collects_and_stops_on_sigterm(tmp_path: Path) -> None:
    async with running_fleet(small_scenario(FAULT), tmp_path / "sim") as inventory_path:
        process = subprocess.Popen(
            [sys.executable, "-c", "from fleet.console.cli import main; main()", "export", "--listen", "127.0.0.1:0",
             "--collect", "--inventory", str(inventory_path), "--db", str(tmp_path / "fleet.db")],
            stderr=subprocess.PIPE, text=True)
        try:
            assert process.stderr is not None
            line = await asyncio.wait_for(asyncio.to_thread(process.stderr.readline), timeout=30)
            assert line.startswith(READY_PREFIX), line
            url = line[len(READY_PREFIX):].strip()

            async def rates_served() -> dict[str, Metric]:
                while True:
                    _, text = await asyncio.to_thread(_scrape, url, OPENMETRICS)
                    families = {f.name: f for f in parse_openmetrics(text)}
                    gbps = families.get("fleet_nic_tx_gbps")
                    if gbps is not None and any(s.labels["node"] == "gpu001" for s in gbps.samples):
                        return families
                    await asyncio.sleep(0.2)

            families = await asyncio.wait_for(rates_served(), timeout=40)
        finally:
            process.send_signal(signal.SIGTERM)
            status = await asyncio.to_thread(process.wait, 30)
    assert status == 0
    up = {s.labels["node"]: s.labels["state"] for s in families["fleet_host_up"].samples}
    assert up["gpu001"] == "ok" and up["gpu006"] == "unreachable"
