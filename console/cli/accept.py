"""`fleet accept --criteria FILE [--report PATH] [--json]`: the acceptance walkthrough from the command line.

Runs the suite the criteria file asks for (progress on stderr), then each
check in the file's order, printing PASS/FAIL with its evidence as it is
judged; stores the suite as a baseline labelled with the criteria's title;
writes the HTML report (and Markdown beside it) with ``--report``. Exits 0
when every check passes, 1 when any fails (after printing everything), 2 on a
bad criteria file or inventory, 3 when the history could not be written.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
import hostlist

from fleet.collectors.accept_run import run_acceptance
from fleet.console.cli.common import (
    db_option,
    db_path_or_default,
    fail,
    interrupted,
    inventory_option,
    json_option,
    open_inventory,
    open_writer,
    print_json,
    run_async,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.suite_progress import ProgressView
from fleet.console.report_write import write_report
from fleet.fabric.acceptance import CriteriaError, parse_criteria
from fleet.fabric.report_model import acceptance_report, audit_words
from fleet.store.reader import audit_head_at


@click.command()
@click.option("--criteria", "criteria_path", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              required=True, help="Acceptance criteria TOML (see docs/acceptance-criteria.example.toml).")
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write the HTML report here (and a Markdown file beside it).")
@inventory_option
@db_option
@json_option
def accept(criteria_path: Path, nodes_expr: str | None, report_path: Path | None, inventory_path: Path | None,
           db_path: Path | None, as_json: bool) -> None:
    """Run the agreed acceptance checks and write the report the customer keeps."""
    try:
        criteria = parse_criteria(criteria_path.read_text(encoding="utf-8"), source=str(criteria_path))
        nodes = tuple(hostlist.expand_hostlist(nodes_expr)) if nodes_expr else None
    except (CriteriaError, hostlist.BadHostlist) as error:
        fail(str(error), ExitCode.USAGE)
    inventory = open_inventory(inventory_path)
    path = db_path_or_default(db_path)
    view = ProgressView(sys.stderr, live=sys.stderr.isatty())
    with open_writer(path) as writer:
        try:
            run = run_async(run_acceptance(inventory, criteria, writer=writer, db_path=path, nodes=nodes,
                                             on_progress=view, on_check=view.check))
        except KeyboardInterrupt:
            view.close()
            interrupted("interrupted; probe servers stopped")
        baseline = run.suite.baseline
        writer.put_baseline(baseline.label, baseline.ts, baseline.to_json())
        stored = writer.flush(timeout=60)
        store_failing = None if stored else writer.stats().failing or "timed out after 60 s"
    head = audit_head_at(path)
    report = acceptance_report(criteria, baseline, run.results, run.findings, time.time(),
                               head.as_json() if head is not None else None)
    written = [str(p) for p in write_report(report, report_path)] if report_path is not None else []
    if as_json:
        print_json(dict(report.data) | {"sha256": report.sha256, "report": written})
    else:
        for line in written:
            click.echo(f"report: {line}")
        click.echo(audit_words(report.data.get("audit_head")))
    failed = [r.check.id for r in run.results if not r.passed]
    if store_failing is not None:
        fail(f"the run was not stored in {path}: {store_failing}", ExitCode.NO_DATA)
    if failed:
        fail(f"{len(failed)} of {len(run.results)} checks failed: {', '.join(failed)}", ExitCode.FAILED)
    click.echo(f"accepted: all {len(run.results)} checks pass", err=True)
