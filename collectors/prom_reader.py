"""The store's reader contract (docs/contracts.md) over a Prometheus that scrapes ``fleet export``.

``fleet console --history http://HOST:9090`` reads the fleet through this instead
of a SQLite file: latest values, the fleet as of a moment, series over a window,
host states, the inventory, cabling and Slurm jobs, all from what the shards
serve (docs/metrics.md), through Prometheus's HTTP API
(https://prometheus.io/docs/prometheus/2.42/querying/api/): so anything that
speaks it (Thanos, Mimir, VictoriaMetrics) works too. Probes, actions and the
audit are not in Prometheus; the console reads them from its local store.

Where the answer differs from the store's, it is Prometheus's semantics, said here once:
- A value "now" or "as of" a moment is the last sample within Prometheus's lookback
  delta (5 minutes by default; the store looks 10 minutes back, and keeps an error
  counter's last value for ever).
- Samples carry the collector's reading times (``fleet export`` serves them), so
  times and values are the collector's; Prometheus holds one sample per series per
  scrape, so a series has fewer points than the store when it scrapes less often
  than the collector reads.
- ``series`` rollups (1 min, 1 h) are computed by Prometheus over the raw samples
  (``avg/min/max_over_time``, a counter's last value, ``quantile_over_time`` for
  latencies) instead of read from stored rollups.
- ``time_span`` is (newest sample - the server's retention, newest sample): Prometheus
  does not say cheaply how old its oldest sample is, and an earlier start only costs a
  query that finds nothing.
- ``job_latency`` and ``tenant_latency`` come from the per-job latency series
  (``fleet_slurm_job_rdma_latency_*``, two-minute summaries); a tenant's p99 is the
  worst of its jobs' and its p50 their mean.

Blocking HTTP (urllib), one request at a time: the console runs it on its reader thread.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from fleet.collectors.alertmanager import finding_of, iso_time
from fleet.collectors.openmetrics import EXPORTED
from fleet.collectors.openmetrics_records import INFO_PREFIX
from fleet.fabric.events import Event
from fleet.fabric.records import HostRecord, HostStatus, JobRecord, PortRecord
from fleet.fabric.states import HostState
from fleet.store.rollup import rollup_kind
from fleet.store.types import Point, PointArrays, SeriesData, SeriesName

TIMEOUT_S = 60.0
"""One query; a whole-fleet read of a large fleet takes seconds."""
RAW_MAX_SPAN_S = 6 * 3600.0
ROLLUP_1M_MAX_SPAN_S = 10 * 86400.0
"""``resolution="auto"`` picks raw up to 6 h, 1 min up to 10 days, else 1 h: the store's choice."""
_STEP_S = {"1m": 60.0, "1h": 3600.0}
_UNITS_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0, "y": 365 * 86400.0}


class PrometheusError(Exception):
    """Prometheus could not be reached or refused a query; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class _Family:
    metric: str
    scope: str  # "device" (NIC and optics), "gpu", "switch", "host"


def _scope(labels: tuple[str, ...]) -> str:
    if len(labels) == 1:
        return "host"
    return {"device": "device", "gpu": "gpu"}.get(labels[1], "switch")


FAMILIES: dict[str, _Family] = {entry.sample_name: _Family(metric, _scope(entry.labels))
                                for metric, entry in EXPORTED.items()}
"""Exported sample name -> the store's metric and how its labels map back to (device, port)."""


def _series_name(labels: dict[str, str], family: _Family) -> SeriesName:
    """The store's (host, metric, device, port) of an exported series (the inverse of fleet export's labels)."""
    host = labels.get("node", "")
    if family.scope == "device":
        return host, family.metric, labels.get("device", ""), labels.get("port", "")
    if family.scope == "gpu":
        return host, family.metric, "gpu" + labels.get("gpu", ""), ""
    if family.scope == "switch":
        return host, family.metric, labels.get("port", ""), ""
    return host, family.metric, "", ""


def _quoted(text: str) -> str:
    """A PromQL string literal (Go escaping)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _any_of(values: Iterable[str]) -> str:
    """An RE2 alternation matching exactly these values."""
    return "|".join(re.escape(value) for value in values)


def _key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def go_duration_s(text: str) -> float | None:
    """Seconds of a Prometheus duration (``15d``, ``1y2w``, ``90m``); None when it is not one."""
    parts = re.findall(r"(\d+)(ms|[smhdwy])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(int(n) * _UNITS_S[u] for n, u in parts)


class PrometheusReader:
    """The reader contract of ``fleet.store.reader.StoreReader`` for the values and records Prometheus holds.

    ``url``: Prometheus's base URL (``http://prometheus:9090``). ``now``: unix seconds, for the
    newest time when none is given. The series table behind ``PointArrays.names`` belongs to
    this reader and only grows, as the store's does.
    """

    def __init__(self, url: str, *, timeout_s: float = TIMEOUT_S, now: Any = time.time) -> None:
        self.url = url.rstrip("/")
        self._timeout_s = timeout_s
        self._now = now
        self._lock = threading.Lock()
        self._names: list[SeriesName | None] = []
        self._sids: dict[SeriesName, int] = {}
        self._retention_s: float | None = None
        self._retention_read = False

    def close(self) -> None:
        """Nothing to release: every query is its own HTTP request."""

    # --- HTTP ----------------------------------------------------------------------
    def _api(self, path: str, params: dict[str, str] | None = None) -> Any:
        body = urllib.parse.urlencode(params or {}).encode() if params is not None else None
        request = urllib.request.Request(f"{self.url}/api/v1/{path}", data=body, method="POST" if body else "GET",
                                         headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                document = orjson.loads(response.read())
        except urllib.error.HTTPError as error:
            try:
                reason = str(orjson.loads(error.read()).get("error", ""))
            except (ValueError, AttributeError):
                reason = ""
            raise PrometheusError(f"{self.url}: HTTP {error.code} {reason}".strip()) from None
        except (urllib.error.URLError, OSError) as error:
            raise PrometheusError(f"{self.url}: {getattr(error, 'reason', error)}") from None
        except ValueError as error:
            raise PrometheusError(f"{self.url}: not JSON ({error})") from None
        if not isinstance(document, dict) or document.get("status") != "success":
            raise PrometheusError(f"{self.url}: {document.get('error') if isinstance(document, dict) else document}")
        return document.get("data")

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query's samples (``metric``, ``value``), at ``at`` (unix seconds) or now."""
        params = {"query": promql} | ({"time": repr(at)} if at is not None else {})
        data = self._api("query", params)
        return list(data.get("result", [])) if isinstance(data, dict) else []

    def query_range(self, promql: str, start: float, end: float, step_s: float) -> list[dict[str, Any]]:
        data = self._api("query_range", {"query": promql, "start": repr(start), "end": repr(end),
                                         "step": repr(step_s)})
        return list(data.get("result", [])) if isinstance(data, dict) else []

    # --- values --------------------------------------------------------------------
    def _read(self, at: float | None, hosts: Sequence[str] | None,
              metrics: Sequence[str] | None) -> list[tuple[SeriesName, float, float]]:
        """(series, reading time, value) of every series with a sample within the lookback of ``at``.

        Two queries: the values, and their sample times. ``timestamp()`` drops the series name, so each
        family's times are labelled with its name (``family``) before they are joined into one answer.
        """
        names = sorted(name for name, family in FAMILIES.items() if metrics is None or family.metric in metrics)
        if not names or (hosts is not None and not hosts):
            return []
        where = "" if hosts is None else f"node=~{_quoted(_any_of(hosts))}"
        values = self.query("{" + ",".join(filter(None, (f"__name__=~{_quoted(_any_of(names))}", where))) + "}", at)
        times = self.query(" or ".join(
            f'label_replace(timestamp({name}{{{where}}}), "family", {_quoted(name)}, "", "")' for name in names), at)
        stamp: dict[tuple[tuple[str, str], ...], float] = {
            tuple(sorted(sample["metric"].items())): float(sample["value"][1]) for sample in times}
        found = []
        for sample in values:
            labels = sample["metric"]
            name = labels.get("__name__", "")
            family = FAMILIES.get(name)
            if family is None:
                continue
            key = tuple(sorted({**labels, "family": name}.items() - {("__name__", name)}))
            ts = stamp.get(key, float(sample["value"][0]))
            found.append((_series_name(labels, family), ts, float(sample["value"][1])))
        return found

    def _arrays(self, found: list[tuple[SeriesName, float, float]]) -> PointArrays:
        with self._lock:
            sids = []
            for name, _, _ in found:
                sid = self._sids.get(name)
                if sid is None:
                    sid = self._sids[name] = len(self._names)
                    self._names.append(name)
                sids.append(sid)
            names: Sequence[SeriesName | None] = self._names
        return PointArrays(np.array(sids, dtype=np.int64), np.array([ts for _, ts, _ in found], dtype=np.float64),
                           np.array([v for _, _, v in found], dtype=np.float64), names)

    def latest(self, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> list[Point]:
        """The newest value of each series (within Prometheus's lookback of now)."""
        return [Point(*name, ts, value) for name, ts, value in self._read(None, hosts, metrics)]

    def as_of(self, ts: float, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> list[Point]:
        """Per series the last value at or before ``ts`` (within Prometheus's lookback)."""
        return [Point(*name, at, value) for name, at, value in self._read(ts, hosts, metrics)]

    def latest_arrays(self, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None) -> PointArrays:
        return self._arrays(self._read(None, hosts, metrics))

    def as_of_arrays(self, ts: float, hosts: Sequence[str] | None = None,
                     metrics: Sequence[str] | None = None) -> PointArrays:
        return self._arrays(self._read(ts, hosts, metrics))

    def series(self, host: str, metric: str, device: str = "", port: str = "", start: float | None = None,
               end: float | None = None, resolution: str = "auto") -> SeriesData:
        """One series over [start, end] (default: the last hour): raw samples up to 6 h, else rollups Prometheus
        computes per 1 min or 1 h bucket (``ts``: the bucket's start)."""
        if end is None:
            span = self.time_span()
            end = span[1] if span else self._now()
        if start is None:
            start = end - 3600.0
        if resolution == "auto":
            width = end - start
            resolution = "raw" if width <= RAW_MAX_SPAN_S else "1m" if width <= ROLLUP_1M_MAX_SPAN_S else "1h"
        entry = EXPORTED.get(metric)
        if entry is None:
            return SeriesData(resolution, [], [], [], [])
        labels = {"node": host}
        family = FAMILIES[entry.sample_name]
        if family.scope == "device":
            labels |= {"device": device, "port": port}
        elif family.scope == "gpu":
            labels["gpu"] = device.removeprefix("gpu")
        elif family.scope == "switch":
            labels["port"] = device
        selector = entry.sample_name + "{" + ",".join(f"{k}={_quoted(v)}" for k, v in sorted(labels.items())) + "}"
        if resolution == "raw":
            window = max(1, int(np.ceil(end - start)))
            found = self.query(f"{selector}[{window}s]", end)
            points = [(float(t), float(v)) for sample in found[:1] for t, v in sample.get("values", [])
                      if float(t) >= start]
            values = [v for _, v in points]
            return SeriesData("raw", [t for t, _ in points], values, list(values), list(values))
        return self._rollup(selector, metric, resolution, start, end)

    def _rollup(self, selector: str, metric: str, resolution: str, start: float, end: float) -> SeriesData:
        step = _STEP_S[resolution]
        # each bucket is evaluated at its end, the one holding ``end`` too (a time to come is fine to Prometheus)
        first, end = float(np.floor(start / step) * step + step), float(np.ceil(end / step) * step)
        window = f"[{int(step)}s]"
        kind = rollup_kind(metric)
        if kind == "counter":
            last = self._columns(f"last_over_time({selector}{window})", first, end, step)
            return SeriesData(resolution, [t - step for t in last], list(last.values()), list(last.values()),
                              list(last.values()))
        columns = {name: self._columns(f"{name}_over_time({selector}{window})", first, end, step)
                   for name in ("avg", "min", "max")}
        times = sorted(set(columns["avg"]) & set(columns["min"]) & set(columns["max"]))
        p50 = p99 = None
        if kind == "latency":
            q50 = self._columns(f"quantile_over_time(0.5, {selector}{window})", first, end, step)
            q99 = self._columns(f"quantile_over_time(0.99, {selector}{window})", first, end, step)
            times = [t for t in times if t in q50 and t in q99]
            p50, p99 = [q50[t] for t in times], [q99[t] for t in times]
        return SeriesData(resolution, [t - step for t in times], [columns["min"][t] for t in times],
                          [columns["avg"][t] for t in times], [columns["max"][t] for t in times], p50, p99)

    def _columns(self, promql: str, start: float, end: float, step: float) -> dict[float, float]:
        if end < start:
            return {}
        found = self.query_range(promql, start, end, step)
        return {float(t): float(v) for sample in found[:1] for t, v in sample.get("values", [])}

    def time_span(self) -> tuple[float, float] | None:
        """(newest sample - the server's retention, newest sample), None when Prometheus holds no fleet now."""
        newest = self.query("max(timestamp(fleet_host_up))")
        if not newest:
            return None
        end = float(newest[0]["value"][1])
        retention = self._retention()
        return (end - retention if retention is not None else 0.0), end

    def _retention(self) -> float | None:
        """The server's time retention in seconds (runtime info's ``storageRetention``, e.g. "15d" or
        "15d or 500MiB"); None, all of time, when it does not say (Thanos, Mimir, VictoriaMetrics)."""
        if not self._retention_read:
            try:
                info = self._api("status/runtimeinfo")
            except PrometheusError:
                info = None
            text = str(info.get("storageRetention", "")) if isinstance(info, dict) else ""
            self._retention_s = go_duration_s(text.split(" or ")[0].strip()) if text else None
            self._retention_read = True
        return self._retention_s

    # --- records -------------------------------------------------------------------
    def host_statuses(self, as_of: float | None = None) -> dict[str, HostStatus]:
        """Each host's collection state at ``as_of`` (default: now), from ``fleet_host_state_time_seconds``."""
        found: dict[str, HostStatus] = {}
        for sample in self.query("fleet_host_state_time_seconds", as_of):
            labels = sample["metric"]
            try:
                state = HostState(labels.get("state", ""))
            except ValueError:
                continue
            status = HostStatus(labels.get("node", ""), state, float(sample["value"][1]), labels.get("reason", ""))
            old = found.get(status.host)
            if old is None or status.since > old.since:  # a state change inside the lookback: the newer holds
                found[status.host] = status
        return found

    def hosts(self) -> list[HostRecord]:
        """The inventory as the shards serve it now (``fleet_host_info``), by name."""
        found: dict[str, HostRecord] = {}
        for sample in self.query("fleet_host_info"):
            labels = sample["metric"]
            try:
                group = int(labels.get("group", "-1"))
            except ValueError:
                group = -1
            info = {key.removeprefix(INFO_PREFIX): value for key, value in labels.items() if key.startswith(INFO_PREFIX)}
            record = HostRecord(labels.get("node", ""), labels.get("role", ""), labels.get("address", ""),
                                labels.get("os", ""), group, dict(sorted(info.items())))
            found[record.name] = record
        return [found[name] for name in sorted(found)]

    def ports(self, host: str | None = None) -> list[PortRecord]:
        """Ports and their cables as the shards serve them now (``fleet_port_info``)."""
        selector = "fleet_port_info" if host is None else f"fleet_port_info{{node={_quoted(host)}}}"
        found = {PortRecord(m.get("node", ""), m.get("device", ""), m.get("port", ""), m.get("netdev", ""),
                            m.get("link_layer", ""), m.get("peer_node", ""), m.get("peer_port", ""))
                 for m in (sample["metric"] for sample in self.query(selector))}
        return sorted(found, key=lambda p: (p.host, p.device, p.port))

    def jobs(self, as_of: float | None = None) -> list[JobRecord]:
        """The Slurm jobs running at ``as_of`` (default: now), with their nodes, by id."""
        nodes: dict[str, set[str]] = {}
        for sample in self.query("fleet_slurm_job_node_info", as_of):
            labels = sample["metric"]
            nodes.setdefault(labels.get("slurm_job", ""), set()).add(labels.get("node", ""))
        found: dict[str, JobRecord] = {}
        for sample in self.query("fleet_slurm_job_start_time_seconds", as_of):
            m = sample["metric"]
            job_id = m.get("slurm_job", "")
            seen = as_of if as_of is not None else float(sample["value"][0])
            found[job_id] = JobRecord(seen, job_id, m.get("name", ""), m.get("user", ""), m.get("tenant", ""),
                                      m.get("state", ""), tuple(sorted(nodes.get(job_id, ()))), m.get("partition", ""),
                                      float(sample["value"][1]))
        return [found[job_id] for job_id in sorted(found)]

    def alerts(self, at: float | None = None) -> list[Event]:
        """The fleet alerts of deploy/prometheus's rules firing at ``at`` (default: now), as open finding events:
        ``ALERTS`` with a ``kind``, opened when ``ALERTS_FOR_STATE`` says they became active. Rules keep no
        annotations in ``ALERTS``: these findings carry their labels, not their evidence."""
        since = {_key(sample["metric"]): float(sample["value"][1])
                 for sample in self.query('ALERTS_FOR_STATE{kind!=""}', at)}
        found = []
        for sample in self.query('ALERTS{alertstate="firing",kind!=""}', at):
            labels = {k: v for k, v in sample["metric"].items() if k not in ("__name__", "alertstate")}
            opened = since.get(_key(labels), float(sample["value"][0]))
            event = finding_of({"labels": labels, "startsAt": iso_time(opened)})
            if event is not None:
                found.append(event)
        return sorted(found, key=lambda e: e.ts, reverse=True)

    def job_latency(self, job_id: str, start: float, end: float,
                    bucket_s: float = 60.0) -> list[tuple[float, float, float]]:
        """(bucket start, p50_usec, p99_usec) of the job's latency series, one per bucket."""
        where = f"{{slurm_job={_quoted(job_id)}}}"
        return self._latency(f"max(fleet_slurm_job_rdma_latency_p50_usec{where})",
                             f"max(fleet_slurm_job_rdma_latency_p99_usec{where})", start, end, bucket_s)

    def tenant_latency(self, account: str, start: float, end: float,
                       bucket_s: float = 60.0) -> list[tuple[float, float, float]]:
        """Like ``job_latency`` over the tenant's jobs: the mean of their p50s, the worst of their p99s."""
        where = f"{{tenant={_quoted(account)}}}"
        return self._latency(f"avg(fleet_slurm_job_rdma_latency_p50_usec{where})",
                             f"max(fleet_slurm_job_rdma_latency_p99_usec{where})", start, end, bucket_s)

    def _latency(self, p50_query: str, p99_query: str, start: float, end: float,
                 bucket_s: float) -> list[tuple[float, float, float]]:
        first = start + bucket_s  # each bucket read at its end
        p50 = self._columns(p50_query, first, end, bucket_s)
        p99 = self._columns(p99_query, first, end, bucket_s)
        return [(t - bucket_s, p50[t], p99[t]) for t in sorted(p50) if t in p99]
