"""`fleet db info` and `fleet db vacuum`: look after the history file.

A missing file exits 3, a file that is not a fleet history (not SQLite, another program's
tables, unreadable, a newer schema) exits 2, with one line saying which (docs/exit-codes.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from fleet.console.cli.common import db_option, history_errors, json_option
from fleet.store.paths import default_db_path


def _human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} GiB"


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


@click.group()
def db() -> None:
    """Inspect and compact the history database."""


@db.command()
@db_option
@json_option
def info(db_path: Path | None, as_json: bool) -> None:
    """Size, row counts, time span, schema version and bytes per stored sample."""
    from fleet.store.info import db_info

    path = db_path or default_db_path()
    with history_errors():
        found = db_info(path)
    if as_json:
        click.echo(json.dumps(found.as_dict(), indent=2))
        return
    click.echo(f"file            {found.path}")
    click.echo(f"size            {_human(found.size_bytes)}")
    click.echo(f"schema version  {found.schema_version}")
    if found.time_span is None:
        click.echo("time span       (no samples)")
    else:
        low, high = found.time_span
        click.echo(f"time span       {_when(low)} .. {_when(high)} ({(high - low) / 3600:.1f} h)")
    click.echo(f"stored samples  {found.stored_samples:,}")
    if found.bytes_per_sample is not None:
        click.echo(f"bytes/sample    {found.bytes_per_sample:.2f}")
    click.echo("rows")
    for table, count in found.rows.items():
        click.echo(f"  {table:<14}{count:>14,}")


@db.command()
@db_option
def vacuum(db_path: Path | None) -> None:
    """Checkpoint the write-ahead log and rebuild the file without free pages."""
    from fleet.store.info import vacuum as run_vacuum

    path = db_path or default_db_path()
    with history_errors():
        before, after = run_vacuum(path)
    click.echo(f"{path}: {_human(before)} -> {_human(after)}")
