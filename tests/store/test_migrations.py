"""Schema migrations: new files are created at the current version, older ones upgraded, newer refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from store_samples import T0, nic_sample

from fleet.store.ingest import Ingestor
from fleet.store.pending import Item
from fleet.store.reader import StoreReader
from fleet.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SchemaTooNewError,
    SchemaTooOldError,
    connect,
    open_for_writing,
    schema_version,
)
from fleet.store.writer import StoreWriter


def test_new_file_gets_every_migration_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "fleet.db"
    db = open_for_writing(path)
    assert schema_version(db) == SCHEMA_VERSION
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"hosts", "ports", "series", "chunks", "latest", "events", "probes", "jobs",
            "baselines", "actions", "rollup_1m", "rollup_1h"} <= set(db.table_names())


def test_older_file_is_upgraded_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    MIGRATIONS.apply(db, stop_before="m002_rollups")
    db.execute("INSERT INTO events (ts, kind, severity, message, host, device, port, switch, job, data) "
               "VALUES (1, 'k', 'info', 'kept', '', '', '', '', '', '{}')")
    db.conn.commit()
    assert "rollup_1m" not in db.table_names()
    db.close()
    with pytest.raises(SchemaTooOldError, match="start the collector on it once"):
        StoreReader(path)  # readers never write, so they cannot upgrade

    StoreWriter(path).close()

    upgraded = sqlite_utils.Database(path)
    assert schema_version(upgraded) == SCHEMA_VERSION
    assert "rollup_1m" in upgraded.table_names()
    assert [e.message for e in StoreReader(path).events()] == ["kept"]


def test_newer_file_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    open_for_writing(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                 "VALUES ('fleet.store', 'm999_future', '2030-01-01')")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()

    with pytest.raises(SchemaTooNewError, match=r"newer than this fleet understands.*upgrade fleet"):
        StoreWriter(path)
    with pytest.raises(SchemaTooNewError, match="m999_future"):
        StoreReader(path)


def test_frames_move_to_a_rowid_table_and_read_back_the_same(tmp_path: Path) -> None:
    """m005: the unsealed frames written under the WITHOUT ROWID table of m001 are copied and read
    back as before; a sealed one (its points are in chunks) is left behind."""
    path = tmp_path / "v4.db"
    db = sqlite_utils.Database(connect(path))
    MIGRATIONS.apply(db, stop_before="m005_frames_by_rowid")
    samples = [nic_sample(f"n{h}", T0 + k, k) for k in range(5) for h in range(3)]
    db.execute("BEGIN IMMEDIATE")
    Ingestor(db.conn).write([Item("samples", s, len(s.values)) for s in samples])
    db.execute("INSERT INTO frames (host, ts_ms, n, data, sealed) VALUES ('n9', 1, 0, x'', 1)")  # in chunks
    db.execute("COMMIT")
    with pytest.raises(sqlite3.OperationalError):
        db.execute("SELECT rowid FROM frames")
    db.close()

    StoreWriter(path).close()

    upgraded = sqlite_utils.Database(path)
    assert schema_version(upgraded) == SCHEMA_VERSION
    assert upgraded.execute("SELECT count(*), min(rowid), max(sealed) FROM frames").fetchone() == (15, 1, 0)
    indexes = {row[1]: row[2] for row in upgraded.execute("PRAGMA index_list(frames)")}
    assert indexes == {"frames_host_ts": 1, "frames_ts": 0}
    reader = StoreReader(path)
    key = next(iter(samples[0].values))
    for host in ("n0", "n1", "n2"):
        series = reader.series(host, *key, start=T0, end=T0 + 10)
        assert list(zip(series.ts, series.avg, strict=True)) == [
            (s.ts, s.values[key]) for s in samples if s.host == host]
