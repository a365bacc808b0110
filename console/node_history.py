"""One node read from the store for the Node screen: all its values, and its last hour.

Runs on the reader thread. Throughput and pauses are summed over the node's
NICs; latency comes from the store's probes where the node was either end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fleet.console.widgets.plot import PlotData, PlotSeries
from fleet.fabric.samples import SeriesKey

HISTORY_S = 3600.0
PLOT_POINTS = 240
"""Points per plotted series: twice the columns of a wide plot. plotext's cost grows with the
points (3,600 raw points: ~86 ms a figure, 240: ~8 ms, on a 2-core machine)."""


class SeriesLike(Protocol):
    @property
    def ts(self) -> list[float]: ...
    @property
    def avg(self) -> list[float]: ...


class HistoryReading(Protocol):
    def latest(self, hosts: Sequence[str] | None = None,
               metrics: Sequence[str] | None = None) -> Sequence[tuple[str, str, str, str, float, float]]: ...
    def as_of(self, ts: float, hosts: Sequence[str] | None = None,
              metrics: Sequence[str] | None = None) -> Sequence[tuple[str, str, str, str, float, float]]: ...
    def series(self, host: str, metric: str, device: str = "", port: str = "", *,
               start: float, end: float, resolution: str = "auto") -> SeriesLike: ...
    def probes(self, kind: str | None = None, since: float | None = None, until: float | None = None,
               host: str | None = None, job: str | None = None, run_id: str | None = None,
               limit: int = 1000) -> Sequence[Any]: ...


@dataclass(frozen=True, slots=True)
class NodeHistory:
    moment_ts: float
    throughput: PlotData
    pauses: PlotData
    latency: PlotData


def load_values(reader: HistoryReading, host: str, moment_ts: float, live: bool) -> dict[SeriesKey, float]:
    """Every value of one node at the moment shown (the fleet read keeps only what the fleet
    table needs)."""
    points = reader.latest(hosts=[host]) if live else reader.as_of(moment_ts, hosts=[host])
    return {(metric, device, port): value for _h, metric, device, port, _ts, value in points}


def _summed(reader: HistoryReading, host: str, metric: str, ports: Sequence[tuple[str, str]],
            start: float, end: float) -> PlotSeries | None:
    totals: dict[float, float] = {}
    for device, port in ports:
        data = reader.series(host, metric, device, port, start=start, end=end)
        for ts, value in zip(data.ts, data.avg, strict=False):
            totals[ts] = totals.get(ts, 0.0) + value
    if not totals:
        return None
    times = sorted(totals)
    return thin(PlotSeries(metric, tuple((ts - end) / 60.0 for ts in times),
                           tuple(totals[ts] for ts in times)))


def thin(series: PlotSeries, points: int = PLOT_POINTS) -> PlotSeries:
    """At most ``points`` points: the mean of each run of consecutive points (a plot cell is
    wider than one sample anyway)."""
    n = len(series.x)
    if n <= points:
        return series
    xs, ys = [], []
    for k in range(points):
        lo, hi = k * n // points, (k + 1) * n // points
        xs.append(sum(series.x[lo:hi]) / (hi - lo))
        ys.append(sum(series.y[lo:hi]) / (hi - lo))
    return PlotSeries(series.label, tuple(xs), tuple(ys))


def _labelled(series: PlotSeries | None, label: str) -> tuple[PlotSeries, ...]:
    return () if series is None else (PlotSeries(label, series.x, series.y),)


def load_history(reader: HistoryReading, host: str, ports: Sequence[tuple[str, str]],
                 moment_ts: float) -> NodeHistory:
    start, end = moment_ts - HISTORY_S, moment_ts
    rx = _summed(reader, host, "rx_gbps", ports, start, end)
    tx = _summed(reader, host, "tx_gbps", ports, start, end)
    prx = _summed(reader, host, "rx_pause_per_s", ports, start, end)
    ptx = _summed(reader, host, "tx_pause_per_s", ports, start, end)
    probes = sorted(reader.probes(kind="lat", since=start, until=end, host=host),
                    key=lambda p: p.ts)
    p50 = [(p.ts, p.result.get("t_typical_usec")) for p in probes if p.ok]
    p99 = [(p.ts, p.result.get("p99_usec")) for p in probes if p.ok]
    latency: list[PlotSeries] = []
    for label, points in (("typical", p50), ("p99", p99)):
        kept = [(ts, float(v)) for ts, v in points if isinstance(v, int | float)]
        if kept:
            latency.append(PlotSeries(label, tuple((ts - end) / 60.0 for ts, _ in kept),
                                      tuple(v for _, v in kept)))
    return NodeHistory(
        moment_ts=moment_ts,
        throughput=PlotData("throughput", "Gb/s", _labelled(rx, "rx") + _labelled(tx, "tx")),
        pauses=PlotData("PFC pauses", "frames/s",
                        _labelled(prx, "received") + _labelled(ptx, "sent")),
        latency=PlotData("probe latency", "usec", tuple(latency),
                         empty="no latency probe to or from this node in the hour (t runs one)"),
    )
