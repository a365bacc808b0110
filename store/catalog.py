"""Series ids: the writer's map from (host, metric, device, port) to ids, and per-host last values.

Loaded from the database when the writer (re)opens it, so that after a failed
commit it can be thrown away and rebuilt from what is really on disk.
"""

from __future__ import annotations

import sqlite3
import struct
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from fleet.fabric.samples import METRICS, MetricKind, SeriesKey
from fleet.store.codec import F64, I64, frame_head
from fleet.store.latest import HostLatest

NO_TS = np.int64(-1)


_KIND_OF = {name: spec.kind for name, spec in METRICS.items()}
"""Each catalogued metric's kind, one dict lookup for the hundreds of series a new host brings."""


def metric_kind(metric: str) -> MetricKind:
    """The kind of ``metric``; names missing from the catalogue are kept as gauges."""
    return _KIND_OF.get(metric, MetricKind.GAUGE)


class Layout:
    """The columns of one sample's keys (in the sample's order), and what writing them needs."""

    __slots__ = ("cols", "error_at", "error_cols", "error_set", "frame_head", "frame_order", "keys", "pack")

    def __init__(self, keys: tuple[SeriesKey, ...], cols: I64, is_error: npt.NDArray[np.bool_], sids: I64) -> None:
        self.keys = keys
        self.cols = cols
        self.pack = struct.Struct(f"{len(keys)}d").pack
        """The sample's values as native float64 bytes, in its key order: ~3x cheaper than
        ``np.fromiter`` over the dict's values, the same bits (``PyFloat_AsDouble`` either way)."""
        errors = is_error[cols]
        self.error_at = np.flatnonzero(errors)
        """Positions of the error counters' values in the sample (stored on change, not in frames)."""
        self.error_cols = cols[self.error_at]
        self.error_set = np.sort(self.error_cols).tobytes()
        """Which error counters the sample holds, comparable with :attr:`HostSeries.error_set`."""
        kept = np.flatnonzero(~errors)
        order = kept[np.argsort(sids[cols[kept]], kind="stable")]
        self.frame_order = order
        """Positions of the non-error values, by series id: a frame is ``values[frame_order]``."""
        self.frame_head = frame_head(sids[cols[order]])
        """A frame of this layout is this, then ``values[frame_order]``'s bytes."""


class HostSeries:
    """The series of one host: column per series, with its id and newest value."""

    def __init__(self) -> None:
        self.index: dict[SeriesKey, int] = {}
        self.sids: I64 = np.zeros(0, dtype=np.int64)
        self.is_error = np.zeros(0, dtype=np.bool_)
        self.values: F64 = np.zeros(0, dtype=np.float64)
        self.ts_ms: I64 = np.zeros(0, dtype=np.int64)
        self.dirty = False
        """Its ``latest`` row must be written at the end of this batch."""
        self.newest = int(NO_TS)
        """The newest sample time of any of its series."""
        self.row_ts = int(NO_TS)
        """``ts_ms`` of its ``latest`` row on disk (-1: no row): samples newer than that are in
        frames only (see :mod:`fleet.store.latest`)."""
        self.deferred = 0
        """How many samples since the row was written are in frames only."""
        self.deferred_since = int(NO_TS)
        """The time of the oldest of them: the row is written once it is MAX_DEFER_MS old."""
        self.error_set = b""
        """The error counters whose time is :attr:`newest`, as the reader finds them in the row:
        a sample left out of the row must hold exactly these (see :mod:`fleet.store.latest`)."""
        self.errors_of: Layout | None = None
        self.errors_bytes = b""
        """The error values of the last sample, when it came in order and had layout ``errors_of``:
        then they are the host's, and a next sample of that layout with the same bytes changed none."""
        self.layouts: dict[int, Layout] = {}
        """By number of keys, where the keys of this host's last such sample live: the next sample
        with the same keys in the same order (an agent stream's usual case: its counters, its rates,
        its lines with optics) skips the per-key lookups."""

    def add(self, keys: list[SeriesKey], sids: list[int], kinds: list[MetricKind]) -> list[int]:
        """New series, appended in one step (a new host brings hundreds); returns their columns."""
        first = len(self.sids)
        n = len(keys)
        self.index.update(zip(keys, range(first, first + n), strict=True))
        self.sids = np.concatenate([self.sids, np.array(sids, dtype=np.int64)])
        errors = np.fromiter(map(MetricKind.ERROR.__eq__, kinds), dtype=np.bool_, count=n)
        self.is_error = np.concatenate([self.is_error, errors])
        self.values = np.concatenate([self.values, np.full(n, np.nan)])
        self.ts_ms = np.concatenate([self.ts_ms, np.full(n, NO_TS, dtype=np.int64)])
        return list(range(first, first + n))

    def row_written(self) -> None:
        """The row now holds every value: note what a sample left out of the next one must match."""
        self.row_ts = self.newest
        self.deferred = 0
        self.dirty = False
        self.error_set = np.flatnonzero(self.is_error & (self.ts_ms == self.newest)).tobytes()


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
        newer: dict[str, list[tuple[int, bytes]]] = {}
        for host, ts_ms, data in self.conn.execute(
            "SELECT f.host, f.ts_ms, f.data FROM latest l JOIN frames f ON f.host = l.host AND f.ts_ms > l.ts_ms "
            "ORDER BY f.host, f.ts_ms"):
            newer.setdefault(host, []).append((ts_ms, data))
        for host, ts_ms, data in self.conn.execute("SELECT host, ts_ms, data FROM latest"):
            self.now_ms = max(self.now_ms, ts_ms)
            known = self.hosts.get(host)
            if known is None:
                continue
            state = HostLatest.from_row(ts_ms, data)
            position = {int(s): i for i, s in enumerate(known.sids)}
            cols = np.array([position[int(s)] for s in state.sids], dtype=np.int64)
            if host in newer:
                state.find_errors(known.is_error[cols])
                for frame_ts, frame in newer[host]:
                    state.apply(frame_ts, frame)
            known.values[cols] = state.values
            known.ts_ms[cols] = state.ts_ms
            known.newest = int(state.ts_ms.max(initial=NO_TS))
            known.row_written()
            if host in newer:  # samples left out of the row stay so: a restart rewrites no rows
                known.row_ts, known.deferred, known.deferred_since = ts_ms, len(newer[host]), newer[host][0][0]
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

        Ids are the next free ones (what SQLite would pick), given here so that a few
        statements insert them all (:func:`insert_rows`): a new host brings several hundred series.
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
        kind_of, gauge, groups = _KIND_OF.get, MetricKind.GAUGE, self.groups
        kinds = [kind_of(metric, gauge) for metric, _, _ in keys]
        gids = [groups[(host, metric)] for metric, _, _ in keys]
        insert_rows(conn, "INSERT INTO series (id, host, metric, device, port, kind, group_id)",
                    [(sid, host, metric, device, port, kind.value, gid)
                     for sid, (metric, device, port), kind, gid in zip(sids, keys, kinds, gids, strict=True)])
        self.group_of.update(zip(sids, gids, strict=True))
        return hs.add(keys, sids, kinds)


_CHUNK = 128
"""Rows per multi-row statement: one size, so that its statement is prepared once and cached."""


def insert_rows(conn: sqlite3.Connection, head: str, rows: list[tuple[Any, ...]]) -> None:
    """``head VALUES (...), (...)`` for ``rows``, 128 rows a statement (the rest by ``executemany``):
    a new host's ~700 series and ~300 first error values go in 1.2-1.4x cheaper than by
    ``executemany``, which steps one statement per row. (Frames, a few dozen rows of 4 KB each,
    measured cheaper by ``executemany``.)"""
    if not rows:
        return
    marks = "(" + ", ".join("?" * len(rows[0])) + ")"
    full = len(rows) - len(rows) % _CHUNK
    if full:
        sql = f"{head} VALUES {', '.join([marks] * _CHUNK)}"
        for at in range(0, full, _CHUNK):
            conn.execute(sql, list(chain.from_iterable(rows[at : at + _CHUNK])))
    if full < len(rows):
        conn.executemany(f"{head} VALUES {marks}", rows[full:])
