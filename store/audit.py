"""The audit of changes to machines as a hash chain: every row carries the SHA-256 of the row
before it and of its own content, so an edit, a deletion or an insertion after the fact shows.

Why: triggers make the ``actions`` table append-only for fleet, but anyone who can write the
file can drop a trigger, delete a row or insert a forged, back-dated one. With the chain,
:func:`verify_chain` names the first row that no longer follows from the one before it, and
the head hash printed in every acceptance and baseline report (and by ``fleet audit``) lets a
reader of a printed report see whether the history was rewritten since. What it does not
protect against is in docs/audit.md.

The canonical content of a row (what is hashed) is one line of JSON, UTF-8::

    {"action":...,"actor":...,"after":...,"before":...,"commands":...,"id":N,"output":...,
     "prev":"<previous row's hash>","step":...,"target":...,"ts":"<repr of the float>","verdict":...}

keys sorted, no whitespace (``separators=(",", ":")``), non-ASCII escaped (``ensure_ascii``),
every text column exactly as stored (``commands``, ``before`` and ``after`` are JSON text
already and are hashed as that text), ``id`` an integer, ``ts`` the shortest decimal that
reads back as the same IEEE-754 double (Python's ``repr``), so no two stored times share a
text. ``hash = SHA-256(canonical).hexdigest()``; the first row's ``prev`` is :data:`GENESIS`.
The table ``audit_head`` keeps the number of rows, the last id and the last hash, written in
the same transaction as each row, so that rows deleted from the end show too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from typing import NamedTuple

from fleet.fabric.records import ActionRecord
from fleet.store.rows import row_action

GENESIS = "0" * 64
"""The ``prev`` of the first row: no row before it."""

TRIGGERS = ("actions_no_update", "actions_no_delete", "actions_chained")
"""The triggers that keep fleet (and anyone using SQLite by hand) from changing rows or inserting
rows without a hash; a chain whose triggers were dropped is reported broken."""

ROW_COLUMNS = "id, ts, actor, target, action, step, commands, output, before, after, verdict, prev_hash, hash"


class AuditRow(NamedTuple):
    """One ``actions`` row as stored, with its place in the chain."""

    id: int
    ts: float
    actor: str
    target: str
    action: str
    step: str
    commands: str
    output: str
    before: str
    after: str
    verdict: str
    prev_hash: str
    hash: str

    @property
    def record(self) -> ActionRecord:
        """The row as the record it was written from (commands, before and after parsed)."""
        return row_action(self[1:11])


class AuditHead(NamedTuple):
    """Where the chain ends: ``rows`` rows, the last with ``last_id`` and hash ``hash``
    (:data:`GENESIS` while the audit is empty). Print it, and a later rewrite shows."""

    rows: int
    last_id: int
    hash: str

    def words(self) -> str:
        return f"{self.rows} row{'s' if self.rows != 1 else ''}, head sha256 {self.hash}"

    def as_json(self) -> dict[str, int | str]:
        """What reports embed and `fleet audit --json` prints."""
        return {"rows": self.rows, "last_id": self.last_id, "sha256": self.hash}


EMPTY_HEAD = AuditHead(0, 0, GENESIS)


class ChainVerdict(NamedTuple):
    """The result of :func:`verify_chain`: ``problem`` is "" when the chain holds, else the first
    break in words; ``row`` is the id of the first row that breaks it (None when the break is not
    one row's: dropped triggers, rows missing at the end)."""

    rows: int
    head: AuditHead
    problem: str = ""
    row: int | None = None

    @property
    def intact(self) -> bool:
        return not self.problem


def canonical(row: AuditRow, prev_hash: str) -> bytes:
    """The bytes that are hashed for ``row`` following a row whose hash is ``prev_hash``."""
    document = {
        "id": int(row.id), "ts": repr(float(row.ts)), "actor": row.actor, "target": row.target,
        "action": row.action, "step": row.step, "commands": row.commands, "output": row.output,
        "before": row.before, "after": row.after, "verdict": row.verdict, "prev": prev_hash,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def row_hash(row: AuditRow, prev_hash: str) -> str:
    """The SHA-256 (hex) of ``row``'s canonical content after ``prev_hash``."""
    return hashlib.sha256(canonical(row, prev_hash)).hexdigest()


def read_head(conn: sqlite3.Connection) -> AuditHead:
    """The head as last written (the empty head for an audit with no rows)."""
    found = conn.execute("SELECT rows, last_id, hash FROM audit_head WHERE id = 1").fetchone()
    return AuditHead(int(found[0]), int(found[1]), str(found[2])) if found else EMPTY_HEAD


def append(conn: sqlite3.Connection, values: tuple[object, ...]) -> AuditRow:
    """Insert one row (``ts, actor, target, action, step, commands, output, before, after, verdict``
    as stored) at the end of the chain and move the head; inside the caller's write transaction,
    so two writers never chain from the same head."""
    head = read_head(conn)
    newest = conn.execute("SELECT max(id) FROM actions").fetchone()[0] or 0
    draft = AuditRow._make((max(int(newest), head.last_id) + 1, *values, head.hash, ""))
    row = draft._replace(hash=row_hash(draft, head.hash))
    conn.execute(f"INSERT INTO actions ({ROW_COLUMNS}) VALUES ({', '.join('?' * 13)})", row)
    conn.execute("INSERT INTO audit_head (id, rows, last_id, hash) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE "
                 "SET rows = excluded.rows, last_id = excluded.last_id, hash = excluded.hash",
                 (head.rows + 1, row.id, row.hash))
    return row


def rows(conn: sqlite3.Connection) -> Iterator[AuditRow]:
    """Every row, oldest first."""
    for found in conn.execute(f"SELECT {ROW_COLUMNS} FROM actions ORDER BY id"):
        yield AuditRow(*found)


def verify_chain(conn: sqlite3.Connection) -> ChainVerdict:
    """Walk the chain from the first row; the first row that does not follow, or a head that does not
    match the last row, or a missing trigger, is the verdict's problem."""
    recorded = read_head(conn)
    prev, prev_id, count = GENESIS, 0, 0
    for row in rows(conn):
        count += 1
        if row.prev_hash != prev:
            where = f"row {prev_id}" if prev_id else "the start of the audit"
            gap = f" (ids jump from {prev_id} to {row.id}: rows deleted)" if prev_id and row.id != prev_id + 1 else ""
            return ChainVerdict(count, recorded, f"row {row.id} does not follow {where}{gap}: a row before it was "
                                "deleted, inserted, or edited and re-hashed", row.id)
        if row_hash(row, prev) != row.hash:
            return ChainVerdict(count, recorded, f"row {row.id}'s content does not match its hash: edited, or "
                                "inserted without the chain", row.id)
        prev, prev_id = row.hash, row.id
    found = AuditHead(count, prev_id, prev)
    if found != recorded:
        return ChainVerdict(count, recorded, f"the chain ends at row {prev_id} ({count} rows) but the head recorded "
                            f"{recorded.words()} at row {recorded.last_id}: rows were deleted from the end, or "
                            "added without the head")
    present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    dropped = [name for name in TRIGGERS if name not in present]
    if dropped:
        return ChainVerdict(count, recorded, f"trigger{'s' if len(dropped) > 1 else ''} {', '.join(dropped)} "
                            "dropped: the table is no longer append-only")
    return ChainVerdict(count, recorded)
