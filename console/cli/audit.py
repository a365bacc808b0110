"""`fleet audit` and `fleet audit verify`: every recorded change to a machine, and its hash chain checked.

``fleet audit`` lists the rows oldest first and ends with the chain's head (rows
and SHA-256), the same head every acceptance and baseline report prints:
compare the two and a rewrite of the history since the report shows.
``fleet audit verify`` walks the chain and names the first row that breaks it
(docs/audit.md says what that does and does not protect against).

Exit status (docs/exit-codes.md): 0 listed / chain intact; 1 the chain is broken;
2 ``--db`` is not a fleet history (one line, never a traceback); 3 no history there.
Both only read: they never create or upgrade a file.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from fleet.console.cli.common import (
    db_option,
    fail,
    inventory_option,
    json_option,
    open_reader,
    print_json,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.store.audit import GENESIS


@click.group(invoke_without_command=True)
@inventory_option
@db_option
@json_option
@click.pass_context
def audit(ctx: click.Context, inventory_path: Path | None, db_path: Path | None, as_json: bool) -> None:
    """Every recorded change to a machine (the append-only, hash-chained audit), oldest first."""
    del inventory_path  # accepted like every command; the audit needs only the store
    if ctx.invoked_subcommand is not None:
        return
    with open_reader(db_path) as reader:
        rows = reader.audit_rows()
        head = reader.audit_head()
    if as_json:
        print_json({"actions": [
            {"id": r.id, "ts": r.ts, "actor": r.actor, "target": r.target, "action": r.action, "step": r.step,
             "commands": list(r.record.commands), "output": r.output, "before": r.record.before,
             "after": r.record.after, "verdict": r.verdict, "prev_hash": r.prev_hash, "hash": r.hash}
            for r in rows], "head": head.as_json()})
        return
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.ts))
        what = r.verdict or "; ".join(r.record.commands)
        click.echo(f"{r.id:>5} {when} {r.actor} {r.target} {r.action} {r.step}: {what}")
    click.echo(f"audit: {head.words()}")


@audit.command()
@db_option
@click.option("--head", "printed_head", metavar="SHA256", default=None,
              help="A head printed before (a report's 'Audit head', `fleet audit`): check the chain still holds it.")
@json_option
@click.pass_context
def verify(ctx: click.Context, db_path: Path | None, printed_head: str | None, as_json: bool) -> None:
    """Walk the hash chain; exit 1 naming the first row that breaks it (edited, deleted, inserted)."""
    parent = ctx.parent.params if ctx.parent is not None else {}
    chosen = db_path or parent.get("db_path")
    with open_reader(chosen) as reader:
        verdict = reader.verify_audit()
        hashes = {row.hash for row in reader.audit_rows()} | {GENESIS}
    problem = verdict.problem
    if not problem and printed_head is not None and printed_head.strip().lower() not in hashes:
        problem = (f"no row of the chain has the printed head {printed_head.strip()[:64]!r}: the history was "
                   "rewritten (or cut) since it was printed")
    if as_json:
        print_json({"intact": not problem, "rows": verdict.rows, "head": verdict.head.as_json(),
                    "problem": problem, "row": verdict.row})
    elif not problem:
        held = " and holds the printed head" if printed_head is not None else ""
        click.echo(f"audit chain intact{held}: {verdict.head.words()}")
    if problem:
        fail(f"audit chain BROKEN: {problem}", ExitCode.FAILED)
