"""Findings to a real Alertmanager: posted while open, resolved when they close, and read back as findings."""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers.prometheus import Alertmanager, running_alertmanager, spare_port, wait_for
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.alertmanager import (
    AlertmanagerError,
    AlertPublisher,
    active_findings,
    alert_labels,
    alert_name,
    post_alerts,
)
from fleet.collectors.inventory import load_inventory
from fleet.console.cli.collect import collect_into
from fleet.fabric.diagnosis import finding_event, finding_json
from fleet.fabric.events import Finding, Severity
from fleet.fabric.finding_life import FindingLife, cleared_event
from fleet.store.writer import StoreWriter

STORM = Finding("pfc_storm", Severity.CRITICAL, node="gpu001", nic="mlx5_0", job="501",
                evidence={"tx_paused_share": 0.83, "tx_pause_per_s": 12000.0, "storm_warning_events_in_window": 1},
                next_step="Drain the node.")
THERMAL = """
[[faults]]
kind = "gpu_thermal"
target = "gpu002:gpu1"
temp_c = 94
at = 3
until = 22
"""


class Notifications:
    """A webhook receiver: every notification Alertmanager sends, in order."""

    def __init__(self) -> None:
        self.received: queue.Queue[dict[str, Any]] = queue.Queue()
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                received.put(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

        self.server = HTTPServer(("127.0.0.1", spare_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def next(self, status: str, kind: str, timeout_s: float) -> dict[str, Any]:
        """The next notification of an alert of ``kind`` with ``status`` (firing or resolved)."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.received.get(timeout=left)
            except queue.Empty:
                break
            for alert in message["alerts"]:
                if alert["status"] == status and alert["labels"].get("kind") == kind:
                    return dict(alert)
        raise AssertionError(f"no {status} {kind} notification within {timeout_s:.0f} s")


@pytest.fixture
def notifications() -> Iterator[Notifications]:
    hook = Notifications()
    hook.thread.start()
    try:
        yield hook
    finally:
        hook.server.shutdown()
        hook.server.server_close()


@pytest.fixture
def alertmanager(tmp_path: Path, notifications: Notifications) -> Iterator[Alertmanager]:
    with running_alertmanager(tmp_path / "alertmanager", webhook=notifications.url) as running:
        yield running


def test_alert_names_and_labels_follow_the_finding() -> None:
    assert alert_name("pfc_storm") == "FleetPfcStorm" and alert_name("gpu_xid") == "FleetGpuXid"
    labels = alert_labels(finding_json(STORM))
    assert labels == {"alertname": "FleetPfcStorm", "kind": "pfc_storm", "severity": "critical", "node": "gpu001",
                      "nic": "mlx5_0", "slurm_job": "501"}
    raised = finding_event(STORM, 100.0)
    raised.data.update(opened_at=100.0)
    assert alert_labels(cleared_event(raised, 200.0).data) == labels  # the resolution reaches the same alert
    gpu = Finding("gpu_thermal", Severity.WARNING, node="gpu002", evidence={"gpu": "gpu1", "temp_c": 91})
    assert alert_labels(finding_json(gpu))["gpu"] == "1"


def test_a_finding_fires_is_read_back_and_resolves(alertmanager: Alertmanager, notifications: Notifications) -> None:
    publisher = AlertPublisher(alertmanager.url)
    opened = time.time() - 30
    life = FindingLife(STORM, opened, opened + 25, True)
    assert publisher.publish([life], [], time.time()).fired == 1
    firing = notifications.next("firing", "pfc_storm", 30)
    assert firing["annotations"]["evidence"] == "tx_paused_share=0.83, tx_pause_per_s=12000.0, storm_warning_events_in_window=1"
    assert firing["annotations"]["next_step"] == "Drain the node."
    back = active_findings(alertmanager.url)
    assert [(e.kind, e.severity, e.host, e.device, e.job) for e in back] == [
        ("pfc_storm", Severity.CRITICAL, "gpu001", "mlx5_0", "501")]
    assert back[0].data["evidence"] == {"tx_paused_share": 0.83, "tx_pause_per_s": 12000.0,
                                        "storm_warning_events_in_window": 1}
    assert back[0].data["next_step"] == "Drain the node." and back[0].data["opened_at"] == pytest.approx(opened, abs=1e-3)
    assert publisher.publish([life], [], time.time()).fired == 0  # posted again only after RESEND_S

    raised = finding_event(STORM, opened)
    raised.data.update(opened_at=opened)
    result = publisher.publish([], [cleared_event(raised, time.time())], time.time())
    assert (result.fired, result.resolved, result.failure) == (0, 1, None)
    resolved = notifications.next("resolved", "pfc_storm", 30)
    assert resolved["labels"] == firing["labels"]
    assert active_findings(alertmanager.url) == []


def test_an_unreachable_alertmanager_is_a_reason_and_the_resolution_waits(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{spare_port()}"
    with pytest.raises(AlertmanagerError, match="refused"):
        post_alerts(url, [{"labels": {"alertname": "x"}}])
    publisher = AlertPublisher(url)
    life = FindingLife(STORM, 100.0, 100.0, True)
    failed = publisher.publish([life], [], 200.0)
    assert failed.fired == 0 and failed.failure is not None and "refused" in failed.failure
    raised = finding_event(STORM, 100.0)
    raised.data.update(opened_at=100.0)
    assert publisher.publish([], [cleared_event(raised, 210.0)], 210.0).failure is not None
    with running_alertmanager(tmp_path / "late") as late:
        publisher.url = late.url
        done = publisher.publish([], [], 220.0)
    assert (done.resolved, done.failure) == (1, None)  # kept until it could be delivered


@pytest.mark.timeout(180)
async def test_collect_posts_a_fault_while_it_lasts_and_resolves_it_after(
        tmp_path: Path, alertmanager: Alertmanager, notifications: Notifications) -> None:
    writer = StoreWriter(tmp_path / "fleet.db").start()
    stop = asyncio.Event()
    publisher = AlertPublisher(alertmanager.url)
    try:
        async with running_fleet(small_scenario(THERMAL), tmp_path / "sim") as inventory_path:
            collecting = asyncio.ensure_future(
                collect_into(load_inventory(inventory_path), writer, stop=stop, alerts=publisher))
            try:
                firing = await asyncio.to_thread(notifications.next, "firing", "gpu_thermal", 60)
                active = await asyncio.to_thread(active_findings, alertmanager.url)
                resolved = await asyncio.to_thread(notifications.next, "resolved", "gpu_thermal", 90)
            finally:
                stop.set()
                await asyncio.wait_for(collecting, timeout=60)
    finally:
        writer.close()
    assert firing["labels"] == {"alertname": "FleetGpuThermal", "kind": "gpu_thermal", "severity": "critical",
                                "node": "gpu002", "gpu": "1", "slurm_job": "501"}
    assert "gpu_temp_c=94" in firing["annotations"]["evidence"]
    assert [(e.kind, e.host) for e in active if e.kind == "gpu_thermal"] == [("gpu_thermal", "gpu002")]
    assert resolved["labels"] == firing["labels"]
    assert publisher.totals.fired >= 1 and publisher.totals.resolved == 1 and publisher.totals.failure is None
    wait_for(lambda: active_findings(alertmanager.url) == [] or None, 30, "no alert active")
