"""Series ids: the writer's map from (host, metric, device, port) to ids, and per-host last values.

Loaded from the database when the writer (re)opens it, so that after a failed
commit it can be thrown away and rebuilt from what is really on disk.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from fabric.samples import METRICS, MetricKind, SeriesKey
from store.codec import F64, I64, decode_frame

NO_TS = np.int64(-1)


def metric_kind(metric: str) -> MetricKind:
    """The kind of ``metric``; names missing from the catalogue are kept as gauges."""
    spec = METRICS.get(metric)
    return spec.kind if spec is not None else MetricKind.GAUGE


class Layout:
    """The columns of one sample's keys (in the sample's order), and what writing them needs."""

    __slots__ = ("cols", "errors", "frame_order", "frame_sids", "keys")

    def __init__(self, keys: tuple[SeriesKey, ...], cols: I64, is_error: npt.NDArray[np.bool_], sids: I64) -> None:
        self.keys = keys
        self.cols = cols
        self.errors = is_error[cols]
        kept = np.flatnonzero(~self.errors)
        order = kept[np.argsort(sids[cols[kept]], kind="stable")]
        self.frame_order = order
        """Positions of the non-error values, by series id: a frame is ``values[frame_order]``."""
        self.frame_sids = sids[cols[order]].astype(np.int32).tobytes()


class HostSeries:
    """The series of one host: column per series, with its id and newest value."""

    def __init__(self) -> None:
        self.index: dict[SeriesKey, int] = {}
        self.sids: I64 = np.zeros(0, dtype=np.int64)
        self.is_error = np.zeros(0, dtype=np.bool_)
        self.values: F64 = np.zeros(0, dtype=np.float64)
        self.ts_ms: I64 = np.zeros(0, dtype=np.int64)
        self.dirty = False
        self.layouts: dict[int, Layout] = {}
        """By number of keys, where the keys of this host's last such sample live: the next sample
        with the same keys in the same order (an agent stream's usual case: its counters, its rates,
        its lines with optics) skips the per-key lookups."""

    def add(self, keys: list[SeriesKey], sids: list[int], kinds: list[MetricKind]) -> list[int]:
        """New series, appended in one step (a new host brings hundreds); returns their columns."""
        first = len(self.sids)
        for offset, key in enumerate(keys):
            self.index[key] = first + offset
        n = len(keys)
        self.sids = np.concatenate([self.sids, np.array(sids, dtype=np.int64)])
        self.is_error = np.concatenate([self.is_error, np.array([k is MetricKind.ERROR for k in kinds], dtype=np.bool_)])
        self.values = np.concatenate([self.values, np.full(n, np.nan)])
        self.ts_ms = np.concatenate([self.ts_ms, np.full(n, NO_TS, dtype=np.int64)])
        return list(range(first, first + n))


class Catalog:
    """All series known to the store, as the writer sees them."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.hosts: dict[str, HostSeries] = {}
        self.groups: dict[tuple[str, str], int] = {}
        self.group_of: dict[int, int] = {}
        self.now_ms = 0
        """The newest sample time ingested: the store's clock for sealing and retention."""
        self._load()

    def _load(self) -> None:
        for gid, host, metric in self.conn.execute("SELECT id, host, metric FROM series_groups"):
            self.groups[(host, metric)] = gid
        pending: dict[str, list[tuple[SeriesKey, int, MetricKind]]] = {}
        for sid, host, metric, device, port, gid in self.conn.execute(
            "SELECT id, host, metric, device, port, group_id FROM series ORDER BY id"
        ):
            self.group_of[sid] = gid
            pending.setdefault(host, []).append(((metric, device, port), sid, metric_kind(metric)))
        for host, rows in pending.items():
            hs = HostSeries()
            hs.index = {key: i for i, (key, _, _) in enumerate(rows)}
            hs.sids = np.array([sid for _, sid, _ in rows], dtype=np.int64)
            hs.is_error = np.array([kind is MetricKind.ERROR for _, _, kind in rows], dtype=np.bool_)
            hs.values = np.full(len(rows), np.nan)
            hs.ts_ms = np.full(len(rows), NO_TS, dtype=np.int64)
            self.hosts[host] = hs
        for host, ts_ms, data in self.conn.execute("SELECT host, ts_ms, data FROM latest"):
            self.now_ms = max(self.now_ms, ts_ms)
            known = self.hosts.get(host)
            if known is None:
                continue
            sids, values, stamps = decode_frame(data)
            position = {int(s): i for i, s in enumerate(known.sids)}
            cols = np.array([position[int(s)] for s in sids], dtype=np.int64)
            known.values[cols] = values
            known.ts_ms[cols] = stamps if stamps is not None else ts_ms
        row = self.conn.execute("SELECT max(ts_ms) FROM frames").fetchone()
        if row[0] is not None:
            self.now_ms = max(self.now_ms, int(row[0]))

    def host(self, name: str) -> HostSeries:
        hs = self.hosts.get(name)
        if hs is None:
            hs = self.hosts[name] = HostSeries()
        return hs

    def create(self, host: str, hs: HostSeries, keys: list[SeriesKey]) -> list[int]:
        """Insert new series (and their groups when new); returns their columns in ``hs``.

        Ids are the next free ones (what SQLite would pick), given here so that one
        ``executemany`` inserts them all: a new host brings several hundred series.
        """
        conn = self.conn
        new_groups = list(dict.fromkeys(metric for metric, _, _ in keys if (host, metric) not in self.groups))
        if new_groups:
            next_gid = int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM series_groups").fetchone()[0])
            conn.executemany("INSERT INTO series_groups (id, host, metric) VALUES (?, ?, ?)",
                             [(next_gid + i, host, metric) for i, metric in enumerate(new_groups)])
            for i, metric in enumerate(new_groups):
                self.groups[(host, metric)] = next_gid + i
        next_sid = int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM series").fetchone()[0])
        sids = list(range(next_sid, next_sid + len(keys)))
        kinds = [metric_kind(metric) for metric, _, _ in keys]
        gids = [self.groups[(host, metric)] for metric, _, _ in keys]
        conn.executemany(
            "INSERT INTO series (id, host, metric, device, port, kind, group_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(sid, host, metric, device, port, str(kind), gid)
             for sid, (metric, device, port), kind, gid in zip(sids, keys, kinds, gids, strict=True)],
        )
        self.group_of.update(zip(sids, gids, strict=True))
        return hs.add(keys, sids, kinds)
