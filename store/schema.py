"""The database schema, created and upgraded by versioned sqlite-utils migrations.

Every change to the schema is a new migration appended to :data:`MIGRATIONS`;
the schema version of a file is the number of migrations applied to it (also
kept in ``PRAGMA user_version``). Opening an older file upgrades it; a file
written by a newer fleet (a migration this code does not know) is refused.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import sqlite_utils
from sqlite_utils.migrations import Migrations

from fleet.store.errors import HistoryFileError, StoreWriteError, open_failure, write_failure

MIGRATION_SET = "fleet.store"
MIGRATIONS = Migrations(MIGRATION_SET)


class SchemaTooNewError(HistoryFileError):
    """The file was written by a newer fleet; this version must not touch it."""


class SchemaTooOldError(HistoryFileError):
    """The file predates this fleet's schema and no writer has upgraded it yet (readers never write)."""


def check_fleet_history(db: sqlite_utils.Database, path: Path | str) -> None:
    """Raise :class:`HistoryFileError` when ``db`` holds tables but none of this store's migrations:
    another program's database, which fleet must neither read as a history nor add its tables to."""
    if MIGRATIONS.applied(db):
        return
    tables = [name for name in db.table_names() if not name.startswith("sqlite_")]
    if tables:
        shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
        raise HistoryFileError(f"{path} is an SQLite database of another program (tables: {shown}), "
                               "not a fleet history; point --db at another file")


def check_current(db: sqlite_utils.Database, path: Path | str) -> None:
    """For readers: raise unless ``db`` is a fleet history at exactly this code's schema version."""
    check_fleet_history(db, path)
    check_not_newer(db, path)
    found = schema_version(db)
    if found < SCHEMA_VERSION:
        raise SchemaTooOldError(
            f"{path} has schema version {found}, older than this fleet's ({SCHEMA_VERSION}); "
            "start the collector on it once (it upgrades the file), then read it")


@MIGRATIONS(name="m001_core")
def _m001_core(db: sqlite_utils.Database) -> None:
    """Inventory, series, points (frames, chunks, changes, latest) and records."""
    db.executescript(
        """
        CREATE TABLE hosts (
            name TEXT PRIMARY KEY, role TEXT NOT NULL, address TEXT NOT NULL,
            os TEXT NOT NULL, grp INTEGER NOT NULL, info TEXT NOT NULL, updated_ts REAL NOT NULL);
        CREATE TABLE ports (
            host TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL, netdev TEXT NOT NULL,
            link_layer TEXT NOT NULL, peer_host TEXT NOT NULL, peer_port TEXT NOT NULL,
            updated_ts REAL NOT NULL, PRIMARY KEY (host, device, port));
        -- a group is the series of one metric on one host: they share point blocks
        CREATE TABLE series_groups (
            id INTEGER PRIMARY KEY, host TEXT NOT NULL, metric TEXT NOT NULL,
            UNIQUE (host, metric));
        CREATE TABLE series (
            id INTEGER PRIMARY KEY, host TEXT NOT NULL, metric TEXT NOT NULL,
            device TEXT NOT NULL, port TEXT NOT NULL, kind TEXT NOT NULL,
            group_id INTEGER NOT NULL REFERENCES series_groups(id),
            UNIQUE (host, metric, device, port));
        CREATE INDEX series_group ON series(group_id);
        -- unsealed points: one row per host sample, written on every commit
        CREATE TABLE frames (
            host TEXT NOT NULL, ts_ms INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL,
            PRIMARY KEY (host, ts_ms)) WITHOUT ROWID;
        CREATE INDEX frames_ts ON frames(ts_ms);
        -- sealed points: one row per series group and time block starting at t0_ms (store.codec)
        CREATE TABLE chunks (
            group_id INTEGER NOT NULL, t0_ms INTEGER NOT NULL, first_ms INTEGER NOT NULL,
            last_ms INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL,
            PRIMARY KEY (group_id, t0_ms));
        CREATE INDEX chunks_t0 ON chunks(t0_ms);
        -- error counters, stored when they change
        CREATE TABLE changes (
            series_id INTEGER NOT NULL, ts_ms INTEGER NOT NULL, value REAL,
            PRIMARY KEY (series_id, ts_ms)) WITHOUT ROWID;
        -- newest value of every series of a host, upserted on write (the console's fast path)
        CREATE TABLE latest (host TEXT PRIMARY KEY, ts_ms INTEGER NOT NULL, data BLOB NOT NULL);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, severity TEXT NOT NULL,
            message TEXT NOT NULL, host TEXT NOT NULL, device TEXT NOT NULL, port TEXT NOT NULL,
            switch TEXT NOT NULL, job TEXT NOT NULL, data TEXT NOT NULL);
        CREATE INDEX events_ts ON events(ts);
        CREATE INDEX events_host_ts ON events(host, ts);
        CREATE TABLE probes (
            id INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, src TEXT NOT NULL,
            dst TEXT NOT NULL, src_nic TEXT NOT NULL, dst_nic TEXT NOT NULL, ok INTEGER NOT NULL,
            params TEXT NOT NULL, result TEXT NOT NULL, raw TEXT NOT NULL, job TEXT NOT NULL,
            run_id TEXT NOT NULL);
        CREATE INDEX probes_ts ON probes(ts);
        CREATE INDEX probes_job_ts ON probes(job, ts);
        CREATE INDEX probes_run ON probes(run_id);
        CREATE TABLE jobs (
            job_id TEXT PRIMARY KEY, name TEXT NOT NULL, user TEXT NOT NULL,
            account TEXT NOT NULL, state TEXT NOT NULL, nodes TEXT NOT NULL,
            partition TEXT NOT NULL, start_ts REAL NOT NULL, first_seen REAL NOT NULL,
            last_seen REAL NOT NULL, end_ts REAL);
        CREATE INDEX jobs_account ON jobs(account);
        CREATE TABLE host_status (
            host TEXT NOT NULL, since REAL NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL,
            PRIMARY KEY (host, since));
        CREATE TABLE baselines (
            id INTEGER PRIMARY KEY, ts REAL NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL);
        CREATE INDEX baselines_name_ts ON baselines(name, ts);
        -- append-only audit of every change to a machine
        CREATE TABLE actions (
            id INTEGER PRIMARY KEY, ts REAL NOT NULL, actor TEXT NOT NULL, target TEXT NOT NULL,
            action TEXT NOT NULL, step TEXT NOT NULL, commands TEXT NOT NULL, output TEXT NOT NULL,
            before TEXT NOT NULL, after TEXT NOT NULL, verdict TEXT NOT NULL);
        CREATE TRIGGER actions_no_update BEFORE UPDATE ON actions
            BEGIN SELECT RAISE(ABORT, 'actions is append-only: rows cannot be changed'); END;
        CREATE TRIGGER actions_no_delete BEFORE DELETE ON actions
            BEGIN SELECT RAISE(ABORT, 'actions is append-only: rows cannot be deleted'); END;
        """
    )


@MIGRATIONS(name="m002_rollups")
def _m002_rollups(db: sqlite_utils.Database) -> None:
    """1 min and 1 h rollups (one row per series group and hour / day) and maintenance cursors."""
    db.executescript(
        """
        CREATE TABLE rollup_1m (
            group_id INTEGER NOT NULL, t0_ms INTEGER NOT NULL, data BLOB NOT NULL,
            PRIMARY KEY (group_id, t0_ms));
        CREATE INDEX rollup_1m_t0 ON rollup_1m(t0_ms);
        CREATE TABLE rollup_1h (
            group_id INTEGER NOT NULL, t0_ms INTEGER NOT NULL, data BLOB NOT NULL,
            PRIMARY KEY (group_id, t0_ms));
        CREATE INDEX rollup_1h_t0 ON rollup_1h(t0_ms);
        CREATE TABLE store_state (key TEXT PRIMARY KEY, value REAL NOT NULL);
        """
    )


@MIGRATIONS(name="m003_replay")
def _m003_replay(db: sqlite_utils.Database) -> None:
    """Frames stay a while after sealing (fast whole-fleet replay); latest rows carry a version."""
    db.executescript(
        """
        ALTER TABLE frames ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE latest ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        """
    )


@MIGRATIONS(name="m004_changes_by_time")
def _m004_changes_by_time(db: sqlite_utils.Database) -> None:
    """Error-counter changes by time, so readers can apply only the changes since they last looked."""
    db.execute("CREATE INDEX changes_ts ON changes(ts_ms)")


@MIGRATIONS(name="m005_frames_by_rowid")
def _m005_frames_by_rowid(db: sqlite_utils.Database) -> None:
    """Frames in a rowid table, (host, ts_ms) a unique index.

    A thousand nodes each add a ~8 KB frame a second. Keyed by (host, ts_ms) in a
    WITHOUT ROWID table, each lands in its host's place in the B-tree, a different
    leaf for every host; in rowid order they are appended, and only the small index
    entries scatter, which costs the store about 23 % less per line (``python -m benchmarks collect``).
    Only frames not sealed yet are copied (in time order): a sealed frame's points are in
    chunks already and it is kept only to make replay of the last hour fast. A big store
    (a 1,024-node fleet at 1 s holds ~20 GB of frames) then copies the ~11 minutes not
    sealed yet (~4 GB), not the hour, and replay reads the rest of that hour from the
    chunks until new frames fill it.
    """
    db.executescript(
        """
        CREATE TABLE frames_by_rowid (
            host TEXT NOT NULL, ts_ms INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL,
            sealed INTEGER NOT NULL DEFAULT 0);
        INSERT INTO frames_by_rowid (host, ts_ms, n, data)
            SELECT host, ts_ms, n, data FROM frames WHERE NOT sealed ORDER BY ts_ms, host;
        DROP TABLE frames;
        ALTER TABLE frames_by_rowid RENAME TO frames;
        CREATE UNIQUE INDEX frames_host_ts ON frames(host, ts_ms);
        CREATE INDEX frames_ts ON frames(ts_ms);
        """
    )


@MIGRATIONS(name="m006_audit_chain")
def _m006_audit_chain(db: sqlite_utils.Database) -> None:
    """The audit as a hash chain (:mod:`fleet.store.audit`): each row's previous-row hash and its own,
    the head of the chain, and a trigger that refuses a row without them. Rows already there are
    chained in id order, the update trigger lifted for that and put back."""
    from fleet.store.audit import GENESIS, AuditRow, row_hash

    for statement in (
        "ALTER TABLE actions ADD COLUMN prev_hash TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE actions ADD COLUMN hash TEXT NOT NULL DEFAULT ''",
        "CREATE TABLE audit_head (id INTEGER PRIMARY KEY CHECK (id = 1), rows INTEGER NOT NULL, "
        "last_id INTEGER NOT NULL, hash TEXT NOT NULL)",
        "DROP TRIGGER actions_no_update",
    ):
        db.execute(statement)
    prev, last_id, count = GENESIS, 0, 0
    found = db.execute("SELECT id, ts, actor, target, action, step, commands, output, before, after, verdict "
                       "FROM actions ORDER BY id").fetchall()
    for values in found:
        row = AuditRow._make((*values, prev, ""))
        digest = row_hash(row, prev)
        db.execute("UPDATE actions SET prev_hash = ?, hash = ? WHERE id = ?", (prev, digest, row.id))
        prev, last_id, count = digest, row.id, count + 1
    db.execute("INSERT INTO audit_head (id, rows, last_id, hash) VALUES (1, ?, ?, ?)", (count, last_id, prev))
    for statement in (
        "CREATE TRIGGER actions_no_update BEFORE UPDATE ON actions "
        "BEGIN SELECT RAISE(ABORT, 'actions is append-only: rows cannot be changed'); END",
        "CREATE TRIGGER actions_chained BEFORE INSERT ON actions WHEN NEW.hash = '' OR NEW.prev_hash = '' "
        "BEGIN SELECT RAISE(ABORT, 'actions rows carry their chain hash: write them through fleet'); END",
    ):
        db.execute(statement)


def _known_migrations() -> tuple[str, ...]:
    """The names of the migrations this code knows, in order: on an empty database every one of
    them is pending (sqlite-utils' public API; its list of registered migrations is private)."""
    empty = sqlite_utils.Database(memory=True)
    try:
        return tuple(migration.name for migration in MIGRATIONS.pending(empty))
    finally:
        empty.close()


KNOWN_MIGRATIONS = _known_migrations()
SCHEMA_VERSION = len(KNOWN_MIGRATIONS)
"""The schema version this code writes: the number of migrations it knows."""


def schema_version(db: sqlite_utils.Database) -> int:
    """The number of this store's migrations applied to ``db`` (0 for a new file)."""
    return len(MIGRATIONS.applied(db))


def check_not_newer(db: sqlite_utils.Database, path: Path | str) -> None:
    """Raise :class:`SchemaTooNewError` when ``db`` holds migrations this code does not know."""
    unknown = [m.name for m in MIGRATIONS.applied(db) if m.name not in KNOWN_MIGRATIONS]
    user_version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if unknown or user_version > SCHEMA_VERSION:
        found = max(user_version, len(MIGRATIONS.applied(db)))
        raise SchemaTooNewError(
            f"{path} has schema version {found} (migrations {', '.join(unknown) or 'unknown'}), "
            f"newer than this fleet understands ({SCHEMA_VERSION}); upgrade fleet to use this "
            "history, or point --db at another file"
        )


def connect(path: Path | str, *, read_only: bool = False, timeout_s: float = 10.0) -> sqlite3.Connection:
    """A connection with the store's pragmas: WAL, normal sync, a busy timeout."""
    if read_only:
        conn = sqlite3.connect(
            f"file:{Path(path)}?mode=ro", uri=True, timeout=timeout_s, check_same_thread=False
        )
    else:
        conn = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
    if not read_only:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def connect_history(path: Path | str, *, older_ok: bool = False, empty_ok: bool = False) -> sqlite3.Connection:
    """A read-only connection to the fleet history at ``path``, at this code's schema version
    (or, with ``older_ok``, any version up to it: ``fleet db info`` describes old files too;
    with ``empty_ok`` also an SQLite file without tables, which a writer would make a history).

    Raises FileNotFoundError when there is no file, :class:`HistoryFileError` (one line) when
    the file is not a fleet history this fleet can read: not SQLite, unreadable, another
    program's database, an older or newer schema.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no fleet history at {path}")
    if path.is_dir():
        raise HistoryFileError(f"{path} is a folder, not a fleet history")
    try:
        conn = connect(path, read_only=True)
    except sqlite3.Error as error:
        raise open_failure(error, path) from None
    try:
        db = sqlite_utils.Database(conn)
        if older_ok:
            check_fleet_history(db, path)
            check_not_newer(db, path)
            if not schema_version(db) and not empty_ok:
                raise HistoryFileError(f"{path} is an empty SQLite database: no fleet history in it yet")
        else:
            check_current(db, path)
    except HistoryFileError:
        conn.close()
        raise
    except sqlite3.Error as error:
        conn.close()
        raise open_failure(error, path) from None
    return conn


def open_for_writing(path: Path | str) -> sqlite_utils.Database:
    """Open (creating it and its folder if needed) and migrate the store at ``path``.

    Raises :class:`HistoryFileError` when ``path`` is not a fleet history (not SQLite, another
    program's tables, a newer schema) and :class:`StoreWriteError` when it cannot be written.
    """
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreWriteError(f"cannot create the folder of {path}: {error.strerror or error}") from None
    if Path(path).exists():  # judged read-only first: WAL mode would change another program's file
        with contextlib.suppress(FileNotFoundError):  # removed in between: created below
            connect_history(path, older_ok=True, empty_ok=True).close()
    conn: sqlite3.Connection | None = None
    try:
        conn = connect(path)
        db = sqlite_utils.Database(conn)
        check_fleet_history(db, path)
        check_not_newer(db, path)
        if MIGRATIONS.pending(db):
            MIGRATIONS.apply(db)
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except HistoryFileError:
        if conn is not None:
            conn.close()
        raise
    except sqlite3.DatabaseError as error:
        if conn is not None:
            conn.close()
        if "not a database" in str(error):
            raise HistoryFileError(f"{path} is not an SQLite database, so not a fleet history") from None
        raise StoreWriteError(write_failure(error, Path(path))) from None
    return db
