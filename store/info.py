"""What `fleet db info` reports about a history file, and `fleet db vacuum`."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from fleet.store.schema import (
    SCHEMA_VERSION,
    check_fleet_history,
    check_not_newer,
    connect,
    connect_history,
    schema_version,
)

COUNTED_TABLES = ("hosts", "ports", "series", "frames", "chunks", "changes", "latest", "rollup_1m",
                  "rollup_1h", "events", "probes", "jobs", "host_status", "baselines", "actions")


@dataclass(frozen=True, slots=True)
class DbInfo:
    """Size and contents of a history file.

    ``size_bytes``: the file plus its write-ahead log; ``stored_samples``: raw
    points held (sealed chunks, unsealed frames, error-counter changes);
    ``bytes_per_sample``: ``size_bytes`` over ``stored_samples`` (everything in
    the file counted against the raw points); ``table_bytes``: bytes on disk per
    table and index, when SQLite was built with the dbstat table.
    """

    path: str
    size_bytes: int
    schema_version: int
    rows: dict[str, int]
    time_span: tuple[float, float] | None
    stored_samples: int
    bytes_per_sample: float | None
    table_bytes: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def db_info(path: Path | str) -> DbInfo:
    """Inspect the history at ``path`` without writing to it."""
    path = Path(path)
    conn = connect_history(path, older_ok=True)
    try:
        db = sqlite_utils.Database(conn)
        present = set(db.table_names())
        rows = {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
                for t in COUNTED_TABLES if t in present}
        stored = 0
        frame_columns = {r[1] for r in conn.execute("PRAGMA table_info(frames)")}
        unsealed = " WHERE sealed = 0" if "sealed" in frame_columns else ""
        for sql in ("SELECT sum(n) FROM chunks", f"SELECT sum(n) FROM frames{unsealed}"):
            stored += int(conn.execute(sql).fetchone()[0] or 0)
        stored += rows.get("changes", 0)
        span = None
        if schema_version(db) == SCHEMA_VERSION:
            from fleet.store.reader import StoreReader

            with StoreReader(path) as reader:
                span = reader.time_span()
        size = _file_bytes(path)
        return DbInfo(str(path), size, schema_version(db), rows, span, stored,
                      size / stored if stored else None, _table_bytes(conn))
    finally:
        conn.close()


def _table_bytes(conn: sqlite3.Connection) -> dict[str, int]:
    try:
        found = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
        return {str(name): int(size) for name, size in found}
    except sqlite3.OperationalError:
        return {}


def vacuum(path: Path | str) -> tuple[int, int]:
    """Checkpoint the log and rebuild the file compactly; returns (bytes before, bytes after).

    Waits (busy timeout) while a writer holds the file; run it when collection is quiet.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no fleet history at {path}")
    before = _file_bytes(path)
    connect_history(path, older_ok=True).close()  # one line, not a traceback, for a file that is not ours
    conn = connect(path, timeout_s=60.0)
    try:
        check_fleet_history(sqlite_utils.Database(conn), path)
        check_not_newer(sqlite_utils.Database(conn), path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return before, _file_bytes(path)
