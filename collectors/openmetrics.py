"""The store's latest values as OpenMetrics families, for an existing Prometheus to scrape.

Read-only: on every scrape it reads the newest value of each series and each
host's collection state through ``fleet.store.reader.StoreReader`` (so it serves
whatever ``fleet collect`` or the console's collector writes, from the same
process or another one), and writes the text itself, in prometheus-client's
exact bytes (see ``StoreMetrics`` for why not through the library).

Names (docs/metrics.md lists every one, generated from ``fleet.fabric.samples.METRICS``):
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

import bisect
import gzip
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import numpy as np
import numpy.typing as npt
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder, gzip_accepted
from prometheus_client.utils import floatToGoString

from fleet.fabric.samples import METRICS, MetricKind, MetricSpec
from fleet.store.reader import StoreReader
from fleet.store.types import SeriesName

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

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
"""Every sample metric of the catalogue, by its ``fleet.fabric.samples`` name."""

HOST_UP_HELP = "1 when the host's last collection succeeded (ok or slow); state: its collection state"


def metrics_table() -> str:
    """docs/metrics.md: the exported families, generated from the catalogue (a test keeps it current)."""
    lines = [
        "# Exported metrics",
        "",
        "`fleet export --listen ADDR` serves these in the OpenMetrics text format",
        "(or the Prometheus 0.0.4 text format when the scraper does not ask for",
        "OpenMetrics). Generated from `fleet.fabric.samples.METRICS` by",
        "`fleet.collectors.openmetrics.metrics_table()`; `tests/collectors/test_openmetrics.py`",
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


def _escaped(value: str) -> str:
    """A label value or HELP text as both text formats escape it (backslash, newline, quote)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def _label_values(entry: ExportedMetric, host: str, device: str, port: str,
                  job: str, tenant: str) -> dict[str, str]:
    labels = entry.labels
    if labels[1] == "device":
        return {"node": host, "device": device, "port": port, "job": job, "tenant": tenant}
    if labels[1] == "gpu":
        return {"node": host, "gpu": device.removeprefix("gpu"), "job": job, "tenant": tenant}
    if labels[1] == "port":  # switch: the store files the switch port as the device
        return {"node": host, "port": device}
    return {"node": host, "job": job, "tenant": tenant}


def _label_text(labels: dict[str, str]) -> str:
    """``{a="x",b="y"}`` with names sorted, as prometheus-client writes them (scrapes diff cleanly)."""
    return "{" + ",".join(f'{name}="{_escaped(value)}"' for name, value in sorted(labels.items())) + "}"


FAMILIES: list[str] = sorted(EXPORTED)
"""Families are served sorted by their catalogue name, each once, in this order."""
FAMILY_ORDER: dict[str, int] = {metric: rank for rank, metric in enumerate(FAMILIES)}


@dataclass(frozen=True, slots=True)
class _SeriesText:
    """Per series id: its family's rank (-1: not exported), whether it is an error counter
    (served however old), and its sample line up to the value."""

    family: npt.NDArray[np.int64]
    error: npt.NDArray[np.bool_]
    prefix: list[str]


class StoreMetrics:
    """The store's latest values in the two text formats Prometheus scrapes.

    Written here rather than through prometheus-client's ``Metric`` families: at
    1,024 nodes a scrape is ~786k samples, and the library builds, sorts and
    escapes labels per sample on every scrape (15.8 CPU-s). Here a series' line
    up to its value is built once and kept until the catalogue grows or the
    jobs on a node change; a scrape only filters, orders and formats values.
    The bytes are the library's own output for the same families (a test
    compares them). ``clock`` gives unix seconds (for the ``max_age_s`` cut-off).
    """

    def __init__(self, reader: StoreReader, *, max_age_s: float = DEFAULT_MAX_AGE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._reader = reader
        self._max_age_s = max_age_s
        self._now = clock
        self._lock = threading.Lock()
        self._series: _SeriesText | None = None
        self._series_key: tuple[int, tuple[tuple[str, str, str], ...]] | None = None

    def render(self, openmetrics: bool) -> str:
        """One scrape: OpenMetrics 1.0 text (ends with ``# EOF``) or the Prometheus 0.0.4 text format."""
        with self._lock:  # the server is threaded; the reader and the cache are not shared safely
            return self._render(openmetrics)

    def _render(self, openmetrics: bool) -> str:
        reader = self._reader
        job_of, tenant_of = _jobs_by_node(reader)
        out = [_header("fleet_host_up", "gauge", HOST_UP_HELP, openmetrics)]
        for host, status in sorted(reader.host_statuses().items()):
            value = "0.0" if status.state.is_failure else "1.0"
            out.append(f"fleet_host_up{_label_text({'node': host, 'state': status.state.value})} {value}\n")

        arrays = reader.latest_arrays()
        series = self._series_text(arrays.names, job_of, tenant_of)
        sids = arrays.sids
        family = series.family[sids]
        keep = (family >= 0) & ((arrays.ts >= self._now() - self._max_age_s) | series.error[sids])
        kept = np.flatnonzero(keep)
        kept = kept[np.argsort(family[kept], kind="stable")]
        ranks = family[kept].tolist()
        prefix = series.prefix
        go = floatToGoString
        lines = [prefix[sid] + go(value) + "\n"
                 for sid, value in zip(sids[kept].tolist(), arrays.values[kept].tolist(), strict=True)]
        start = 0
        while start < len(lines):
            rank = ranks[start]
            end = bisect.bisect_right(ranks, rank, lo=start)
            entry = EXPORTED[FAMILIES[rank]]
            out.append(_header(entry.family, "counter" if entry.counter else "gauge", entry.help, openmetrics))
            out.extend(lines[start:end])
            start = end
        if openmetrics:
            out.append("# EOF\n")
        return "".join(out)

    def _series_text(self, names: Sequence[SeriesName | None], job_of: dict[str, str],
                     tenant_of: dict[str, str]) -> _SeriesText:
        """The per-series cache, rebuilt when series were added or a node's jobs changed."""
        key = (len(names), tuple(sorted((node, job_of.get(node, ""), tenant_of.get(node, ""))
                                        for node in {*job_of, *tenant_of})))
        if self._series is not None and key == self._series_key:
            return self._series
        family = np.full(len(names), -1, dtype=np.int64)
        error = np.zeros(len(names), dtype=np.bool_)
        prefix = [""] * len(names)
        for sid, name in enumerate(names):
            if name is None:
                continue
            host, metric, device, port = name
            entry = EXPORTED.get(metric)
            if entry is None:
                continue
            family[sid] = FAMILY_ORDER[metric]
            error[sid] = METRICS[metric].kind is MetricKind.ERROR
            labels = _label_values(entry, host, device, port, job_of.get(host, ""), tenant_of.get(host, ""))
            prefix[sid] = f"{entry.sample_name}{_label_text(labels)} "
        self._series, self._series_key = _SeriesText(family, error, prefix), key
        return self._series


def _jobs_by_node(reader: StoreReader) -> tuple[dict[str, str], dict[str, str]]:
    """node -> its Slurm job ids, and -> their accounts, each comma separated and sorted."""
    jobs: dict[str, set[str]] = {}
    tenants: dict[str, set[str]] = {}
    for job in reader.jobs():
        for node in job.nodes:
            jobs.setdefault(node, set()).add(job.job_id)
            if job.account:
                tenants.setdefault(node, set()).add(job.account)
    return ({node: ",".join(sorted(ids)) for node, ids in jobs.items()},
            {node: ",".join(sorted(names)) for node, names in tenants.items()})


def _header(family: str, kind: str, help_text: str, openmetrics: bool) -> str:
    """HELP and TYPE lines; in the 0.0.4 format a counter family is named with its ``_total``."""
    if openmetrics:
        return f"# HELP {family} {_escaped(help_text)}\n# TYPE {family} {kind}\n"
    name = family + "_total" if kind == "counter" else family
    shown = help_text.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {shown}\n# TYPE {name} {kind}\n"


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


def metrics_app(metrics: StoreMetrics) -> WSGIApplication:
    """``/metrics`` (any path, as prometheus-client serves it): the format and its Content-Type as the
    library negotiates them from ``Accept`` (OpenMetrics for ``application/openmetrics-text`` of
    version 1.0.0 or later, or none: what Prometheus asks for; else the 0.0.4 text), gzip when accepted."""

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        _, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        body = metrics.render(content_type.startswith("application/openmetrics-text")).encode("utf-8")
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING", "")):
            body = gzip.compress(body, compresslevel=GZIP_LEVEL)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body]

    return app


GZIP_LEVEL = 1
"""Fastest: a 1,024-node scrape is tens of MB of very repetitive text, which level 1 already
shrinks about 10x; higher levels cost several times the CPU for a few percent more."""


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Scrapes every few seconds are not news; errors still reach the scraper as HTTP statuses."""


def serve_metrics(reader: StoreReader, host: str, port: int, *,
                  max_age_s: float = DEFAULT_MAX_AGE_S) -> MetricsServer:
    """Serve ``/metrics`` on ``host:port`` (IPv4 or IPv6) from a daemon thread until ``close()``."""
    family, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][::4]

    class Server(ThreadingWSGIServer):
        address_family = family

    server = make_server(str(sockaddr[0]), port, metrics_app(StoreMetrics(reader, max_age_s=max_age_s)), Server,
                         handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="fleet-export", daemon=True)
    thread.start()
    return MetricsServer(server, thread)
