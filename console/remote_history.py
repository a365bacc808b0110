"""The console's reader when the fleet's history lives in Prometheus (``fleet console --history URL``).

Values, series, host states, the inventory, cabling and jobs come from
Prometheus (``fleet.collectors.prom_reader``), through the same reader contract
as the SQLite store (docs/contracts.md), so every screen and the replay work
unchanged. Open findings come from Alertmanager when one is given (live), else
from the shipped alert rules' ``ALERTS`` in Prometheus (live and replayed).
Probes, actions and the audit are the console's own: they stay in the local
store (``--db``), which may not exist yet (then there are none). No Textual here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fleet.collectors.alertmanager import AlertmanagerError, active_findings
from fleet.collectors.prom_reader import PrometheusReader
from fleet.console.snapshot import SnapshotLoader
from fleet.fabric.events import Event, Severity
from fleet.fabric.records import (
    ActionRecord,
    HostRecord,
    HostStatus,
    JobRecord,
    PortRecord,
    ProbeRecord,
)
from fleet.store.audit import ChainVerdict
from fleet.store.reader import StoreReader
from fleet.store.types import Point, PointArrays, SeriesData

LIVE_SLACK_S = 5.0
"""A moment this close to now is live: Alertmanager's findings are those of now."""


def history_label(history_url: str, alertmanager_url: str | None) -> str:
    """Where the console's data comes from, in a few words for the header."""
    where = urlsplit(history_url).netloc or history_url
    findings = f"findings: {urlsplit(alertmanager_url).netloc or alertmanager_url}" if alertmanager_url \
        else "findings: alert rules"
    return f"history: prometheus {where} · {findings} · probes, actions, audit: local"


class RemoteHistory:
    """The reader the console's screens use (``StoreReading`` and what the screens ask of a reader) over
    Prometheus, Alertmanager and the local store; see the module doc for what comes from where."""

    def __init__(self, prometheus: PrometheusReader, local_path: Path, alertmanager_url: str | None = None,
                 *, now: Callable[[], float] = time.time) -> None:
        self.prometheus = prometheus
        self._local_path = local_path
        self._local: StoreReader | None = None
        self._alertmanager = alertmanager_url
        self._now = now

    def close(self) -> None:
        if self._local is not None:
            self._local.close()

    def _store(self) -> StoreReader | None:
        """The local store, once it exists (a probe run from this console creates it)."""
        if self._local is None and self._local_path.exists():
            self._local = StoreReader(self._local_path)
        return self._local

    # --- from Prometheus
    def latest(self, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> list[Point]:
        return self.prometheus.latest(hosts, metrics)

    def as_of(self, ts: float, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> list[Point]:
        return self.prometheus.as_of(ts, hosts, metrics)

    def latest_arrays(self, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> PointArrays:
        return self.prometheus.latest_arrays(hosts, metrics)

    def as_of_arrays(self, ts: float, hosts: Sequence[str] | None = None,
                     metrics: Sequence[str] | None = None) -> PointArrays:
        return self.prometheus.as_of_arrays(ts, hosts, metrics)

    def series(self, host: str, metric: str, device: str = "", port: str = "", start: float | None = None,
               end: float | None = None, resolution: str = "auto") -> SeriesData:
        return self.prometheus.series(host, metric, device, port, start, end, resolution)

    def host_statuses(self, as_of: float | None = None) -> dict[str, HostStatus]:
        return self.prometheus.host_statuses(as_of)

    def hosts(self) -> list[HostRecord]:
        return self.prometheus.hosts()

    def ports(self, host: str | None = None) -> list[PortRecord]:
        return self.prometheus.ports(host)

    def jobs(self, as_of: float | None = None) -> list[JobRecord]:
        return self.prometheus.jobs(as_of)

    def time_span(self) -> tuple[float, float] | None:
        return self.prometheus.time_span()

    def job_latency(self, job_id: str, start: float, end: float, bucket_s: float = 60.0) -> list[tuple[float, float, float]]:
        return self.prometheus.job_latency(job_id, start, end, bucket_s)

    def tenant_latency(self, account: str, start: float, end: float,
                       bucket_s: float = 60.0) -> list[tuple[float, float, float]]:
        return self.prometheus.tenant_latency(account, start, end, bucket_s)

    # --- findings: Alertmanager (live) or the alert rules in Prometheus; and the console's own events
    def events(self, since: float | None = None, until: float | None = None, host: str | None = None,
               severity: str | None = None, kind: str | None = None, limit: int = 1000) -> list[Event]:
        """Open findings at ``until`` (default: now), and the local store's events, newest first."""
        found = self._findings(until)
        store = self._store()
        if store is not None:
            found += store.events(since=since, until=until, host=host, severity=severity, kind=kind, limit=limit)
        kept = [e for e in found if (since is None or e.ts >= since) and (until is None or e.ts <= until)
                and (host is None or host in (e.host, e.switch)) and (severity is None or e.severity == severity)
                and (kind is None or e.kind == kind)]
        return sorted(kept, key=lambda e: e.ts, reverse=True)[:limit]

    def _findings(self, until: float | None) -> list[Event]:
        now = self._now()
        live = until is None or until >= now - LIVE_SLACK_S
        if live and self._alertmanager is not None:
            try:
                return active_findings(self._alertmanager)
            except AlertmanagerError as error:  # said on the Events screen, the rest still draws
                return [Event(now, "alertmanager", Severity.WARNING, f"findings unavailable: {error}")]
        return self.prometheus.alerts(None if live else until)

    # --- the console's own records: the local store
    def probes(self, kind: str | None = None, since: float | None = None, until: float | None = None,
               host: str | None = None, job: str | None = None, run_id: str | None = None,
               limit: int = 1000) -> list[ProbeRecord]:
        store = self._store()
        return [] if store is None else store.probes(kind, since, until, host, job, run_id, limit)

    def baselines(self, name: str | None = None) -> list[tuple[float, str, dict[str, Any]]]:
        store = self._store()
        return [] if store is None else store.baselines(name)

    def audit(self) -> list[ActionRecord]:
        store = self._store()
        return [] if store is None else store.audit()

    def verify_audit(self) -> ChainVerdict | None:
        store = self._store()
        return None if store is None else store.verify_audit()


def open_remote_loader(history_url: str, local_path: Path, alertmanager_url: str | None = None) -> SnapshotLoader:
    """The console's snapshot loader over Prometheus (and Alertmanager, and the local store)."""
    return SnapshotLoader(RemoteHistory(PrometheusReader(history_url), local_path, alertmanager_url))
