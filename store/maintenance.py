"""Background work of the writer thread, in small units: seal, roll up, expire.

- **Seal**: frames (one row per host sample, written on every commit) of a
  finished time block are regrouped into compressed chunks, one row per series
  group (one metric of one host) and block, and marked sealed; late frames are
  merged into an existing chunk. Sealed frames are kept for ``replay_s`` more
  seconds: one frame per host answers a whole-fleet ``as_of`` quickly, where
  chunks need one decode per metric and host.
- **Roll up**: once every block of an hour (a day) is sealed, its 1 min (1 h)
  rollups are computed from the raw chunks and merged into the group's row
  for that day (30 days), so a day of 1 min rollups is one row to read.
- **Expire**: sealed frames past the replay window, raw chunks older than
  their retention, and rollup rows whose whole span is, are deleted a few
  hundred rows at a time; raw chunks are never deleted before their rollups
  exist.

The store's clock is the newest sample time ingested (``Catalog.now_ms``), so
the same rules hold for a live fleet, a replayed capture and the benchmark.
Each unit is small (one host block, one group, a few hundred rows) and
:meth:`Maintenance.step` stops at its deadline, so a write never waits long.
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque

import numpy as np

from fleet.store.catalog import Catalog
from fleet.store.codec import I64, decode_block, decode_frame, encode_block
from fleet.store.rollup import rollup_cells, rollup_kind
from fleet.store.types import Retention

HOUR_MS = 3_600_000
DAY_MS = 86_400_000
ROLLUP_ROWS = {"rollup_1m": DAY_MS, "rollup_1h": 30 * DAY_MS}
"""Time span of one stored rollup row per table (bucket starts from t0_ms)."""
SEAL_GRACE_MS = 60_000
"""How long after a block ends its frames wait for late samples before sealing."""
_DELETE_ROWS = 500


def _points_of_frames(rows: list[tuple[int, bytes]]) -> tuple[I64, I64, np.ndarray]:
    sids, stamps, values = [], [], []
    for ts_ms, data in rows:
        s, v, _ = decode_frame(data)
        sids.append(s)
        values.append(v)
        stamps.append(np.full(len(s), ts_ms, dtype=np.int64))
    return np.concatenate(sids), np.concatenate(stamps), np.concatenate(values)


def build_block(sids: I64, ts_ms: I64, values: np.ndarray) -> tuple[I64, I64, np.ndarray, np.ndarray]:
    """Points to a (series x time) matrix; for a repeated (sid, ts) the later point wins."""
    u_sids, row = np.unique(sids, return_inverse=True)
    u_ts, col = np.unique(ts_ms, return_inverse=True)
    matrix = np.full((len(u_sids), len(u_ts)), np.nan)
    present = np.zeros(matrix.shape, dtype=np.bool_)
    matrix[row, col] = values
    present[row, col] = True
    return u_sids, u_ts, matrix, present


class Maintenance:
    """Seal, roll up and expire, one small unit at a time, on the writer's connection."""

    def __init__(self, conn: sqlite3.Connection, catalog: Catalog, retention: Retention,
                 block_s: float, replay_s: float = 3600.0) -> None:
        self.conn = conn
        self.catalog = catalog
        self.retention = retention
        self.block_ms = int(block_s * 1000)
        self.replay_ms = int(replay_s * 1000)
        self._planned_now = -1
        self._seal_to = 0
        self._seal_queue: deque[str] = deque()
        self._sealed_ms = 0
        self._busy = True
        self.state = {k: v for k, v in conn.execute("SELECT key, value FROM store_state")}
        self._stored = dict(self.state)
        """``state`` as the database has it. A failed transaction costs the writer its connection
        and this object with it, so the next one reads both again."""

    def has_work(self) -> bool:
        return self._busy or self.catalog.now_ms != self._planned_now

    def step(self, deadline: float) -> None:
        """Run units until ``deadline`` (a ``time.perf_counter()`` value) or until none is left;
        at least one, so that every step makes progress."""
        if self.catalog.now_ms != self._planned_now:
            self._plan()
        did = False
        while self._seal_one() or self._rollup_one(60_000, HOUR_MS, "rollup_1m") \
                or self._rollup_one(HOUR_MS, DAY_MS, "rollup_1h") or self._expire_one():
            did = True
            if time.perf_counter() >= deadline:
                break
        self._busy = did
        # Only what changed: the step after every batch mostly finds nothing to do, and rewriting
        # unchanged rows made each of those a write transaction of its own.
        changed = [(key, value) for key, value in self.state.items() if self._stored.get(key) != value]
        if changed:
            self.conn.executemany("INSERT OR REPLACE INTO store_state VALUES (?, ?)", changed)
            self._stored.update(changed)

    def _plan(self) -> None:
        now = self.catalog.now_ms
        self._planned_now = now
        boundary = ((now - SEAL_GRACE_MS) // self.block_ms) * self.block_ms
        if boundary > self._seal_to:
            hosts = [r[0] for r in self.conn.execute(
                "SELECT DISTINCT host FROM frames WHERE ts_ms < ? AND sealed = 0", (boundary,))]
            self._seal_queue = deque(hosts)
            self._seal_to = boundary
        if not self._seal_queue:
            self._sealed_ms = self._seal_to
        self._busy = True

    # --- seal ---------------------------------------------------------------
    def _seal_one(self) -> bool:
        if not self._seal_queue:
            self._sealed_ms = self._seal_to
            return False
        host = self._seal_queue[0]
        first = self.conn.execute(
            "SELECT min(ts_ms) FROM frames WHERE host = ? AND ts_ms < ? AND sealed = 0",
            (host, self._seal_to)
        ).fetchone()[0]
        if first is None:
            self._seal_queue.popleft()
            return True
        t0 = (int(first) // self.block_ms) * self.block_ms
        end = min(t0 + self.block_ms, self._seal_to)
        rows = self.conn.execute(
            "SELECT ts_ms, data FROM frames WHERE host = ? AND ts_ms >= ? AND ts_ms < ? AND sealed = 0 "
            "ORDER BY ts_ms",
            (host, t0, end)).fetchall()
        self._seal_points(*_points_of_frames(rows), t0)
        self.conn.execute("UPDATE frames SET sealed = 1 WHERE host = ? AND ts_ms >= ? AND ts_ms < ?",
                          (host, t0, end))
        return True

    def _seal_points(self, sids: I64, ts_ms: I64, values: np.ndarray, t0: int) -> None:
        """Write one host's points of the block at ``t0`` as one chunk per series group."""
        u_sids, u_ts, matrix, present = build_block(sids, ts_ms, values)
        gids = np.array([self.catalog.group_of[int(s)] for s in u_sids], dtype=np.int64)
        order = np.argsort(gids, kind="stable")
        u_sids, matrix, present, gids = u_sids[order], matrix[order], present[order], gids[order]
        unique_gids = np.unique(gids).tolist()
        existing = {r[0] for r in self.conn.execute(
            f"SELECT group_id FROM chunks WHERE t0_ms = ? AND group_id IN ({', '.join('?' * len(unique_gids))})",
            (t0, *unique_gids))}
        cuts = np.flatnonzero(np.diff(gids)) + 1
        for rows in np.split(np.arange(len(gids)), cuts):
            gid = int(gids[rows[0]])
            g_sids, g_present = u_sids[rows], present[rows]
            cols = g_present.any(axis=0)
            g_ts, g_values, g_present = u_ts[cols], matrix[rows][:, cols], g_present[:, cols]
            if gid in existing:
                g_sids, g_ts, g_values, g_present = self._merged(gid, t0, g_sids, g_ts, g_values, g_present)
            self.conn.execute(
                "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?)",
                (gid, t0, int(g_ts[0]), int(g_ts[-1]), int(g_present.sum()),
                 encode_block(g_sids, g_ts, g_values, g_present)))

    def _merged(self, gid: int, t0: int, sids: I64, ts_ms: I64, values: np.ndarray,
                present: np.ndarray) -> tuple[I64, I64, np.ndarray, np.ndarray]:
        """A late block merged into the stored chunk; the late points win on equal times."""
        (blob,) = self.conn.execute(
            "SELECT data FROM chunks WHERE group_id = ? AND t0_ms = ?", (gid, t0)).fetchone()
        old_s, old_t, old_v = _points_of_blocks([blob])
        rows, cols = np.nonzero(present)
        return build_block(np.concatenate((old_s, sids[rows])), np.concatenate((old_t, ts_ms[cols])),
                           np.concatenate((old_v, values[rows, cols])))

    # --- roll up ------------------------------------------------------------
    def _rollup_one(self, bucket_ms: int, period_ms: int, table: str) -> bool:
        t0_key, gid_key = f"{table}_t0", f"{table}_gid"
        if t0_key not in self.state:
            first = self.conn.execute("SELECT min(t0_ms) FROM chunks").fetchone()[0]
            if first is None:
                return False
            self.state[t0_key] = float((int(first) // period_ms) * period_ms)
            self.state[gid_key] = 0.0
        t0 = int(self.state[t0_key])
        if t0 + period_ms > self._sealed_ms:
            return False
        row = self.conn.execute(
            "SELECT id, metric FROM series_groups WHERE id > ? ORDER BY id LIMIT 1",
            (int(self.state[gid_key]),)).fetchone()
        if row is None:
            following = self.conn.execute(
                "SELECT min(t0_ms) FROM chunks WHERE t0_ms >= ?", (t0 + period_ms,)).fetchone()[0]
            nxt = t0 + period_ms if following is None else (int(following) // period_ms) * period_ms
            self.state[t0_key] = float(max(nxt, t0 + period_ms))
            self.state[gid_key] = 0.0
            return True
        gid, metric = int(row[0]), str(row[1])
        self.state[gid_key] = float(gid)
        blobs = self.conn.execute(
            "SELECT data FROM chunks WHERE group_id = ? AND t0_ms >= ? AND t0_ms < ? ORDER BY t0_ms",
            (gid, t0, t0 + period_ms)).fetchall()
        if not blobs:
            return True
        sids, ts_ms, values = _points_of_blocks([b[0] for b in blobs])
        u_sids, u_ts, matrix, present = build_block(sids, ts_ms, values)
        cells = rollup_cells(u_sids, u_ts, matrix, present, bucket_ms, rollup_kind(metric))
        if len(cells[0]) == 0:
            return True
        row_t0 = (t0 // ROLLUP_ROWS[table]) * ROLLUP_ROWS[table]
        old = self.conn.execute(f"SELECT data FROM {table} WHERE group_id = ? AND t0_ms = ?",
                                (gid, row_t0)).fetchone()
        if old is not None:
            cells = tuple(np.concatenate(pair) for pair in zip(_points_of_blocks([old[0]]), cells,
                                                               strict=True))  # type: ignore[assignment]
        self.conn.execute(f"INSERT OR REPLACE INTO {table} VALUES (?, ?, ?)",
                          (gid, row_t0, encode_block(*build_block(*cells))))
        return True

    # --- expire -------------------------------------------------------------
    def _expire_one(self) -> bool:
        now = self.catalog.now_ms
        raw_bound = now - int(self.retention.raw_s * 1000)
        for key in ("rollup_1m_t0", "rollup_1h_t0"):
            raw_bound = min(raw_bound, int(self.state.get(key, 0.0)))
        cursor = self.conn.execute(
            "DELETE FROM frames WHERE (host, ts_ms) IN (SELECT host, ts_ms FROM frames "
            f"WHERE ts_ms < ? AND sealed = 1 LIMIT {_DELETE_ROWS})", (now - self.replay_ms,))
        if cursor.rowcount:
            return True
        for table, bound in (
            ("chunks", raw_bound),
            ("rollup_1m", now - int(self.retention.rollup_1m_s * 1000) - ROLLUP_ROWS["rollup_1m"]),
            ("rollup_1h", now - int(self.retention.rollup_1h_s * 1000) - ROLLUP_ROWS["rollup_1h"]),
        ):
            cursor = self.conn.execute(
                f"DELETE FROM {table} WHERE rowid IN "
                f"(SELECT rowid FROM {table} WHERE t0_ms < ? LIMIT {_DELETE_ROWS})", (bound,))
            if cursor.rowcount:
                return True
        return False


def _points_of_blocks(blobs: list[bytes]) -> tuple[I64, I64, np.ndarray]:
    sids, stamps, values = [], [], []
    for blob in blobs:
        s, t, v, p = decode_block(blob)
        rows, cols = np.nonzero(p)
        sids.append(s[rows])
        stamps.append(t[cols])
        values.append(v[rows, cols])
    return np.concatenate(sids), np.concatenate(stamps), np.concatenate(values)
