"""The actions table is append-only: the code has no update path and triggers refuse one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fleet.fabric.records import ActionRecord
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def test_actions_are_kept_in_order_and_cannot_be_changed(fresh_db: Path) -> None:
    steps = [ActionRecord(100.0 + i, "ops@laptop", "leaf01", "ecmp.apply", step,
                          commands=("nv set x", "nv config apply"), output="ok",
                          before={"hash": "a"}, after={"hash": "b"}, verdict="")
             for i, step in enumerate(("snapshot", "apply", "verify"))]
    with StoreWriter(fresh_db) as writer:
        for action in steps:
            writer.put_action(action)
    assert StoreReader(fresh_db).audit() == steps

    conn = sqlite3.connect(fresh_db)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE actions SET verdict = 'fine' WHERE step = 'apply'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM actions")
    assert conn.execute("SELECT count(*) FROM actions").fetchone()[0] == 3
