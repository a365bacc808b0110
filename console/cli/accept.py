"""`fleet accept --criteria FILE [--report PATH] [--json]`: the acceptance walkthrough from the command line.

Runs the suite the criteria file asks for (progress on stderr), then each
check in the file's order, printing PASS/FAIL with its evidence as it is
judged; stores the suite as a baseline labelled with the criteria's title and
the report's data as an ``acceptance`` record (what the console's walkthrough
shows in read-only mode); writes the HTML report, the Markdown beside it and,
when Chromium is here, the PDF: at ``--report`` or in the reports folder
(``$XDG_DATA_HOME/fleet/reports``), and names them. Exits 0 when every check
passes, 1 when any fails (after printing everything), 2 on a bad criteria file
or inventory or in read-only mode, 3 when the history could not be written.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click
import hostlist

from fleet.collectors.accept_run import acceptance_record, run_acceptance
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
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.console.cli.suite_progress import ProgressView
from fleet.console.config import ConfigError, load_config
from fleet.console.report_write import default_report_path, write_report_files
from fleet.fabric.acceptance import CriteriaError, parse_criteria
from fleet.fabric.report_model import acceptance_report, audit_words
from fleet.store.reader import audit_head_at


@click.command()
@click.option("--criteria", "criteria_path", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              required=True, help="Acceptance criteria TOML (see docs/acceptance-criteria.example.toml).")
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node).")
@click.option("--report", "report_path", type=click.Path(path_type=Path), default=None,
              help="Write the HTML report here, the Markdown and the PDF beside it (default: the reports folder, "
                   "$XDG_DATA_HOME/fleet/reports).")
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
        head = audit_head_at(path)
        report = acceptance_report(criteria, baseline, run.results, run.findings, time.time(),
                                   head.as_json() if head is not None else None)
        writer.put_probe(acceptance_record(report, run.suite.run_id))
        stored = writer.flush(timeout=60) and stored
        store_failing = None if stored else writer.stats().failing or "timed out after 60 s"
    written = write_report_files(report, report_path or default_report_path(_reports_dir(), "acceptance"))
    if as_json:
        print_json(dict(report.data) | {"sha256": report.sha256, "report": [str(p) for p in written.paths],
                                        "report_note": written.note})
    else:
        for line in written.paths:
            click.echo(f"report: {line}")
        if written.note:
            click.echo(f"report: {written.note}")
        click.echo(audit_words(report.data.get("audit_head")))
    failed = [r.check.id for r in run.results if not r.passed]
    if store_failing is not None:
        fail(f"the run was not stored in {path}: {store_failing}", ExitCode.NO_DATA)
    if failed:
        fail(f"{len(failed)} of {len(run.results)} checks failed: {', '.join(failed)}", ExitCode.FAILED)
    click.echo(f"accepted: all {len(run.results)} checks pass", err=True)


def _reports_dir() -> Path:
    """The configured reports folder (``reports_dir``, ``FLEET_REPORTS_DIR``, else ``$XDG_DATA_HOME/fleet/reports``)."""
    try:
        return load_config({}, os.environ, time.time()).reports_folder
    except ConfigError as error:
        fail(str(error), ExitCode.USAGE)
