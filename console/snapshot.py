"""Read one moment of the fleet from the store: the console's only read path.

Live and replay differ in one line (``latest_arrays()`` or ``as_of_arrays(ts)``); everything
after it, and every screen, is the same code. Runs on a worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from fleet.fabric.events import Event
from fleet.fabric.health import ERROR_METRICS
from fleet.fabric.records import HostRecord, HostStatus, JobRecord, PortRecord
from fleet.fabric.samples import SeriesKey
from fleet.store.types import PointArrays

ERROR_WINDOW_S = 300.0
"""Error counters are shown as their rise over the last five minutes: long enough to catch a
slowly flapping link, short enough that a fixed cable turns green again soon."""

EVENTS_SHOWN = 500
BASELINE_REREAD_S = 30.0
"""The error baseline (the fleet ``ERROR_WINDOW_S`` ago) is a second whole-fleet read; redoing
it every 30 s instead of every refresh stretches the window by at most that much."""
PORTS_REREAD_S = 30.0
"""Cabling (LLDP peers) changes rarely; reading 8,000 port rows every second is waste."""


PointTuple = tuple[str, str, str, str, float, float]
"""(host, metric, device, port, ts, value): the shape of ``fleet.store.types.Point``."""


class StoreReading(Protocol):
    """The part of ``fleet.store.reader.StoreReader`` (docs/contracts.md) the console reads."""

    def latest(
        self, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None
    ) -> Sequence[PointTuple]: ...
    def as_of(
        self, ts: float, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None
    ) -> Sequence[PointTuple]: ...
    def latest_arrays(
        self, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None
    ) -> PointArrays: ...
    def as_of_arrays(
        self, ts: float, hosts: Sequence[str] | None = None, metrics: Sequence[str] | None = None
    ) -> PointArrays: ...
    def host_statuses(self, as_of: float | None = None) -> Mapping[str, HostStatus]: ...
    def hosts(self) -> Sequence[HostRecord]: ...
    def ports(self, host: str | None = None) -> Sequence[PortRecord]: ...
    def events(
        self,
        since: float | None = None,
        until: float | None = None,
        host: str | None = None,
        severity: str | None = None,
        kind: str | None = None,
        limit: int = 1000,
    ) -> Sequence[Event]: ...
    def jobs(self, as_of: float | None = None) -> Sequence[JobRecord]: ...
    def time_span(self) -> tuple[float, float] | None: ...


HostValues = Mapping[str, Mapping[SeriesKey, float]]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The fleet at ``moment_ts`` (unix seconds) as the store knows it."""

    moment_ts: float
    live: bool
    hosts: tuple[HostRecord, ...]
    statuses: Mapping[str, HostStatus]
    values: HostValues
    """host -> (metric, device, port) -> value."""
    error_deltas: HostValues
    """host -> series -> rise of the error counter over ``ERROR_WINDOW_S``."""
    jobs: tuple[JobRecord, ...]
    events: tuple[Event, ...]
    """Newest first, up to the moment shown."""
    ports: tuple[PortRecord, ...]
    newest_sample_ts: float | None
    read_s: float = 0.0
    """Seconds the read took (the console shows it when it grows)."""
    node_names: tuple[str, ...] = field(default=())
    complete: bool = True
    """False for the quick first read that has states but no values yet."""


FLEET_METRICS: frozenset[str] = frozenset({
    "host_up", "port_state", "rate_gbps", "rx_gbps", "tx_gbps", "rx_pause_per_s", "tx_pause_per_s",
    "cnp_sent_per_s", "cnp_handled_per_s", "ecn_marked_per_s", "errors_per_s", "pre_fec_ber",
    "qp_count", "optics_rx_power_dbm", "gpu_util_pct", "gpu_temp_c", "gpu_xid_last",
    "sw_oper_up", "sw_util_pct", "sw_rx_gbps", "sw_tx_gbps", "sw_rx_pfc_pause",
}) | ERROR_METRICS
"""What the fleet-wide screens draw; the Node screen reads everything of its one node itself."""


FLEET_METRIC_NAMES: tuple[str, ...] = tuple(sorted(FLEET_METRICS))
ERROR_METRIC_NAMES: tuple[str, ...] = tuple(sorted(ERROR_METRICS))


def _group(arrays: PointArrays) -> tuple[dict[str, dict[SeriesKey, float]], float | None]:
    """Per host, (metric, device, port) -> value, and the newest sample time. The store has
    already filtered by metric (``metrics=``) and returns arrays: no ``Point`` per value, and
    only the series the fleet screens draw (synthetic 1,024-node fleet: 213k of 434k)."""
    grouped: dict[str, dict[SeriesKey, float]] = {}
    names = arrays.names
    for sid, value in zip(arrays.sids.tolist(), arrays.values.tolist(), strict=True):
        name = names[sid]
        assert name is not None  # the reader resolves every id it returns
        host, metric, device, port = name
        per_host = grouped.get(host)
        if per_host is None:
            per_host = grouped[host] = {}
        per_host[(metric, device, port)] = value
    return grouped, (float(arrays.ts.max()) if grouped else None)


def _deltas(
    now: Mapping[str, Mapping[SeriesKey, float]], before: Mapping[str, Mapping[SeriesKey, float]]
) -> dict[str, dict[SeriesKey, float]]:
    """Rise of each error counter over the window. A counter without an earlier value counts
    as not risen: the store may be younger than the window (``errors_per_s`` covers that)."""
    result: dict[str, dict[SeriesKey, float]] = {}
    for host, base in before.items():
        current = now.get(host)
        if current is None:
            continue
        for key, old in base.items():
            value = current.get(key)
            if value is not None and value > old:
                result.setdefault(host, {})[key] = value - old
    return result


def _node_names(hosts: Sequence[HostRecord], values: HostValues, statuses: Mapping[str, HostStatus]) -> tuple[str, ...]:
    """Nodes of the inventory; without an inventory in the store, every host that reports
    node metrics or a status and is not a switch."""
    nodes = {h.name for h in hosts if h.role == "node"}
    known = {h.name for h in hosts}
    for host, series in values.items():
        if host not in known and not any(key[0].startswith("sw_") for key in series):
            nodes.add(host)
    nodes.update(h for h in statuses if h not in known and h not in values)
    return tuple(sorted(nodes))


class SnapshotLoader:
    """Reads snapshots; keeps the rarely changing port list between reads."""

    def __init__(self, reader: StoreReading) -> None:
        self._reader = reader
        self._ports: tuple[PortRecord, ...] = ()
        self._ports_read_at: float | None = None
        self._baseline: dict[str, dict[SeriesKey, float]] = {}
        self._baseline_for: float | None = None

    @property
    def reader(self) -> StoreReading:
        return self._reader

    def _error_baseline(self, moment: float) -> dict[str, dict[SeriesKey, float]]:
        """Error counters as they were ``ERROR_WINDOW_S`` before ``moment``, or when the store began
        if it is younger than that: a counter rising since the first minute shows its rise in
        ``err Δ5m`` at once, as the reasons line shows its rate."""
        span = self._reader.time_span()
        if span is None:
            return {}
        then = max(moment - ERROR_WINDOW_S, span[0])
        if self._baseline_for is not None and abs(then - self._baseline_for) < BASELINE_REREAD_S:
            return self._baseline
        baseline, _ = _group(self._reader.as_of_arrays(then, metrics=ERROR_METRIC_NAMES))
        self._baseline, self._baseline_for = baseline, then
        return baseline

    def load(self, cursor_ts: float | None, now_ts: float, clock: float, *,
             with_values: bool = True) -> Snapshot:
        """The fleet now (``cursor_ts`` None) or at ``cursor_ts``. ``clock``: a monotonic
        reading, only to time the read and pace the port reread. ``with_values`` False reads
        only the inventory, states and jobs: a first frame in milliseconds on a large store."""
        started = time.perf_counter()
        live = cursor_ts is None
        moment = now_ts if cursor_ts is None else cursor_ts
        reader = self._reader
        values: dict[str, dict[SeriesKey, float]] = {}
        deltas: dict[str, dict[SeriesKey, float]] = {}
        newest: float | None = None
        if with_values:
            values, newest = _group(reader.latest_arrays(metrics=FLEET_METRIC_NAMES) if live
                                    else reader.as_of_arrays(moment, metrics=FLEET_METRIC_NAMES))
            deltas = _deltas(values, self._error_baseline(moment))
        statuses = dict(reader.host_statuses(as_of=None if live else moment))
        hosts = tuple(reader.hosts())
        if self._ports_read_at is None or clock - self._ports_read_at >= PORTS_REREAD_S:
            self._ports = tuple(reader.ports())
            self._ports_read_at = clock
        return Snapshot(
            moment_ts=moment,
            live=live,
            hosts=hosts,
            statuses=statuses,
            values=values,
            error_deltas=deltas,
            jobs=tuple(reader.jobs(as_of=None if live else moment)),
            events=tuple(reader.events(until=moment, limit=EVENTS_SHOWN)),
            ports=self._ports,
            newest_sample_ts=newest,
            read_s=time.perf_counter() - started,
            node_names=_node_names(hosts, values, statuses),
            complete=with_values,
        )
