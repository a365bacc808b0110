"""`fleet accept --criteria FILE [--report PATH] [--json]`: the acceptance walkthrough from the command line.

Runs the suite the criteria file asks for (progress on stderr), then each
check in the file's order, printing PASS/FAIL with its evidence as it is
judged; stores the suite as a baseline labelled with the criteria's title;
writes the HTML report (and Markdown beside it) with ``--report``. Exits 0
when every check passes, 1 when any fails (after printing everything).
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
    inventory_option,
    json_option,
    open_inventory,
    print_json,
    run_async,
)
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.console.cli.suite_progress import ProgressView
from fleet.console.report_write import write_report
from fleet.fabric.acceptance import CriteriaError, parse_criteria
from fleet.fabric.report_model import acceptance_report
from fleet.store.writer import StoreWriter


@click.command()
@click.option("--criteria", "criteria_path", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              required=True, help="Acceptance criteria TOML (see docs/acceptance-criteria.example.toml).")
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write the HTML report here (and a Markdown file beside it).")
@inventory_option
@db_option
@read_only_option
@json_option
def accept(criteria_path: Path, nodes_expr: str | None, report_path: Path | None, inventory_path: Path | None,
           db_path: Path | None, read_only_flag: bool, as_json: bool) -> None:
    """Run the agreed acceptance checks and write the report the customer keeps."""
    refuse_if_read_only(read_only_flag, "runs the link test, bandwidth probes and all-reduce on the fleet "
                                        "(the console's walkthrough shows the newest stored run in read-only mode)")
    try:
        criteria = parse_criteria(criteria_path.read_text(encoding="utf-8"), source=str(criteria_path))
        nodes = tuple(hostlist.expand_hostlist(nodes_expr)) if nodes_expr else None
    except (CriteriaError, hostlist.BadHostlist) as error:
        fail(str(error))
    inventory = open_inventory(inventory_path)
    path = db_path_or_default(db_path)
    view = ProgressView(sys.stderr, live=sys.stderr.isatty())
    with StoreWriter(path) as writer:
        try:
            run = run_async(run_acceptance(inventory, criteria, writer=writer, db_path=path, nodes=nodes,
                                             on_progress=view, on_check=view.check))
        except KeyboardInterrupt:
            view.close()
            click.echo("fleet: interrupted; probe servers stopped", err=True)
            sys.exit(130)
        baseline = run.suite.baseline
        writer.put_baseline(baseline.label, baseline.ts, baseline.to_json())
        writer.flush(timeout=60)
    report = acceptance_report(criteria, baseline, run.results, run.findings, time.time())
    written = [str(p) for p in write_report(report, report_path)] if report_path is not None else []
    if as_json:
        print_json(dict(report.data) | {"sha256": report.sha256, "report": written})
    else:
        for line in written:
            click.echo(f"report: {line}")
    failed = [r.check.id for r in run.results if not r.passed]
    if failed:
        fail(f"{len(failed)} of {len(run.results)} checks failed: {', '.join(failed)}")
    click.echo(f"accepted: all {len(run.results)} checks pass", err=True)
