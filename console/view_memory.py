"""What the Fleet table remembers from one view to the next: each node's last minutes (the
sparklines) and its worst NIC, held steady (hysteresis).

``build_view`` is pure: it sees one moment. A sparkline needs the moments before it, and a
worst NIC picked afresh every second jumps between NICs that are within a few Gb/s of each
other. ``ViewMemory`` is owned by the ``Feed`` and runs on its reader thread after each
view is built: it records the rows, fills missing minutes from the store (one read per
view at most, so a large store never delays a refresh by more than one ``as_of``), and
returns the view with the trends and the steadied worst NICs in its rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from fleet.console.view_model import ConsoleView, NodeRow
from fleet.fabric.health import NodeHealth
from fleet.fabric.samples import SeriesKey
from fleet.store.types import PointArrays

BUCKET_S = 30.0
"""One sparkline bar: the node's newest value in 30 s of the moment shown."""
POINTS = 10
"""Bars per sparkline: the last five minutes."""
BUSIEST_MARGIN = 0.2
"""On a node without problems the worst NIC shown is the busiest; another NIC takes its place
only once it moves 20 % more traffic: NICs of one job run within a few percent of each other."""
TREND_METRICS = ("rx_gbps", "rx_pause_per_s", "tx_pause_per_s")


class TrendReading(Protocol):
    """The part of ``fleet.store.reader.StoreReader`` a backfill reads."""

    def as_of_arrays(self, ts: float, hosts: Sequence[str] | None = None,
                     metrics: Sequence[str] | None = None) -> PointArrays: ...
    def time_span(self) -> tuple[float, float] | None: ...


def _bucket(ts: float) -> int:
    return math.floor(ts / BUCKET_S)


class TrendBook:
    """Per node, (rx Gb/s, PFC pauses/s) per 30 s bucket over the last ``POINTS`` buckets."""

    def __init__(self) -> None:
        self._values: dict[int, dict[str, tuple[float | None, float | None]]] = {}
        """bucket -> node -> (rx, pauses)."""
        self._filled: set[int] = set()
        """Buckets already read from the store (or found empty there)."""

    def record(self, moment_ts: float, rows: Sequence[NodeRow]) -> None:
        bucket = _bucket(moment_ts)
        self._keep(bucket)
        self._values[bucket] = {r.name: (r.rx_gbps, r.pause_per_s) for r in rows}

    def _keep(self, bucket: int) -> None:
        """Forget buckets outside the window that ends at ``bucket`` (replay may move either way)."""
        low = bucket - POINTS + 1
        for old in [b for b in self._values if not low <= b <= bucket]:
            del self._values[old]
        self._filled = {b for b in self._filled if low <= b <= bucket}

    def backfill_one(self, reader: TrendReading, moment_ts: float) -> bool:
        """Read the newest bucket of the window that has no values yet from the store; True when
        no bucket is left to read."""
        bucket = _bucket(moment_ts)
        span = reader.time_span()
        if span is None:
            return True
        for missing in range(bucket - 1, bucket - POINTS, -1):
            if missing in self._values or missing in self._filled:
                continue
            self._filled.add(missing)
            end = (missing + 1) * BUCKET_S
            if end < span[0]:
                self._filled.update(range(bucket - POINTS + 1, missing))
                return True  # older than the store: nothing to read, here or before
            self._values[missing] = _read_bucket(reader, min(end, moment_ts))
            return False
        return True

    def trends(self, name: str, moment_ts: float) -> tuple[tuple[float | None, ...], tuple[float | None, ...]]:
        """(rx, pauses) of ``name`` per bucket, oldest first, None where unknown."""
        bucket = _bucket(moment_ts)
        rx: list[float | None] = []
        pauses: list[float | None] = []
        for b in range(bucket - POINTS + 1, bucket + 1):
            value = self._values.get(b, {}).get(name)
            rx.append(value[0] if value else None)
            pauses.append(value[1] if value else None)
        while rx and rx[0] is None and pauses[0] is None:  # before the first value: no bar at all
            rx.pop(0)
            pauses.pop(0)
        return tuple(rx), tuple(pauses)


def _read_bucket(reader: TrendReading, ts: float) -> dict[str, tuple[float | None, float | None]]:
    """Per node, the summed rx and pauses at ``ts`` from the store."""
    arrays = reader.as_of_arrays(ts, metrics=TREND_METRICS)
    rx: dict[str, float] = {}
    pauses: dict[str, float] = {}
    names = arrays.names
    for sid, value in zip(arrays.sids.tolist(), arrays.values.tolist(), strict=True):
        name = names[sid]
        if name is None or not np.isfinite(value):
            continue
        host, metric = name[0], name[1]
        target = rx if metric == "rx_gbps" else pauses
        target[host] = target.get(host, 0.0) + value
    return {host: (rx.get(host), pauses.get(host)) for host in set(rx) | set(pauses)}


class WorstNicKeeper:
    """The worst NIC shown per node, changed only for a clearly worse one (see module doc)."""

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}

    def pick(self, name: str, health: NodeHealth | None, values: Mapping[SeriesKey, float]) -> str:
        candidate = health.worst_nic if health is not None else ""
        previous = self._shown.get(name)
        chosen = candidate
        if previous and candidate and previous != candidate and health is not None:
            problems = health.nic_problems
            if problems:
                if len(problems.get(previous, ())) >= len(problems.get(candidate, ())):
                    chosen = previous
            else:
                traffic = _traffic(values)
                if traffic.get(candidate, 0.0) <= (1.0 + BUSIEST_MARGIN) * traffic.get(previous, -1.0):
                    chosen = previous
        if chosen:
            self._shown[name] = chosen
        return chosen


def _traffic(values: Mapping[SeriesKey, float]) -> dict[str, float]:
    """rx + tx Gb/s per NIC of one node."""
    traffic: dict[str, float] = {}
    for (metric, device, _port), value in values.items():
        if metric in ("rx_gbps", "tx_gbps") and math.isfinite(value):
            traffic[device] = traffic.get(device, 0.0) + value
    return traffic


class ViewMemory:
    """The Fleet table's memory across views; one per ``Feed``, used on its reader thread."""

    def __init__(self) -> None:
        self.trends = TrendBook()
        self.worst = WorstNicKeeper()

    def apply(self, view: ConsoleView, reader: TrendReading) -> ConsoleView:
        """``view`` with each row's trends and steady worst NIC."""
        snapshot = view.snapshot
        if not snapshot.complete:
            return view
        moment = snapshot.moment_ts
        self.trends.record(moment, view.rows)
        filled = self.trends.backfill_one(reader, moment)
        rows = []
        for row in view.rows:
            rx, pauses = self.trends.trends(row.name, moment)
            worst = self.worst.pick(row.name, view.healths.get(row.name), snapshot.values.get(row.name, {}))
            rows.append(dataclasses.replace(row, rx_trend=rx, pause_trend=pauses, worst_nic=worst))
        return dataclasses.replace(view, rows=tuple(rows), trends_filled=filled)
