"""The store's latest values as OpenMetrics families, for an existing Prometheus to scrape.

Read-only: a custom prometheus-client ``Collector`` that, on every scrape,
reads the newest value of each series and each host's collection state through
``store.reader.StoreReader`` (so it serves whatever ``fleet collect`` or the
console's collector writes, from the same process or another one).

Names (docs/metrics.md lists every one, generated from ``fabric.samples.METRICS``):
``fleet_<scope>_<metric>[_<unit>]`` where the scope is ``nic``, ``gpu``,
``optics``, ``switch`` or ``host``, the unit is appended when the metric's
name does not already carry it, and counters (kinds ``counter`` and
``error``) get the ``_total`` suffix: ``fleet_nic_tx_bytes_total``,
``fleet_nic_tx_gbps``, ``fleet_gpu_temp_c``, ``fleet_switch_rx_pfc_pause_frames_total``.

Labels: ``node`` (the host, switches included), ``device`` (RDMA device),
``port`` (HCA port, switch port, or optics lane ``L<n>``), ``gpu`` (index),
``job`` and ``tenant`` (Slurm job ids and accounts running on the node, comma
separated; empty when none). ``fleet_host_up`` is 1 for a host whose last
collection succeeded, with its state (``ok``, ``hung``, ``unreachable``...)
as the ``state`` label.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from fabric.samples import METRICS, MetricKind, MetricSpec
from store.reader import StoreReader

UNIT_SUFFIX: dict[str, str] = {
    "bytes": "bytes", "packets": "packets", "frames": "frames", "bits": "bits", "usec": "usec",
    "ticks": "ticks", "Gb/s": "gbps", "1/s": "per_s", "dBm": "dbm", "mA": "ma", "C": "c",
    "V": "v", "%": "pct", "W": "w", "MHz": "mhz", "s": "seconds",
}
"""``MetricSpec.unit`` -> the name suffix that says it; units missing here (counts of
events, codes, bitmasks, booleans, ratios, QPs) are dimensionless and add nothing."""

STATUS_METRIC = "host_up"
"""Exported from the hosts' collection states (``fleet_host_up{state=...}``), not from samples."""

DEFAULT_MAX_AGE_S = 600.0
"""Gauges and counters older than this are not served (the host stopped answering and its
state says why); error counters are stored only when they change, so they are always served."""


@dataclass(frozen=True, slots=True)
class ExportedMetric:
    """How one ``METRICS`` entry is exported: family name (without ``_total``), type, labels."""

    metric: str
    family: str
    counter: bool
    labels: tuple[str, ...]
    help: str

    @property
    def sample_name(self) -> str:
        """The name a scrape shows (counters end in ``_total``)."""
        return self.family + "_total" if self.counter else self.family


def _scope(metric: str) -> tuple[str, str]:
    """(scope, metric name without its scope prefix)."""
    for prefix, scope in (("gpu_", "gpu"), ("sw_", "switch"), ("optics_", "optics")):
        if metric.startswith(prefix):
            return scope, metric[len(prefix):]
    if metric in ("host_up", "collect_seconds"):
        return "host", metric.removeprefix("host_")
    return "nic", metric


_LABELS: dict[str, tuple[str, ...]] = {
    "nic": ("node", "device", "port", "job", "tenant"),
    "optics": ("node", "device", "port", "job", "tenant"),
    "gpu": ("node", "gpu", "job", "tenant"),
    "switch": ("node", "port"),
    "host": ("node", "job", "tenant"),
}


def exported(spec: MetricSpec) -> ExportedMetric:
    """The exported name, type and labels of one catalogue entry."""
    scope, rest = _scope(spec.name)
    suffix = UNIT_SUFFIX.get(spec.unit, "")
    if suffix and suffix not in rest.split("_"):
        rest = f"{rest}_{suffix}"
    counter = spec.kind is not MetricKind.GAUGE
    return ExportedMetric(spec.name, f"fleet_{scope}_{rest}".lower(), counter, _LABELS[scope],
                          f"{spec.help} ({spec.unit}; fleet metric {spec.name})")


EXPORTED: dict[str, ExportedMetric] = {
    name: exported(spec) for name, spec in METRICS.items() if name != STATUS_METRIC
}
"""Every sample metric of the catalogue, by its ``fabric.samples`` name."""

HOST_UP_HELP = "1 when the host's last collection succeeded (ok or slow); state: its collection state"


def metrics_table() -> str:
    """docs/metrics.md: the exported families, generated from the catalogue (a test keeps it current)."""
    lines = [
        "# Exported metrics",
        "",
        "`fleet export --listen ADDR` serves these in the OpenMetrics text format",
        "(or the Prometheus 0.0.4 text format when the scraper does not ask for",
        "OpenMetrics). Generated from `fabric.samples.METRICS` by",
        "`collectors.openmetrics.metrics_table()`; `tests/collectors/test_openmetrics.py`",
        "fails when this file is stale.",
        "",
        "Labels: `node` (host or switch), `device` (RDMA device), `port` (HCA port,",
        "switch port, or optics lane `L<n>`), `gpu` (index), `job` and `tenant` (Slurm",
        "job ids and accounts on the node, comma separated, empty when none).",
        "Counters end in `_total`; units are in the names.",
        "",
        "| Name | Type | Labels | Meaning |",
        "|---|---|---|---|",
        f"| `fleet_host_up` | gauge | node, state | {HOST_UP_HELP} |",
    ]
    for entry in EXPORTED.values():
        kind = "counter" if entry.counter else "gauge"
        lines.append(f"| `{entry.sample_name}` | {kind} | {', '.join(entry.labels)} | {entry.help} |")
    return "\n".join(lines) + "\n"


class StoreMetrics(Collector):
    """A prometheus-client collector over a fleet store; register it in a ``CollectorRegistry``.

    ``clock`` gives unix seconds (for the staleness cut-off ``max_age_s``).
    """

    def __init__(self, reader: StoreReader, *, max_age_s: float = DEFAULT_MAX_AGE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._reader = reader
        self._max_age_s = max_age_s
        self._now = clock

    def collect(self) -> Iterator[Metric]:
        reader = self._reader
        jobs: dict[str, set[str]] = {}
        tenants: dict[str, set[str]] = {}
        for job in reader.jobs():
            for node in job.nodes:
                jobs.setdefault(node, set()).add(job.job_id)
                if job.account:
                    tenants.setdefault(node, set()).add(job.account)
        job_of = {node: ",".join(sorted(ids)) for node, ids in jobs.items()}
        tenant_of = {node: ",".join(sorted(names)) for node, names in tenants.items()}

        up = GaugeMetricFamily("fleet_host_up", HOST_UP_HELP, labels=("node", "state"))
        for host, status in sorted(reader.host_statuses().items()):
            up.add_metric((host, status.state.value), 0.0 if status.state.is_failure else 1.0)
        yield up

        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}
        oldest = self._now() - self._max_age_s
        arrays = reader.latest_arrays()
        names = arrays.names
        for sid, ts, value in zip(arrays.sids.tolist(), arrays.ts.tolist(), arrays.values.tolist(),
                                  strict=True):
            name = names[sid]
            if name is None:
                continue
            host, metric, device, port = name
            entry = EXPORTED.get(metric)
            if entry is None or (ts < oldest and METRICS[metric].kind is not MetricKind.ERROR):
                continue
            family = families.get(metric)
            if family is None:
                kind = CounterMetricFamily if entry.counter else GaugeMetricFamily
                family = families[metric] = kind(entry.family, entry.help, labels=entry.labels)
            family.add_metric(_label_values(entry, host, device, port, job_of, tenant_of), value)
        yield from (families[name] for name in sorted(families))


def _label_values(entry: ExportedMetric, host: str, device: str, port: str,
                  job_of: dict[str, str], tenant_of: dict[str, str]) -> tuple[str, ...]:
    job, tenant = job_of.get(host, ""), tenant_of.get(host, "")
    labels = entry.labels
    if labels[1] == "device":
        return host, device, port, job, tenant
    if labels[1] == "gpu":
        return host, device.removeprefix("gpu"), job, tenant
    if labels[1] == "port":  # switch: the store files the switch port as the device
        return host, device
    return host, job, tenant


@dataclass(frozen=True, slots=True)
class MetricsServer:
    """A running scrape endpoint; ``port`` is the bound one (useful after asking for port 0)."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(reader: StoreReader, host: str, port: int, *,
                  max_age_s: float = DEFAULT_MAX_AGE_S) -> MetricsServer:
    """Serve ``/metrics`` on ``host:port`` from a daemon thread until ``close()``.

    prometheus-client picks the format from the scraper's ``Accept`` header:
    OpenMetrics for ``application/openmetrics-text`` (what Prometheus asks for),
    the 0.0.4 text format otherwise.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreMetrics(reader, max_age_s=max_age_s))
    server, thread = start_http_server(port, addr=host, registry=registry)
    return MetricsServer(server, thread)
