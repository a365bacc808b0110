"""What the writer thread does with one batch of queued items, inside one transaction."""

from __future__ import annotations

import sqlite3
import time
from array import array
from typing import Any, NamedTuple

import numpy as np

from fleet.fabric.events import Event
from fleet.fabric.records import (
    ActionRecord,
    HostRecord,
    HostStatus,
    JobRecord,
    PortRecord,
    ProbeRecord,
)
from fleet.fabric.samples import HostSample, PackedValues
from fleet.store import audit, rows
from fleet.store.catalog import Catalog, HostSeries, Layout, insert_rows
from fleet.store.codec import encode_frame, frame_size, merge_frames
from fleet.store.latest import MAX_DEFER_MS, MAX_DEFERRED, MAX_GAP_MS
from fleet.store.pending import Item

NEVER = 2**62


class Written(NamedTuple):
    """What one batch wrote: sample values (one per series and time) and records (events, probes, ...)."""

    samples: int
    records: int


def ts_to_ms(ts: float) -> int:
    """Unix seconds to the store's integer milliseconds."""
    return round(ts * 1000.0)


class Ingestor:
    """Writes batches of items; the caller owns the transaction around :meth:`write`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.catalog = Catalog(conn)
        conn.create_function("fleet_merge_frames", 2, merge_frames, deterministic=True)
        conn.create_function("fleet_frame_size", 1, frame_size, deterministic=True)
        self._dirty: dict[str, HostSeries] = {}
        """Hosts whose ``latest`` row is written at the end of this batch."""
        self._deferred = {host: hs for host, hs in self.catalog.hosts.items() if hs.deferred}
        """Hosts with samples in frames only (:mod:`fleet.store.latest`)."""
        self._recheck_ms = min((hs.deferred_since + MAX_DEFER_MS for hs in self._deferred.values()), default=NEVER)
        """When the store's clock passes this, a host's oldest sample left out of its row is due."""

    def write(self, batch: list[Item]) -> Written:
        """Write every item of ``batch``; returns how many sample values and records it wrote."""
        samples = records = 0
        changes: list[tuple[int, int, float]] = []
        frames: list[_Frame] = []
        for item in batch:
            if item.kind == "samples":
                assert isinstance(item.payload, HostSample)
                samples += self._sample(item.payload, frames, changes)
            else:
                records += getattr(self, f"_put_{item.kind}")(item.payload)
        if frames:
            self.conn.executemany(_INSERT_FRAME, _merged(frames))
        insert_rows(self.conn, "INSERT OR REPLACE INTO changes", changes)
        self._write_latest()
        return Written(samples, records)

    def _sample(
        self,
        sample: HostSample,
        frames: list[_Frame],
        changes: list[tuple[int, int, float]],
    ) -> int:
        if not sample.values:
            return 0
        catalog = self.catalog
        host = sample.host
        hs = catalog.host(host)
        given = sample.values
        packed: array[float] | None = None
        if isinstance(given, PackedValues):  # a stream's: its shared keys and its array as they are
            keys, packed = given.layout.keys, given.data
        else:
            keys = tuple(given)
        layout = hs.layouts.get(len(keys))
        created = False
        if layout is None or (layout.keys is not keys and layout.keys != keys):  # mostly the same objects
            index = hs.index
            cols_list = [index.get(key, -1) for key in keys]
            if -1 in cols_list:
                missing = [i for i, c in enumerate(cols_list) if c < 0]
                new_cols = catalog.create(host, hs, [keys[i] for i in missing])
                for i, col in zip(missing, new_cols, strict=True):
                    cols_list[i] = col
                created = True
            layout = hs.layouts[len(keys)] = Layout(keys, np.array(cols_list, dtype=np.int64), hs.is_error, hs.sids)
        cols = layout.cols
        values = np.frombuffer(packed if packed is not None else layout.pack(*given.values()), dtype=np.float64)
        ts_ms = ts_to_ms(sample.ts)
        errors_changed = False
        if len(layout.error_at):
            evalues = values[layout.error_at]
            ebytes = evalues.tobytes()
            if hs.errors_of is not layout or hs.errors_bytes != ebytes:
                ecols = layout.error_cols
                changed = (hs.ts_ms[ecols] < 0) | (hs.values[ecols].view(np.uint64) != evalues.view(np.uint64))
                if changed.any():
                    errors_changed = True
                    for sid, value in zip(hs.sids[ecols[changed]].tolist(), evalues[changed].tolist(), strict=True):
                        changes.append((sid, ts_ms, value))
            # in order, the host's error values are now these: the next sample of this layout compares bytes
            hs.errors_of, hs.errors_bytes = (layout, ebytes) if ts_ms > hs.newest else (None, b"")
        has_frame = len(layout.frame_order) > 0
        if has_frame:
            frames.append(_Frame(host, ts_ms, len(layout.frame_order),
                                 layout.frame_head + values[layout.frame_order].tobytes()))
        if ts_ms > hs.newest:  # in order: every value is its series' newest
            left_out = (has_frame and not created and not errors_changed and not hs.dirty and hs.row_ts >= 0
                        and hs.deferred < MAX_DEFERRED and ts_ms - hs.newest <= MAX_GAP_MS
                        and layout.error_set == hs.error_set)
            hs.values[cols] = values
            hs.ts_ms[cols] = ts_ms
            hs.newest = ts_ms
        else:
            left_out = False
            newer = hs.ts_ms[cols] <= ts_ms
            hs.values[cols[newer]] = values[newer]
            hs.ts_ms[cols[newer]] = ts_ms
        if left_out:
            if not hs.deferred:
                hs.deferred_since = ts_ms
                self._deferred[host] = hs
                self._recheck_ms = min(self._recheck_ms, ts_ms + MAX_DEFER_MS)
            hs.deferred += 1
        elif not hs.dirty:
            hs.dirty = True
            self._dirty[host] = hs
        catalog.now_ms = max(catalog.now_ms, ts_ms)
        return len(cols)

    def _write_latest(self) -> None:
        """Write the rows of the hosts that need it (:mod:`fleet.store.latest`): dirty ones, and those
        whose oldest sample left out of the row is due by the store's clock."""
        if self.catalog.now_ms >= self._recheck_ms:
            due = self.catalog.now_ms - MAX_DEFER_MS
            self._recheck_ms = NEVER
            for host, hs in self._deferred.items():
                if hs.deferred_since <= due:
                    hs.dirty = True
                    self._dirty[host] = hs
                else:
                    self._recheck_ms = min(self._recheck_ms, hs.deferred_since + MAX_DEFER_MS)
        if not self._dirty:
            return
        upserts = []
        for host, hs in self._dirty.items():
            seen = hs.ts_ms >= 0
            upserts.append((host, hs.newest, encode_frame(hs.sids[seen], hs.values[seen], hs.ts_ms[seen])))
            hs.row_written()
            self._deferred.pop(host, None)
        self._dirty = {}
        self.conn.executemany(
            "INSERT INTO latest (host, ts_ms, data) VALUES (?, ?, ?) ON CONFLICT (host) "
            "DO UPDATE SET ts_ms = excluded.ts_ms, data = excluded.data, version = version + 1",
            upserts,
        )

    def _put_event(self, event: Event) -> int:
        self.conn.execute(f"INSERT INTO events ({rows.EVENT_COLUMNS}) VALUES ({_marks(10)})",
                          rows.event_row(event))
        return 1

    def _put_probe(self, probe: ProbeRecord) -> int:
        self.conn.execute(f"INSERT INTO probes ({rows.PROBE_COLUMNS}) VALUES ({_marks(12)})",
                          rows.probe_row(probe))
        return 1

    def _put_action(self, action: ActionRecord) -> int:
        audit.append(self.conn, rows.action_row(action))
        return 1

    def _put_status(self, status: HostStatus) -> int:
        self.conn.execute("INSERT OR REPLACE INTO host_status VALUES (?, ?, ?, ?)",
                          rows.status_row(status))
        return 1

    def _put_hosts(self, hosts: list[HostRecord]) -> int:
        now = time.time()
        self.conn.executemany(
            f"INSERT OR REPLACE INTO hosts ({rows.HOST_COLUMNS}, updated_ts) VALUES ({_marks(7)})",
            [rows.host_row(h, now) for h in hosts])
        return len(hosts)

    def _put_ports(self, ports: list[PortRecord]) -> int:
        now = time.time()
        self.conn.executemany(
            f"INSERT OR REPLACE INTO ports ({rows.PORT_COLUMNS}, updated_ts) VALUES ({_marks(8)})",
            [rows.port_row(p, now) for p in ports])
        return len(ports)

    def _put_baseline(self, payload: tuple[str, float, dict[str, Any]]) -> int:
        name, ts, data = payload
        self.conn.execute("INSERT INTO baselines (ts, name, data) VALUES (?, ?, ?)",
                          (ts, name, rows._dump(data)))
        return 1

    def _put_jobs(self, payload: tuple[float, list[JobRecord]]) -> int:
        """A full snapshot of the jobs running at ``ts``: those missing from it have ended."""
        ts, jobs = payload
        listed = {job.job_id for job in jobs}
        for job in jobs:
            self.conn.execute(
                f"INSERT INTO jobs ({rows.JOB_COLUMNS}, first_seen, last_seen, end_ts) "
                f"VALUES ({_marks(11)}) ON CONFLICT (job_id) DO UPDATE SET state = excluded.state, "
                "nodes = excluded.nodes, last_seen = max(last_seen, excluded.last_seen), end_ts = NULL",
                (job.job_id, job.name, job.user, job.account, job.state, rows.dump_nodes(job.nodes),
                 job.partition, job.start_ts or ts, ts, ts, None),
            )
        running = [r[0] for r in self.conn.execute("SELECT job_id FROM jobs WHERE end_ts IS NULL")]
        ended = [(ts, job_id) for job_id in running if job_id not in listed]
        self.conn.executemany("UPDATE jobs SET end_ts = ? WHERE job_id = ?", ended)
        return len(jobs)


_INSERT_FRAME = (
    "INSERT INTO frames (host, ts_ms, n, data) VALUES (?, ?, ?, ?) ON CONFLICT (host, ts_ms) DO UPDATE SET "
    "data = CASE WHEN frames.sealed THEN excluded.data ELSE fleet_merge_frames(frames.data, excluded.data) END, "
    "n = CASE WHEN frames.sealed THEN excluded.n "
    "ELSE fleet_frame_size(fleet_merge_frames(frames.data, excluded.data)) END, sealed = 0"
)
"""Two samples of one host at one instant (a collector's counters and the rates derived from them)
share a frame: the second adds its series rather than replacing the first's. Against a frame
already sealed (its points are in chunks) the late one is a frame of its own: the next seal
merges its points into the chunks."""


class _Frame(NamedTuple):
    """A row of ``frames``: a host's values at one instant (``n`` of them, encoded in ``data``)."""

    host: str
    ts_ms: int
    n: int
    data: bytes


def _merged(frames: list[_Frame]) -> list[_Frame]:
    """``frames`` with those of the same host and instant merged (the later wins per series)."""
    at: dict[tuple[str, int], int] = {}
    out: list[_Frame] = []
    for frame in frames:
        place = at.setdefault((frame.host, frame.ts_ms), len(out))
        if place == len(out):
            out.append(frame)
        else:
            data = merge_frames(out[place].data, frame.data)
            out[place] = _Frame(frame.host, frame.ts_ms, frame_size(data), data)
    return out


def _marks(n: int) -> str:
    return ", ".join("?" * n)
