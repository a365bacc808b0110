"""`fleet baseline take|list|diff`: the monthly network baseline, stored in the history and compared.

``take`` runs the standard suite (``fleet.collectors.baseline_run``) and stores the
baseline (shape, software versions, every part's numbers) under its label;
``list`` shows the stored ones, numbered oldest first; ``diff A B`` compares
two (A and B: a label, newest of that label, or a number from ``list``) and,
with ``--report PATH``, writes the HTML report and a Markdown file beside it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
import hostlist

from fleet.collectors.baseline_run import SuiteSettings, run_suite
from fleet.console.cli.common import (
    db_option,
    db_path_or_default,
    fail,
    interrupted,
    inventory_option,
    json_option,
    open_inventory,
    open_reader,
    open_writer,
    print_json,
    run_async,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.console.cli.suite_progress import ProgressView
from fleet.console.report_write import write_report
from fleet.fabric.acceptance import CriteriaError, parse_rails
from fleet.fabric.baseline import Baseline, diff
from fleet.fabric.pairing import MODES
from fleet.fabric.report_model import audit_words, diff_report, utc_words
from fleet.store.paths import default_db_path
from fleet.store.reader import audit_head_at


@click.group()
def baseline() -> None:
    """Monthly network baseline: take one, list them, diff two."""


@baseline.command()
@click.option("--label", default="", help="Name of this baseline (default: the date and time).")
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node).")
@click.option("--mode", type=click.Choice(MODES), default="mesh", show_default=True, help="Link-test pairing.")
@click.option("--sample-rounds", type=int, default=4, show_default=True)
@click.option("--rails", "rails_text", default="0-7", show_default=True)
@click.option("--max-bytes", default="1G", show_default=True, help="Largest all-reduce message.")
@click.option("--no-fleet-allreduce", is_flag=True, help="Skip the all-reduce across every node.")
@inventory_option
@db_option
@read_only_option
@json_option
def take(label: str, nodes_expr: str | None, mode: str, sample_rounds: int, rails_text: str, max_bytes: str,
         no_fleet_allreduce: bool, inventory_path: Path | None, db_path: Path | None, read_only_flag: bool,
         as_json: bool) -> None:
    """Run the standard suite and store it as a baseline."""
    refuse_if_read_only(read_only_flag, "runs the link test, bandwidth probes and all-reduce on the fleet")
    inventory = open_inventory(inventory_path)
    try:
        rails = parse_rails(rails_text)
        nodes = tuple(hostlist.expand_hostlist(nodes_expr)) if nodes_expr else None
    except (CriteriaError, hostlist.BadHostlist) as error:
        fail(str(error), ExitCode.USAGE)
    settings = SuiteSettings(nodes=nodes, rails=rails, linktest_mode=mode, sample_rounds=sample_rounds,
                             allreduce_max_bytes=max_bytes, fleet_allreduce=not no_fleet_allreduce)
    path = db_path_or_default(db_path)
    view = ProgressView(sys.stderr, live=sys.stderr.isatty())
    with open_writer(path) as writer:
        try:
            run = run_async(run_suite(inventory, settings, writer=writer, db_path=path, label=label,
                                        on_progress=view))
        except KeyboardInterrupt:
            view.close()
            interrupted("interrupted; probe servers stopped, nothing stored")
        view.close()
        writer.put_baseline(run.baseline.label, run.baseline.ts, run.baseline.to_json())
        if not writer.flush(timeout=60):
            fail(f"could not write to {path}: {writer.stats().failing or 'timed out'}", ExitCode.NO_DATA)
    head = audit_head_at(path)
    if as_json:
        print_json(run.baseline.to_json() | {"run_id": run.run_id,
                                             "audit_head": head.as_json() if head is not None else None})
    else:
        b = run.baseline
        click.echo(f"baseline {b.label!r}: {len(b.parts)} parts of {len(b.shape.nodes)} nodes measured "
                   f"({len(b.unreachable)} unreachable, {len(b.notes)} notes); stored in {path}")
        click.echo(f"audit: {head.words()}" if head is not None else "audit: not read")


def _stored(db_path: Path | None) -> list[Baseline]:
    path = db_path or default_db_path()
    if not path.exists():
        return []
    with open_reader(path) as reader:
        found = []
        for _ts, _name, data in reader.baselines():
            try:
                found.append(Baseline.from_json(data))
            except (ValueError, KeyError, TypeError):
                continue  # a baseline of another format version; list and diff skip it
        return found


@baseline.command(name="list")
@db_option
@json_option
def list_(db_path: Path | None, as_json: bool) -> None:
    """Stored baselines, oldest first, numbered for `fleet baseline diff`."""
    rows = [{"number": i, "label": b.label, "taken": utc_words(b.ts), "ts": b.ts, "nodes": len(b.shape.nodes),
             "parts": len(b.parts), "unreachable": len(b.unreachable), "tool_version": b.tool_version}
            for i, b in enumerate(_stored(db_path), start=1)]
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("no baselines stored yet: run `fleet baseline take`")
    for row in rows:
        click.echo(f"{row['number']:>3}  {row['taken']}  {row['label']}  ({row['nodes']} nodes, {row['parts']} parts)")


def _pick(baselines: list[Baseline], key: str) -> Baseline:
    if key.isdigit() and 1 <= int(key) <= len(baselines):
        return baselines[int(key) - 1]
    named = [b for b in baselines if b.label == key]
    if not named:
        fail(f"no baseline {key!r} (see `fleet baseline list`)", ExitCode.USAGE)
    return named[-1]


@baseline.command(name="diff")
@click.argument("before")
@click.argument("after")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write an HTML report here (and a Markdown file beside it).")
@db_option
@json_option
def diff_(before: str, after: str, report_path: Path | None, db_path: Path | None, as_json: bool) -> None:
    """What regressed or improved from BEFORE to AFTER (labels or numbers from `list`)."""
    baselines = _stored(db_path)
    result = diff(_pick(baselines, before), _pick(baselines, after))
    head = audit_head_at(db_path or default_db_path())
    head_json = head.as_json() if head is not None else None
    written: list[str] = []
    if report_path is not None:
        written = [str(p) for p in write_report(diff_report(result, time.time(), head_json), report_path)]
    if as_json:
        print_json(result.to_json() | {"report": written, "audit_head": head_json})
        return
    click.echo(f"{len(result.regressions)} regression(s), {len(result.improvements)} improvement(s), "
               f"{len(result.new_parts)} new, {len(result.gone_parts)} gone")
    for change in result.changes:
        pct = f" ({change.delta_pct:+.1f} %)" if change.delta_pct is not None else ""
        click.echo(f"  {change.rank.name.lower():<8} {change.part} {change.metric}: "
                   f"{change.before:g} -> {change.after:g}{pct}")
    if result.configuration:
        click.echo(f"{len(result.configuration)} configuration change(s) (fleet check):")
    for text_change in result.configuration:
        click.echo(f"  {text_change.rank.name.lower():<8} {text_change.subject}: {text_change.before or '-'} -> "
                   f"{text_change.after or '-'}")
    for path in written:
        click.echo(f"report: {path}")
    click.echo(audit_words(head_json))
