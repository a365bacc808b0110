"""The audit is a hash chain: edits, deletions, insertions and dropped triggers after the fact are found,
`fleet audit verify` names the first row that breaks it and exits 1, and the head moves with every rewrite.

Every tampering here is done the way someone with write access to the file
would do it: plain SQLite on the file, triggers dropped where they are in the way.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import sqlite3
import threading
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner, Result
from textual.widgets import Static

from fleet.console.app import FleetApp
from fleet.console.cli import main
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.screens.audit import AuditScreen
from fleet.fabric.baseline import Baseline, FleetShape, part_id
from fleet.fabric.records import ActionRecord
from fleet.fabric.report_model import audit_words
from fleet.store.audit import GENESIS, AuditRow, canonical, row_hash
from fleet.store.reader import StoreReader
from fleet.store.schema import MIGRATIONS, connect, open_for_writing
from fleet.store.writer import StoreWriter


def _action(k: int, step: str = "apply") -> ActionRecord:
    return ActionRecord(1_800_000_000.0 + k + 0.125, "ops@laptop", f"leaf{k % 3 + 1:02d}", "ecmp.apply", step,
                        commands=(f"nv set system forwarding ecmp-hash seed {k}", "nv config apply -y"),
                        output="applied", before={"imbalance": 1.9}, after={"imbalance": 1.1}, verdict="")


@pytest.fixture
def audited(tmp_path: Path) -> Path:
    """A store with five audited steps."""
    path = tmp_path / "fleet.db"
    with StoreWriter(path) as writer:
        for k in range(5):
            writer.put_action(_action(k))
    return path


def _verify(path: Path) -> Result:
    return CliRunner().invoke(main, ["audit", "verify", "--json", "--db", str(path)])


def _tamper(path: Path, *statements: str, args: tuple[object, ...] = ()) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement, args if "?" in statement else ())
    conn.commit()
    conn.close()


def test_an_untouched_chain_is_intact_and_its_head_is_the_last_hash(audited: Path) -> None:
    result = _verify(audited)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["intact"] and document["rows"] == 5 and document["row"] is None
    with StoreReader(audited) as reader:
        rows = reader.audit_rows()
        assert reader.audit() == [_action(k) for k in range(5)]
    assert [r.id for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0].prev_hash == GENESIS and all(b.prev_hash == a.hash for a, b in itertools.pairwise(rows))
    assert document["head"] == {"rows": 5, "last_id": 5, "sha256": rows[-1].hash}
    text = CliRunner().invoke(main, ["audit", "verify", "--db", str(audited)])
    assert text.exit_code == 0 and text.stdout == f"audit chain intact: 5 rows, head sha256 {rows[-1].hash}\n"
    listing = CliRunner().invoke(main, ["audit", "--db", str(audited)])
    assert listing.stdout.splitlines()[-1] == f"audit: 5 rows, head sha256 {rows[-1].hash}"


def test_the_canonical_form_is_the_documented_one(audited: Path) -> None:
    """Anyone can recompute a row's hash from docs/audit.md with json and hashlib alone."""
    conn = sqlite3.connect(audited)
    found = conn.execute("SELECT id, ts, actor, target, action, step, commands, output, before, after, verdict, "
                         "prev_hash, hash FROM actions WHERE id = 2").fetchone()
    conn.close()
    document = {"id": found[0], "ts": repr(found[1]), "actor": found[2], "target": found[3], "action": found[4],
                "step": found[5], "commands": found[6], "output": found[7], "before": found[8], "after": found[9],
                "verdict": found[10], "prev": found[11]}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert hashlib.sha256(text.encode("ascii")).hexdigest() == found[12]
    row = AuditRow(*found)
    assert canonical(row, row.prev_hash) == text.encode("ascii") and row_hash(row, row.prev_hash) == found[12]


def _broken(path: Path, row: int | None, words: str) -> None:
    result = _verify(path)
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    assert not document["intact"] and document["row"] == row and words in document["problem"], document
    assert result.stderr.startswith("fleet: audit chain BROKEN: ") and result.stderr.count("\n") == 1


def test_an_edited_row_is_named(audited: Path) -> None:
    _tamper(audited, "DROP TRIGGER actions_no_update", "UPDATE actions SET verdict = 'fine' WHERE id = 3",
            "CREATE TRIGGER actions_no_update BEFORE UPDATE ON actions BEGIN SELECT RAISE(ABORT, 'no'); END")
    _broken(audited, 3, "row 3's content does not match its hash")


def test_an_edited_row_whose_hash_was_recomputed_breaks_the_next(audited: Path) -> None:
    conn = sqlite3.connect(audited)
    found = AuditRow(*conn.execute("SELECT id, ts, actor, target, action, step, commands, output, before, after, "
                                   "verdict, prev_hash, hash FROM actions WHERE id = 2").fetchone())
    conn.close()
    forged = found._replace(ts=found.ts - 86400.0)  # back-dated by a day
    _tamper(audited, "DROP TRIGGER actions_no_update", "UPDATE actions SET ts = ?, hash = ? WHERE id = 2",
            args=(forged.ts, row_hash(forged, forged.prev_hash)))
    _broken(audited, 3, "row 3 does not follow row 2")


def test_a_deleted_row_is_named(audited: Path) -> None:
    _tamper(audited, "DROP TRIGGER actions_no_delete", "DELETE FROM actions WHERE id = 2")
    _broken(audited, 3, "row 3 does not follow row 1 (ids jump from 1 to 3: rows deleted)")


def test_rows_deleted_from_the_end_are_found(audited: Path) -> None:
    _tamper(audited, "DROP TRIGGER actions_no_delete", "DELETE FROM actions WHERE id >= 4",
            "CREATE TRIGGER actions_no_delete BEFORE DELETE ON actions BEGIN SELECT RAISE(ABORT, 'no'); END")
    _broken(audited, None, "the chain ends at row 3 (3 rows) but the head recorded 5 rows")


def test_trigger_dropped_then_every_row_deleted_is_found(audited: Path) -> None:
    _tamper(audited, "DROP TRIGGER actions_no_delete", "DELETE FROM actions")
    _broken(audited, None, "the chain ends at row 0 (0 rows) but the head recorded 5 rows")


def test_a_dropped_trigger_alone_is_reported(audited: Path) -> None:
    _tamper(audited, "DROP TRIGGER actions_no_delete")
    _broken(audited, None, "trigger actions_no_delete dropped")


def test_a_forged_insert_is_refused_and_a_forced_one_named(audited: Path) -> None:
    columns = "ts, actor, target, action, step, commands, output, before, after, verdict"
    values = (1_700_000_000.0, "ops@laptop", "leaf01", "ecmp.apply", "apply", '["nv set x"]', "", "{}", "{}", "kept")
    conn = sqlite3.connect(audited)
    with pytest.raises(sqlite3.IntegrityError, match="chain hash"):
        conn.execute(f"INSERT INTO actions ({columns}) VALUES ({', '.join('?' * 10)})", values)
    conn.close()
    _tamper(audited, "DROP TRIGGER actions_chained",
            f"INSERT INTO actions ({columns}, prev_hash, hash) VALUES ({', '.join('?' * 12)})",
            args=(*values, "a" * 64, "b" * 64))  # back-dated: a 2023 time after 2027's rows
    _broken(audited, 6, "row 6 does not follow row 5")


def test_a_forged_row_with_a_correct_hash_at_the_end_misses_the_head(audited: Path) -> None:
    with StoreReader(audited) as reader:
        last = reader.audit_rows()[-1]
    forged = AuditRow(6, 1_700_000_000.0, "ops@laptop", "leaf01", "ecmp.apply", "apply", '["nv set x"]', "", "{}",
                      "{}", "kept", last.hash, "")
    forged = forged._replace(hash=row_hash(forged, last.hash))
    _tamper(audited, f"INSERT INTO actions VALUES ({', '.join('?' * 13)})", args=tuple(forged))
    _broken(audited, None, "the chain ends at row 6 (6 rows) but the head recorded 5 rows")


def _recompute_everything(path: Path) -> None:
    """What someone with write access and this document can do: rewrite every row, re-hash the chain and the head."""
    with StoreReader(path) as reader:
        rows = reader.audit_rows()
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER actions_no_update")
    prev = GENESIS
    for row in rows:
        changed = row._replace(verdict="nothing happened", prev_hash=prev)
        digest = row_hash(changed, prev)
        conn.execute("UPDATE actions SET verdict = ?, prev_hash = ?, hash = ? WHERE id = ?",
                     (changed.verdict, prev, digest, row.id))
        prev = digest
    conn.execute("UPDATE audit_head SET hash = ?", (prev,))
    conn.execute("CREATE TRIGGER actions_no_update BEFORE UPDATE ON actions BEGIN SELECT RAISE(ABORT, 'no'); END")
    conn.commit()
    conn.close()


def test_a_full_recompute_passes_verify_but_not_a_printed_head(audited: Path) -> None:
    """The documented limit: who rewrites every row and the head leaves a chain that verifies;
    only a head printed before (in a report, by `fleet audit`) shows the rewrite."""
    with StoreReader(audited) as reader:
        printed = reader.audit_head()
    _recompute_everything(audited)
    assert _verify(audited).exit_code == 0
    with StoreReader(audited) as reader:
        assert reader.audit_head().rows == printed.rows and reader.audit_head().hash != printed.hash


def test_the_migration_chains_the_rows_already_there(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(connect(path))
    MIGRATIONS.apply(db, stop_before="m006_audit_chain")
    for k in range(3):
        db.execute("INSERT INTO actions (ts, actor, target, action, step, commands, output, before, after, verdict) "
                   "VALUES (?, 'ops@old', 'leaf01', 'ecmp.apply', 'apply', '[]', '', '{}', '{}', '')", (1e9 + k,))
    db.conn.commit()
    db.close()
    open_for_writing(path).close()
    with StoreWriter(path) as writer:
        writer.put_action(_action(9))
    result = _verify(path)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == 4


def test_two_writers_append_to_one_chain(tmp_path: Path) -> None:
    """The console's collector and a `fleet ecmp apply` may write the same file: the chain stays one line."""
    path = tmp_path / "fleet.db"
    open_for_writing(path).close()
    writers = [StoreWriter(path, linger_s=0.0).start() for _ in range(2)]

    def put(writer: StoreWriter, base: int) -> None:
        for k in range(40):
            writer.put_action(_action(base + k))
            writer.flush(10)

    threads = [threading.Thread(target=put, args=(w, i * 100)) for i, w in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for writer in writers:
        writer.close()
    result = _verify(path)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] == 80


async def test_the_console_audit_screen_shows_the_chain_and_its_break(audited: Path) -> None:
    app = FleetApp(Config(db_path=audited, refresh_s=0.3, diagnose=False),
                   Feed(lambda: open_store_loader(audited), refresh_s=0.3))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("A")
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        await asyncio.wait_for(screen.loaded.wait(), 10)
        with StoreReader(audited) as reader:
            head = reader.audit_head()
        assert str(screen.query_one("#audit-chain", Static).render()) == f" CHAIN INTACT  {head.words()}"
        _tamper(audited, "DROP TRIGGER actions_no_delete", "DELETE FROM actions WHERE id = 2")
        screen.loaded.clear()
        await pilot.press("r")
        await asyncio.wait_for(screen.loaded.wait(), 10)
        shown = str(screen.query_one("#audit-chain", Static).render())
        assert shown.startswith(" CHAIN BROKEN  row 3 does not follow row 1")


def test_verify_against_a_printed_head_finds_a_full_recompute(audited: Path) -> None:
    with StoreReader(audited) as reader:
        printed = reader.audit_head().hash
    held = CliRunner().invoke(main, ["audit", "verify", "--db", str(audited), "--head", printed])
    assert held.exit_code == 0 and "holds the printed head" in held.stdout
    with StoreWriter(audited) as writer:  # rows added since the report are fine
        writer.put_action(_action(7))
    assert CliRunner().invoke(main, ["audit", "verify", "--db", str(audited), "--head", printed]).exit_code == 0
    _recompute_everything(audited)
    rewritten = CliRunner().invoke(main, ["audit", "verify", "--db", str(audited), "--head", printed])
    assert rewritten.exit_code == 1
    assert rewritten.stderr.startswith("fleet: audit chain BROKEN: no row of the chain has the printed head")


def test_reports_and_the_baseline_commands_print_the_head(audited: Path, tmp_path: Path) -> None:
    nodes = ("gpu001", "gpu002")
    with StoreWriter(audited) as writer:
        for month, p99 in (("june", 1.6), ("july", 2.4)):
            baseline = Baseline(month, 1_800_000_000.0, "fleet test", FleetShape(nodes, (), (), (0,)),
                                parts={part_id("pair", 0, *nodes): {"p99_usec": p99}})
            writer.put_baseline(month, baseline.ts, baseline.to_json())
    with StoreReader(audited) as reader:
        head = reader.audit_head()
    report = tmp_path / "diff.html"
    result = CliRunner().invoke(main, ["baseline", "diff", "june", "july", "--report", str(report),
                                       "--db", str(audited)])
    assert result.exit_code == 0, result.output
    line = f"Audit head when generated: 5 rows, sha256 {head.hash}"
    assert result.stdout.splitlines()[-1].startswith(line)
    assert line in report.read_text() and line in report.with_suffix(".md").read_text()
    as_json = CliRunner().invoke(main, ["baseline", "diff", "june", "july", "--json", "--db", str(audited)])
    assert json.loads(as_json.stdout)["audit_head"] == {"rows": 5, "last_id": 5, "sha256": head.hash}


def test_a_head_that_is_not_a_digest_is_never_printed_raw() -> None:
    assert audit_words({"rows": 1, "sha256": "\x1b]0;owned\x07" + "a" * 56}).startswith("Audit head: not a SHA-256")
