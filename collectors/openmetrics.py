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
``port`` (HCA port, switch port, or optics lane ``L<n>``), ``gpu`` (index).
Every sample carries the time the collector read it (the store's timestamp),
so Prometheus holds the collector's own times, whatever its scrape interval;
an error counter (stored only when it changes) carries its host's newest
reading time, since it held its value then. The host states, the inventory,
the cabling and the Slurm jobs are families of their own
(``fleet.collectors.openmetrics_records``).
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

from fleet.collectors.openmetrics_records import RECORD_FAMILIES, render_records
from fleet.collectors.openmetrics_text import header, label_text, timestamp_text
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
    "nic": ("node", "device", "port"),
    "optics": ("node", "device", "port"),
    "gpu": ("node", "gpu"),
    "switch": ("node", "port"),
    "host": ("node",),
}


def exported(spec: MetricSpec) -> ExportedMetric:
    """The exported name, type and labels of one catalogue entry."""
    scope, rest = _scope(spec.name)
    suffix = UNIT_SUFFIX.get(spec.unit, "")
    if suffix and suffix not in rest.split("_") and not rest.endswith("_" + suffix):
        rest = f"{rest}_{suffix}"
    counter = spec.kind is not MetricKind.GAUGE
    return ExportedMetric(spec.name, f"fleet_{scope}_{rest}".lower(), counter, _LABELS[scope],
                          f"{spec.help} ({spec.unit}; fleet metric {spec.name})")


EXPORTED: dict[str, ExportedMetric] = {
    name: exported(spec) for name, spec in METRICS.items() if name != STATUS_METRIC
}
"""Every sample metric of the catalogue, by its ``fleet.fabric.samples`` name."""



def metrics_table() -> str:
    """docs/metrics.md: the exported families, generated from the catalogue (a test keeps it current)."""
    lines = [
        "# Exported metrics",
        "",
        "`fleet export --listen ADDR` serves these in the OpenMetrics text format",
        "(or the Prometheus 0.0.4 text format when the scraper does not ask for",
        "OpenMetrics). Generated from `fleet.fabric.samples.METRICS` and",
        "`fleet.collectors.openmetrics_records` by",
        "`fleet.collectors.openmetrics.metrics_table()`; `tests/collectors/test_openmetrics.py`",
        "fails when this file is stale.",
        "",
        "Labels: `node` (host or switch), `device` (RDMA device), `port` (HCA port,",
        "switch port, or optics lane `L<n>`), `gpu` (index). Counters end in `_total`;",
        "units are in the names. Prometheus adds its own `job` and `instance` labels",
        "(the scrape job and the shard's address), which is why Slurm jobs are",
        "`slurm_job`.",
        "",
        "Samples carry the time the collector read them, so Prometheus holds the",
        "collector's times whatever its scrape interval; an error counter, stored",
        "only when it changes, carries its host's newest reading time. Gauges and",
        "counters not read for `--max-age` seconds (600 by default) are no longer",
        "served.",
        "",
        "## The fleet's records",
        "",
        "Host states, the inventory, the cabling and the Slurm jobs, served at scrape",
        "time: what the console needs to draw its screens from Prometheus",
        "(docs/scale-out.md). Jobs are not labels on every series: join on `node`,",
        "e.g. `avg by (slurm_job) (fleet_slurm_job_node_info * on(node) group_left()",
        "avg by (node) (fleet_gpu_util_pct))`.",
        "",
        "| Name | Type | Labels | Meaning |",
        "|---|---|---|---|",
    ]
    for record in RECORD_FAMILIES:
        lines.append(f"| `{record.sample_name}` | {record.kind} | {', '.join(record.labels)} | {record.help} |")
    lines += [
        "",
        "## Samples",
        "",
        "| Name | Type | Labels | Meaning |",
        "|---|---|---|---|",
    ]
    for entry in EXPORTED.values():
        kind = "counter" if entry.counter else "gauge"
        lines.append(f"| `{entry.sample_name}` | {kind} | {', '.join(entry.labels)} | {entry.help} |")
    return "\n".join(lines) + "\n"


def _label_values(entry: ExportedMetric, host: str, device: str, port: str) -> dict[str, str]:
    labels = entry.labels
    if len(labels) == 1:
        return {"node": host}
    if labels[1] == "device":
        return {"node": host, "device": device, "port": port}
    if labels[1] == "gpu":
        return {"node": host, "gpu": device.removeprefix("gpu")}
    return {"node": host, "port": device}  # switch: the store files the switch port as the device


FAMILIES: list[str] = sorted(EXPORTED)
"""Families are served sorted by their catalogue name, each once, in this order."""
FAMILY_ORDER: dict[str, int] = {metric: rank for rank, metric in enumerate(FAMILIES)}


@dataclass(frozen=True, slots=True)
class _SeriesText:
    """Per series id: its family's rank (-1: not exported), whether it is an error counter
    (served however old), its host's number, and its sample line up to the value."""

    family: npt.NDArray[np.int64]
    error: npt.NDArray[np.bool_]
    host: npt.NDArray[np.int64]
    hosts: int
    prefix: list[str]


class StoreMetrics:
    """The store's latest values and records in the two text formats Prometheus scrapes.

    Written here rather than through prometheus-client's ``Metric`` families: at
    1,024 nodes a scrape is ~786k samples, and the library builds, sorts and
    escapes labels per sample on every scrape (15.8 CPU-s). Here a series' line
    up to its value is built once and kept until the catalogue grows; a scrape
    only filters, orders and formats values and times. The bytes are the
    library's own output for the same families (a test compares them).
    ``clock`` gives unix seconds (the ``max_age_s`` cut-off, the per-job latency window).
    """

    def __init__(self, reader: StoreReader, *, max_age_s: float = DEFAULT_MAX_AGE_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._reader = reader
        self._max_age_s = max_age_s
        self._now = clock
        self._lock = threading.Lock()
        self._series: _SeriesText | None = None

    def render(self, openmetrics: bool) -> str:
        """One scrape: OpenMetrics 1.0 text (ends with ``# EOF``) or the Prometheus 0.0.4 text format."""
        with self._lock:  # the server is threaded; the reader and the cache are not shared safely
            return self._render(openmetrics)

    def _render(self, openmetrics: bool) -> str:
        reader = self._reader
        now = self._now()
        out = render_records(reader, now, openmetrics)
        arrays = reader.latest_arrays()
        series = self._series_text(arrays.names)
        sids = arrays.sids
        family = series.family[sids]
        error = series.error[sids]
        keep = (family >= 0) & ((arrays.ts >= now - self._max_age_s) | error)
        kept = np.flatnonzero(keep)
        kept = kept[np.argsort(family[kept], kind="stable")]
        ranks = family[kept].tolist()
        stamps, stamp_of = np.unique(_reading_times(series, sids, arrays.ts, error)[kept], return_inverse=True)
        stamp_text = [timestamp_text(ts, openmetrics) + "\n" for ts in stamps.tolist()]
        prefix = series.prefix
        go = floatToGoString
        lines = [prefix[sid] + go(value) + stamp_text[at]
                 for sid, value, at in zip(sids[kept].tolist(), arrays.values[kept].tolist(), stamp_of.tolist(),
                                           strict=True)]
        start = 0
        while start < len(lines):
            rank = ranks[start]
            end = bisect.bisect_right(ranks, rank, lo=start)
            entry = EXPORTED[FAMILIES[rank]]
            out.append(header(entry.family, "counter" if entry.counter else "gauge", entry.help, openmetrics))
            out.extend(lines[start:end])
            start = end
        if openmetrics:
            out.append("# EOF\n")
        return "".join(out)

    def _series_text(self, names: Sequence[SeriesName | None]) -> _SeriesText:
        """The per-series cache, rebuilt when series were added (the reader's table only grows)."""
        if self._series is not None and len(self._series.prefix) == len(names):
            return self._series
        family = np.full(len(names), -1, dtype=np.int64)
        error = np.zeros(len(names), dtype=np.bool_)
        host_of = np.zeros(len(names), dtype=np.int64)
        numbers: dict[str, int] = {}
        prefix = [""] * len(names)
        for sid, name in enumerate(names):
            if name is None:
                continue
            host, metric, device, port = name
            host_of[sid] = numbers.setdefault(host, len(numbers))
            entry = EXPORTED.get(metric)
            if entry is None:
                continue
            family[sid] = FAMILY_ORDER[metric]
            error[sid] = METRICS[metric].kind is MetricKind.ERROR
            prefix[sid] = f"{entry.sample_name}{label_text(_label_values(entry, host, device, port))} "
        self._series = _SeriesText(family, error, host_of, len(numbers), prefix)
        return self._series


def _reading_times(series: _SeriesText, sids: npt.NDArray[np.int64], ts: npt.NDArray[np.float64],
                   error: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """Each point's timestamp for the scrape: its own, or for an error counter its host's newest reading
    (the counter is stored only when it changes, and it held its value at every reading since)."""
    if not error.any():
        return ts
    hosts = series.host[sids]
    newest = np.full(series.hosts, -np.inf)
    np.maximum.at(newest, hosts[~error], ts[~error])
    stamped = ts.copy()
    stamped[error] = np.maximum(ts[error], newest[hosts[error]])
    return stamped


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
