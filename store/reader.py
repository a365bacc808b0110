"""Queries over the history, for the console, reports and the CLI.

A :class:`StoreReader` has its own read-only connection and never writes; it
reads a consistent snapshot per query (WAL) while the writer keeps writing.
Times are unix seconds in and out; the store keeps them to the millisecond.
Calls are serialised by a lock, so one reader may be shared by worker threads.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fleet.fabric.events import Event
from fleet.fabric.records import (
    ActionRecord,
    HostRecord,
    HostStatus,
    JobRecord,
    PortRecord,
    ProbeRecord,
)
from fleet.fabric.states import HostState
from fleet.store import audit, rows
from fleet.store.audit import AuditHead, AuditRow, ChainVerdict
from fleet.store.codec import F64, I64
from fleet.store.errors import HistoryFileError
from fleet.store.ingest import ts_to_ms
from fleet.store.latest import MAX_DEFER_MS, HostLatest
from fleet.store.maintenance import ROLLUP_ROWS
from fleet.store.points import (
    EMPTY,
    MAX_BLOCK_MS,
    Points,
    concat,
    frame_points,
    last_per_series,
    raw_points,
    rollup_rows,
)
from fleet.store.replay import last_points
from fleet.store.rollup import (
    STAT_COUNT,
    STAT_MAX,
    STAT_MIN,
    STAT_P50,
    STAT_P99,
    STAT_SUM,
    rollup_kind,
)
from fleet.store.schema import connect_history
from fleet.store.series_index import SeriesIndex
from fleet.store.types import Point, PointArrays, PointList, SeriesData

AS_OF_WINDOW_MS = 600_000
"""as_of() reports a series only if it had a value in the 10 minutes before the asked time."""
RAW_MAX_SPAN_S = 6 * 3600.0
"""series(resolution="auto") uses raw points up to this span, 1 min rollups up to 10 days, then 1 h."""
ROLLUP_1M_MAX_SPAN_S = 10 * 86400.0
_RESOLUTIONS = {"1m": ("rollup_1m", 60_000), "1h": ("rollup_1h", 3_600_000)}

_NO_IDS = np.zeros(0, dtype=np.int64)


class StoreReader:
    """Read access to the history at ``path``."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no fleet history at {self.path}")
        self._conn = connect_history(self.path)
        self._lock = threading.RLock()
        self._index = SeriesIndex()  # loaded on first use: opening stays cheap
        self._latest: dict[str, _HostLatest] = {}
        self._errors: Points | None = None
        self._errors_rows = 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- series metadata ----------------------------------------------------
    def _refresh(self) -> None:
        self._index.refresh(self._conn)

    def _ensure(self, sids: I64) -> None:
        self._index.ensure(self._conn, sids)

    def _metric_filter(self, metrics: Sequence[str] | None) -> npt.NDArray[np.bool_] | None:
        """A mask over series ids: True for the series of ``metrics`` (None: no filter).

        A lookup table, not ``np.isin``: whole-fleet filters test ~400,000 ids
        against tens of thousands, once per host.
        """
        if metrics is None:
            return None
        mask = np.zeros(self._index.max_sid + 1, dtype=np.bool_)
        for metric in metrics:
            mask[self._index.metric_sids.get(metric, _NO_IDS)] = True
        return mask

    def _arrays(self, points: Points) -> PointArrays:
        s, t, v = points
        self._ensure(s)
        return PointArrays(s, t / 1000.0, v, self._index.keys)

    # --- samples ----------------------------------------------------------------
    def latest(self, hosts: Sequence[str] | None = None,
               metrics: Sequence[str] | None = None) -> PointList:
        """The newest value of every series (of ``hosts``, of ``metrics``), each point made as it is read."""
        return self.latest_arrays(hosts, metrics).points()

    def latest_arrays(self, hosts: Sequence[str] | None = None,
                      metrics: Sequence[str] | None = None) -> PointArrays:
        """:meth:`latest` as arrays (no per-point objects)."""
        with self._lock:
            cached = self._latest_hosts(hosts)
            self._refresh()
            wanted = self._metric_filter(metrics)
            parts = [(e.state.sids, e.state.ts_ms, e.state.values) for e in cached]
            s, t, v = concat(parts)
            if wanted is not None:
                keep = _select(wanted, s)
                s, t, v = s[keep], t[keep], v[keep]
            return self._arrays((s, t, v))

    def _latest_hosts(self, hosts: Sequence[str] | None) -> list[_HostLatest]:
        """The cached newest values of ``hosts`` (all when None), brought up to date: a host whose
        row changed is re-read, then the frames newer than what its entry holds are applied
        (:mod:`fleet.store.latest`). One snapshot for all queries, so no row is mixed with later frames."""
        conn = self._conn
        began = not conn.in_transaction
        if began:
            conn.execute("BEGIN")
        try:
            return self._latest_snapshot(hosts)
        finally:
            if began:
                conn.execute("COMMIT")

    def _latest_snapshot(self, hosts: Sequence[str] | None) -> list[_HostLatest]:
        if hosts is None:
            versions = self._conn.execute("SELECT host, version FROM latest").fetchall()
        else:
            versions = []
            for part in _batches(list(hosts)):
                versions += self._conn.execute(
                    f"SELECT host, version FROM latest WHERE host IN ({_marks(len(part))})", part).fetchall()
        newest = self._newest_frames()
        stale = [host for host, version in versions
                 if (entry := self._latest.get(host)) is None or entry.version != version]
        for part in _batches(stale):
            for host, version, ts_ms, blob in self._conn.execute(
                f"SELECT host, version, ts_ms, data FROM latest WHERE host IN ({_marks(len(part))})", part):
                self._latest[host] = _HostLatest(host, version, HostLatest.from_row(ts_ms, blob))
        behind = [(host, applied) for host, _ in versions
                  if newest.get(host, -1) > (applied := self._latest[host].state.applied_ms)]
        for part in _batches(behind, 250):
            pairs = ", ".join(["(?, ?)"] * len(part))
            for host, ts_ms, blob in self._conn.execute(
                f"WITH wanted (host, after) AS (VALUES {pairs}) SELECT f.host, f.ts_ms, f.data "
                "FROM wanted w JOIN frames f ON f.host = w.host AND f.ts_ms > w.after ORDER BY f.host, f.ts_ms",
                [value for pair in part for value in pair]).fetchall():
                entry = self._latest[host]
                state = entry.state
                if state.error_at is None:
                    self._ensure(state.sids)
                    state.find_errors(self._index.is_error[state.sids])
                state.apply(ts_ms, blob)
        return [self._latest[host] for host, _ in versions]

    def _newest_frames(self) -> dict[str, int]:
        """Per host, its newest frame of those that can be newer than its row: by the writer's rule
        (:data:`fleet.store.latest.MAX_DEFER_MS`) these are all in the last seconds of the store's clock,
        a short range of the frames' time index, where one look per host into the frames table
        itself would read a page of each host's frames (a reader's page cache starts cold after
        every commit)."""
        newest = self._conn.execute("SELECT max(ts_ms) FROM frames").fetchone()[0]
        if newest is None:
            return {}
        return dict(self._conn.execute(
            "SELECT host, max(ts_ms) FROM frames INDEXED BY frames_ts WHERE ts_ms >= ? GROUP BY host",
            (int(newest) - MAX_DEFER_MS,)).fetchall())

    def as_of(self, ts: float, hosts: Sequence[str] | None = None,
              metrics: Sequence[str] | None = None) -> PointList:
        """The fleet as it was at ``ts``: per series the last value at or before ``ts``, each point
        made as it is read.

        Gauges and counters count only if they had a value in the 10 minutes
        before ``ts``; error counters (stored on change) give their last value ever.
        """
        return self.as_of_arrays(ts, hosts, metrics).points()

    def as_of_arrays(self, ts: float, hosts: Sequence[str] | None = None,
                     metrics: Sequence[str] | None = None) -> PointArrays:
        """:meth:`as_of` as arrays (no per-point objects)."""
        with self._lock:
            return self._arrays(concat(part for _, part in self._as_of_parts(ts, hosts, metrics)))

    def _as_of_parts(self, ts: float, hosts: Sequence[str] | None,
                     metrics: Sequence[str] | None) -> list[tuple[str | None, Points]]:
        """The points of :meth:`as_of` per host (gauges and counters), then the error counters (None)."""
        with self._lock:
            self._refresh()
            end = ts_to_ms(ts)
            start = end - AS_OF_WINDOW_MS
            wanted = self._metric_filter(metrics)
            index = self._index
            names = list(index.continuous) if hosts is None else hosts
            parts: list[tuple[str | None, Points]] = []
            for host in names:
                sids = index.continuous.get(host)
                if sids is None or len(sids) == 0:
                    continue
                if wanted is not None:
                    sids = sids[_select(wanted, sids)]
                    if len(sids) == 0:
                        continue
                parts.append((host, self._host_as_of(host, sids, start, end, complete=wanted is None)))
            error_sids = index.error_sids
            if hosts is not None:
                own = np.concatenate([_NO_IDS, *(index.host_sids.get(h, _NO_IDS) for h in hosts)])
                error_sids = np.sort(own[index.is_error[own]])
            if wanted is not None:
                error_sids = error_sids[_select(wanted, error_sids)]
            if len(error_sids):
                parts.append((None, self._errors_as_of(error_sids, end)))
            return parts

    def _host_as_of(self, host: str, sids: I64, start: int, end: int, complete: bool) -> Points:
        """``sids`` (sorted) of ``host`` as of ``end``: frames newest first, then chunks.

        ``complete``: ``sids`` are all of the host's gauges and counters, so a frame
        holding as many values holds them all.
        """
        parts: list[Points] = []
        remaining = sids
        for ts_ms, blob in self._conn.execute(
            "SELECT ts_ms, data FROM frames WHERE host = ? AND ts_ms <= ? AND ts_ms > ? "
            "ORDER BY ts_ms DESC", (host, end, start)):
            s, t, v = frame_points(ts_ms, blob)
            if complete and not parts and len(s) == len(sids):
                return s, t, v
            keep = np.isin(s, remaining)
            parts.append((s[keep], t[keep], v[keep]))
            remaining = remaining[~np.isin(remaining, s)]
            if len(remaining) == 0:
                break
        if len(remaining):
            parts += self._chunks_as_of(remaining, start, end)
        return last_per_series(concat(parts))

    def _chunks_as_of(self, sids: I64, start: int, end: int) -> list[Points]:
        """The sealed points of ``sids`` in (start, end], enough to take each one's last.

        In rounds: first every group's newest chunk, decoded together
        (:func:`fleet.store.replay.last_points`); a series is done once it has a point newer
        than anything its group's older chunks can hold (their ``last_ms``), and the
        next older chunk is read only for groups with series not done: normally one
        chunk per group instead of the two blocks a 10 minute window touches.
        """
        group = self._index.group
        gids = np.unique(group[sids]).tolist()
        chunks: dict[int, list[tuple[int, bytes]]] = {}
        for part in _batches(gids):
            for gid, last_ms, blob in self._conn.execute(
                f"SELECT group_id, last_ms, data FROM chunks WHERE group_id IN ({_marks(len(part))}) "
                "AND t0_ms <= ? AND t0_ms > ? AND last_ms > ?",
                (*part, end, start - MAX_BLOCK_MS, start)):
                chunks.setdefault(gid, []).append((last_ms, blob))
        for found in chunks.values():
            found.sort(key=lambda chunk: chunk[0], reverse=True)
        todo = np.zeros(len(group), dtype=np.bool_)
        todo[sids] = True
        parts: list[Points] = []
        active = sorted(chunks)
        depth = 0
        while active:
            s, t, v = last_points([chunks[gid][depth][1] for gid in active], start, end)
            keep = todo[s]
            s, t, v = s[keep], t[keep], v[keep]
            parts.append((s, t, v))
            older = np.array([chunks[gid][depth + 1][0] if depth + 1 < len(chunks[gid]) else -1
                              for gid in active], dtype=np.int64)
            todo[s[t > older[np.searchsorted(np.array(active, dtype=np.int64), group[s])]]] = False
            depth += 1
            left = np.unique(group[sids[todo[sids]]])
            active = [gid for gid in left.tolist() if depth < len(chunks.get(gid, ()))]
        return parts

    def _errors_as_of(self, sids: I64, end: int) -> Points:
        """Error counters ``sids`` as of ``end``: their last change at or before it.

        The reader keeps the newest state of every error counter and brings it
        up to date with the changes since it last looked (index on time); for a
        past ``end`` it redoes only the counters that changed after ``end``.
        """
        state = self._error_state()
        later = [r[0] for r in self._conn.execute(
            "SELECT DISTINCT series_id FROM changes WHERE ts_ms > ?", (end,))]
        s, t, v = state
        if later:
            redo = np.array(sorted(later), dtype=np.int64)
            keep = ~np.isin(s, redo)
            s, t, v = s[keep], t[keep], v[keep]
            redone = self._changes_query(
                f"WHERE series_id IN ({_marks(len(later))}) AND ts_ms <= ?", (*later, end))
            s, t, v = concat([(s, t, v), redone])
        keep = np.isin(s, sids)
        return s[keep], t[keep], v[keep]

    def _changes_query(self, where: str, args: tuple[Any, ...]) -> Points:
        found = self._conn.execute(
            f"SELECT series_id, max(ts_ms), value FROM changes {where} GROUP BY series_id", args).fetchall()
        if not found:
            return EMPTY
        return (np.array([r[0] for r in found], dtype=np.int64), np.array([r[1] for r in found], dtype=np.int64),
                np.array([np.nan if r[2] is None else r[2] for r in found], dtype=np.float64))

    def _error_state(self) -> Points:
        """The newest change of every error counter, kept current incrementally.

        Exact: when rows arrived that are not newer than the newest change seen
        (a late sample), the state is rebuilt from scratch instead.
        """
        rows = int(self._conn.execute("SELECT count(*) FROM changes").fetchone()[0])
        if self._errors is not None and rows == self._errors_rows:
            return self._errors
        state = self._errors
        if state is not None and rows > self._errors_rows:
            since = int(state[1].max()) if len(state[1]) else -(2**62)
            after = int(self._conn.execute(
                "SELECT count(*) FROM changes WHERE ts_ms > ?", (since,)).fetchone()[0])
            if after == rows - self._errors_rows:
                newer = self._changes_query("WHERE ts_ms > ?", (since,))
                self._errors = last_per_series(concat([state, newer]))
                self._errors_rows = rows
                return self._errors
        self._errors = self._changes_query("", ())
        self._errors_rows = rows
        return self._errors

    def series(self, host: str, metric: str, device: str = "", port: str = "",
               start: float | None = None, end: float | None = None,
               resolution: str = "auto") -> SeriesData:
        """One series over [start, end] (default: the last hour of data) at ``resolution``.

        ``auto`` picks raw up to 6 h, 1 min rollups up to 10 days, else 1 h
        rollups. Error counters are stored on change: their raw points are the
        changes, led by the value in effect at ``start``.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT id, kind, group_id FROM series WHERE host = ? AND metric = ? AND device = ? "
                "AND port = ?", (host, metric, device, port)).fetchone()
            if end is None:
                span = self._time_span()
                end = span[1] if span else time.time()
            if start is None:
                start = end - 3600.0
            if resolution == "auto":
                width = end - start
                resolution = ("raw" if width <= RAW_MAX_SPAN_S
                              else "1m" if width <= ROLLUP_1M_MAX_SPAN_S else "1h")
            if row is None:
                return SeriesData(resolution, [], [], [], [])
            sid, kind, gid = int(row[0]), str(row[1]), int(row[2])
            start_ms, end_ms = ts_to_ms(start), ts_to_ms(end)
            if kind == "error":
                return self._error_series(sid, start_ms, end_ms)
            sids = np.array([sid], dtype=np.int64)
            if resolution == "raw":
                _s, t, v = raw_points(self._conn, host, [gid], sids, start_ms, end_ms)
                order = np.argsort(t, kind="stable")
                t, v = t[order], v[order]
                ts_list, values = (t / 1000.0).tolist(), v.tolist()
                return SeriesData("raw", ts_list, values, list(values), list(values))
            table, bucket_ms = _RESOLUTIONS[resolution]
            kind = rollup_kind(metric)
            cells = rollup_rows(self._conn, table, gid, ROLLUP_ROWS[table], bucket_ms, start_ms, end_ms,
                                kind, (host, sids))
            return _rollup_series(resolution, sid, cells, kind)

    def _error_series(self, sid: int, start_ms: int, end_ms: int) -> SeriesData:
        before = self._conn.execute(
            "SELECT value FROM changes WHERE series_id = ? AND ts_ms < ? ORDER BY ts_ms DESC LIMIT 1",
            (sid, start_ms)).fetchone()
        ts_list: list[float] = []
        values: list[float] = []
        if before is not None:
            ts_list.append(start_ms / 1000.0)
            values.append(before[0])
        for ts_ms, value in self._conn.execute(
            "SELECT ts_ms, value FROM changes WHERE series_id = ? AND ts_ms >= ? AND ts_ms <= ? "
            "ORDER BY ts_ms", (sid, start_ms, end_ms)):
            ts_list.append(ts_ms / 1000.0)
            values.append(value)
        return SeriesData("raw", ts_list, values, list(values), list(values))

    def top_n(self, metric: str, n: int = 10, start: float | None = None,
              end: float | None = None) -> list[Point]:
        """The ``n`` series of ``metric`` with the largest value (error counters: largest increase).

        Without a window, the newest values (error counters: the last hour);
        with one, each series' largest raw value in [start, end] (its time in
        ``ts``) or, for error counters, the increase over the window (``ts`` = ``end``).
        """
        with self._lock:
            if start is None and end is None and _kind_of(metric) != "error":
                found = self.latest(metrics=[metric])
                return sorted(found, key=lambda p: p.value, reverse=True)[:n]
            span = self._time_span()
            end = end if end is not None else (span[1] if span else time.time())
            start = start if start is not None else end - 3600.0
            start_ms, end_ms = ts_to_ms(start), ts_to_ms(end)
            self._refresh()
            index = self._index
            sids = index.metric_sids.get(metric, _NO_IDS).tolist()
            if not sids:
                return []
            if index.is_error[sids[0]]:
                return self._top_increase(sids, n, start_ms, end_ms)
            by_group: dict[int, list[int]] = {}
            for sid in sids:
                by_group.setdefault(int(index.group[sid]), []).append(sid)
            best: list[Points] = []
            for gid, members in by_group.items():
                host = index.keys[members[0]][0]  # type: ignore[index]
                s, t, v = raw_points(self._conn, host, [gid], np.array(sorted(members), dtype=np.int64),
                                     start_ms, end_ms)
                if len(s):
                    ranked = np.where(np.isnan(v), -np.inf, v)
                    order = np.lexsort((ranked, s))
                    s, t, v = s[order], t[order], v[order]
                    top = np.ones(len(s), dtype=np.bool_)
                    top[:-1] = s[1:] != s[:-1]
                    best.append((s[top], t[top], v[top]))
            found = self._arrays(concat(best)).points()
            return sorted(found, key=lambda p: p.value, reverse=True)[:n]

    def _top_increase(self, sids: list[int], n: int, start_ms: int, end_ms: int) -> list[Point]:
        at_end = dict(zip(*self._errors_as_of(np.array(sids), end_ms)[::2], strict=True))
        at_start = dict(zip(*self._errors_as_of(np.array(sids), start_ms)[::2], strict=True))
        rising = []
        for sid, value in at_end.items():
            delta = value - at_start.get(sid, value if sid not in at_start else 0.0)
            if sid not in at_start:
                first = self._conn.execute(
                    "SELECT value FROM changes WHERE series_id = ? ORDER BY ts_ms LIMIT 1",
                    (int(sid),)).fetchone()
                delta = value - (first[0] if first else value)
            if delta > 0:
                rising.append((int(sid), delta))
        rising.sort(key=lambda item: item[1], reverse=True)
        top = rising[:n]
        return list(self._arrays((np.array([s for s, _ in top], dtype=np.int64),
                                  np.full(len(top), end_ms, dtype=np.int64),
                                  np.array([d for _, d in top], dtype=np.float64))).points())

    def time_span(self) -> tuple[float, float] | None:
        """(oldest, newest) sample time held, in unix seconds; None when empty."""
        with self._lock:
            return self._time_span()

    def _time_span(self) -> tuple[float, float] | None:
        lows, highs = [], []
        for low_sql, high_sql in (
            ("SELECT min(first_ms) FROM chunks", "SELECT max(last_ms) FROM chunks"),
            ("SELECT min(ts_ms) FROM frames", "SELECT max(ts_ms) FROM frames"),
            ("SELECT min(ts_ms) FROM changes", "SELECT max(ts_ms) FROM changes"),
            ("SELECT min(t0_ms) FROM rollup_1m", "SELECT max(t0_ms) FROM rollup_1m"),
            ("SELECT min(t0_ms) FROM rollup_1h", "SELECT max(t0_ms) FROM rollup_1h"),
        ):
            low = self._conn.execute(low_sql).fetchone()[0]
            high = self._conn.execute(high_sql).fetchone()[0]
            if low is not None:
                lows.append(int(low))
                highs.append(int(high))
        if not lows:
            return None
        return min(lows) / 1000.0, max(highs) / 1000.0

    # --- records --------------------------------------------------------------
    def host_statuses(self, as_of: float | None = None, *, settled: bool = False) -> dict[str, HostStatus]:
        """Each host's collection state as of ``as_of`` (default: now).

        ``settled``: a host the collector is (re)connecting to shows the state it was last seen in
        instead: ``connecting`` is the collector's own wait after a restart, not news of the host, so
        a host found hung stays hung until it answers (a diagnosis reads it so). A host never seen in
        another state stays ``connecting``."""
        when = as_of if as_of is not None else float("inf")
        latest = ("SELECT host, max(since), state, reason FROM host_status WHERE since <= ? "
                  "GROUP BY host")
        with self._lock:
            found = {r[0]: rows.row_status(r) for r in self._conn.execute(latest, (when,)).fetchall()}
            if settled and any(s.state is HostState.CONNECTING for s in found.values()):
                seen = self._conn.execute(
                    "SELECT host, max(since), state, reason FROM host_status WHERE since <= ? AND state != ? "
                    "GROUP BY host", (when, HostState.CONNECTING.value)).fetchall()
                known = {r[0]: rows.row_status(r) for r in seen}
                found = {host: known.get(host, status) if status.state is HostState.CONNECTING else status
                         for host, status in found.items()}
            return found

    def hosts(self) -> list[HostRecord]:
        with self._lock:
            return [rows.row_host(r) for r in self._conn.execute(
                f"SELECT {rows.HOST_COLUMNS} FROM hosts ORDER BY name")]

    def ports(self, host: str | None = None) -> list[PortRecord]:
        with self._lock:
            sql = f"SELECT {rows.PORT_COLUMNS} FROM ports"
            args: list[Any] = []
            if host is not None:
                sql += " WHERE host = ?"
                args.append(host)
            return [rows.row_port(r) for r in self._conn.execute(sql + " ORDER BY host, device, port", args)]

    def events(self, since: float | None = None, until: float | None = None,
               host: str | None = None, severity: str | None = None, kind: str | None = None,
               limit: int = 1000) -> list[Event]:
        """Events, newest first."""
        where, args = _filters(("ts >= ?", since), ("ts <= ?", until), ("host = ?", host),
                               ("severity = ?", severity), ("kind = ?", kind))
        with self._lock:
            return [rows.row_event(r) for r in self._conn.execute(
                f"SELECT {rows.EVENT_COLUMNS} FROM events{where} ORDER BY ts DESC, id DESC LIMIT ?",
                (*args, limit))]

    def probes(self, kind: str | None = None, since: float | None = None,
               until: float | None = None, host: str | None = None, job: str | None = None,
               run_id: str | None = None, limit: int = 1000) -> list[ProbeRecord]:
        """Probe results with their raw output, newest first; ``host`` matches either side."""
        where, args = _filters(("kind = ?", kind), ("ts >= ?", since), ("ts <= ?", until),
                               ("(src = ? OR dst = ?)", host), ("job = ?", job),
                               ("run_id = ?", run_id))
        with self._lock:
            return [rows.row_probe(r) for r in self._conn.execute(
                f"SELECT {rows.PROBE_COLUMNS} FROM probes{where} ORDER BY ts DESC, id DESC LIMIT ?",
                (*args, limit))]

    def jobs(self, as_of: float | None = None) -> list[JobRecord]:
        """The jobs running at ``as_of`` (default: in the newest snapshot)."""
        with self._lock:
            if as_of is None:
                found = self._conn.execute(
                    f"SELECT {rows.JOB_COLUMNS}, last_seen FROM jobs WHERE end_ts IS NULL ORDER BY job_id")
                return [rows.row_job(r[:8], r[8]) for r in found]
            found = self._conn.execute(
                f"SELECT {rows.JOB_COLUMNS} FROM jobs WHERE min(start_ts, first_seen) <= ? "
                "AND (end_ts IS NULL OR end_ts > ?) ORDER BY job_id", (as_of, as_of))
            return [rows.row_job(r, as_of) for r in found]

    def job_latency(self, job_id: str, start: float, end: float,
                    bucket_s: float = 60.0) -> list[tuple[float, float, float]]:
        """Latency of a job's probes per bucket: (bucket start, p50_usec, p99_usec).

        p50 is the median of the probes' typical latency, p99 the 99th
        percentile of their p99 (their typical latency where they report no p99).
        """
        return self._latency([job_id], start, end, bucket_s)

    def tenant_latency(self, account: str, start: float, end: float,
                       bucket_s: float = 60.0) -> list[tuple[float, float, float]]:
        """Like :meth:`job_latency` over every job of ``account`` (the Slurm account is the tenant)."""
        with self._lock:
            job_ids = [r[0] for r in self._conn.execute(
                "SELECT job_id FROM jobs WHERE account = ?", (account,))]
        return self._latency(job_ids, start, end, bucket_s)

    def _latency(self, job_ids: list[str], start: float, end: float,
                 bucket_s: float) -> list[tuple[float, float, float]]:
        if not job_ids:
            return []
        with self._lock:
            found = self._conn.execute(
                f"SELECT ts, result FROM probes WHERE job IN ({_marks(len(job_ids))}) AND kind = 'lat' "
                "AND ok = 1 AND ts >= ? AND ts <= ? ORDER BY ts", (*job_ids, start, end)).fetchall()
        buckets: dict[float, tuple[list[float], list[float]]] = {}
        for ts, result_json in found:
            result = json.loads(result_json)
            typical = _first_number(result, ("t_typical_usec", "p50_usec", "t_avg_usec", "avg_usec"))
            if typical is None:
                continue
            tail = _first_number(result, ("p99_usec", "t_99_usec")) or typical
            key = start + ((ts - start) // bucket_s) * bucket_s
            p50s, p99s = buckets.setdefault(key, ([], []))
            p50s.append(typical)
            p99s.append(tail)
        return [(key, float(np.percentile(a, 50)), float(np.percentile(b, 99)))
                for key, (a, b) in sorted(buckets.items())]

    def audit(self) -> list[ActionRecord]:
        """Every recorded change to a machine, oldest first."""
        with self._lock:
            return [rows.row_action(r) for r in self._conn.execute(
                f"SELECT {rows.ACTION_COLUMNS} FROM actions ORDER BY id")]

    def audit_rows(self) -> list[AuditRow]:
        """Every audit row as stored, with its id and place in the hash chain, oldest first."""
        with self._lock:
            return list(audit.rows(self._conn))

    def audit_head(self) -> AuditHead:
        """Where the audit's hash chain ends now (rows, last id, SHA-256): what reports print."""
        with self._lock:
            return audit.read_head(self._conn)

    def verify_audit(self) -> ChainVerdict:
        """Walk the audit's hash chain (:func:`fleet.store.audit.verify_chain`); names the first break."""
        with self._lock:
            return audit.verify_chain(self._conn)

    def baselines(self, name: str | None = None) -> list[tuple[float, str, dict[str, Any]]]:
        """Stored baselines as (ts, name, numbers), oldest first."""
        where, args = _filters(("name = ?", name))
        with self._lock:
            return [(r[0], r[1], json.loads(r[2])) for r in self._conn.execute(
                f"SELECT ts, name, data FROM baselines{where} ORDER BY ts", args)]


def audit_head_at(path: Path | str) -> AuditHead | None:
    """The audit head of the history at ``path`` for a report, on a fresh connection; None when there is no
    history there or the file is not one."""
    try:
        with StoreReader(path) as reader:
            return reader.audit_head()
    except (FileNotFoundError, HistoryFileError):
        return None


@dataclass(slots=True)
class _HostLatest:
    """One host's newest values as last read."""

    host: str
    version: int
    state: HostLatest


def _select(mask: npt.NDArray[np.bool_], sids: I64) -> npt.NDArray[np.bool_]:
    """``mask[sids]``, False for ids past the mask (series newer than the mask)."""
    inside = sids < len(mask)
    if inside.all():
        return mask[sids]
    chosen = np.zeros(len(sids), dtype=np.bool_)
    chosen[inside] = mask[sids[inside]]
    return chosen


def _batches(items: list[Any], size: int = 500) -> list[list[Any]]:
    """Split ``items`` so that no query has more parameters than SQLite allows."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def _rollup_series(resolution: str, sid: int, cells: tuple[I64, I64, F64], kind: str) -> SeriesData:
    rows_, ts_ms, values = cells
    starts = np.unique(ts_ms)
    columns: dict[int, F64] = {}
    for stat in (STAT_MIN, STAT_SUM, STAT_MAX, STAT_COUNT, STAT_P50, STAT_P99):
        column = np.full(len(starts), np.nan)
        mask = rows_ == sid * 8 + stat
        column[np.searchsorted(starts, ts_ms[mask])] = values[mask]
        columns[stat] = column
    latency = kind == "latency"
    if kind == "counter":
        last = columns[STAT_MAX].tolist()
        return SeriesData(resolution, (starts / 1000.0).tolist(), last, list(last), list(last))
    return SeriesData(
        resolution, (starts / 1000.0).tolist(), columns[STAT_MIN].tolist(),
        (columns[STAT_SUM] / columns[STAT_COUNT]).tolist(), columns[STAT_MAX].tolist(),
        columns[STAT_P50].tolist() if latency else None,
        columns[STAT_P99].tolist() if latency else None)


def _kind_of(metric: str) -> str:
    from fleet.store.catalog import metric_kind

    return str(metric_kind(metric))


def _first_number(result: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = result.get(key)
        if isinstance(value, int | float):
            return float(value)
    return None


def _filters(*pairs: tuple[str, object]) -> tuple[str, list[object]]:
    clauses, args = [], []
    for clause, value in pairs:
        if value is None:
            continue
        clauses.append(clause)
        args.extend([value] * clause.count("?"))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


def _marks(n: int) -> str:
    return ", ".join("?" * n)
