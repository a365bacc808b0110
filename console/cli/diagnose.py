"""`fleet diagnose`: findings over the stored window, optionally after collecting it first.

Prints the findings (worst first) as text, or with ``--json`` as one JSON list
of objects with kind, severity, node, nic, switch, port, job, evidence and
next_step. Findings are also written to the store as events (kind = the
finding's kind), so the console's Events screen shows them. Exit status 0
whether or not something was found: findings are a result, not a failure; 2 on
a bad option, inventory or history file; 3 when there is no history, or the
findings could not be stored (docs/exit-codes.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path

import click

from fleet.collectors.diagnose_input import read_input
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import CablingRow, Inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.console.cli.common import (
    db_option,
    db_path_or_default,
    fail,
    inventory_option,
    json_option,
    open_inventory,
    open_reader,
    open_writer,
    print_json,
    run_async,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.fabric.diagnosis import Thresholds, finding_event, finding_json
from fleet.fabric.diagnosis import diagnose as run_rules
from fleet.fabric.events import Finding
from fleet.fabric.rules.thresholds import with_overrides
from fleet.store.writer import StoreWriter

DEFAULT_WINDOW_S = 300.0
"""Five minutes: long enough for a flapping link to go down again and for counters to move past
their noise, short enough that a fault fixed a while ago no longer shows."""


async def collect_for(inventory: Inventory, writer: StoreWriter, seconds: float,
                      settings: CollectSettings | None = None) -> None:
    """One full round (facts and LLDP neighbours included), then ``seconds`` of streaming into the store."""
    await Collector(inventory, writer, settings=settings).run_once()
    collector = Collector(inventory, writer, settings=settings)
    task = asyncio.ensure_future(collector.run())
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout=seconds)
    finally:
        await collector.close()
        await task


def diagnose_store(db_path: Path, *, window_s: float, cabling: Sequence[CablingRow] = (),
                   thresholds: Thresholds | None = None, writer: StoreWriter | None = None) -> list[Finding]:
    """Diagnose the window ending at the newest stored data; findings go to ``writer`` as events when given."""
    reader = open_reader(db_path)
    try:
        findings = run_rules(read_input(reader, window_s=window_s, cabling=cabling), thresholds)
    finally:
        reader.close()
    if writer is not None:
        now = time.time()
        for finding in findings:
            writer.put_event(finding_event(finding, now))
    return findings


@click.command("diagnose")
@click.option("--window", "window_s", type=float, default=DEFAULT_WINDOW_S, show_default=True,
              help="Seconds of history to judge, up to the newest data.")
@inventory_option
@db_option
@click.option("--collect", "collect_s", type=float, default=None,
              help="First collect this many seconds from the inventory's hosts into the database.")
@click.option("--threshold", "overrides", multiple=True, metavar="NAME=VALUE",
              help="Change one limit of fabric.rules.thresholds.Thresholds (repeatable), e.g. gpu_temp_warn_c=80.")
@json_option
def diagnose(window_s: float, inventory_path: Path | None, db_path: Path | None, collect_s: float | None,
             overrides: tuple[str, ...], as_json: bool) -> None:
    """Name what is broken: links, optics, congestion, spines, GPUs, QPs, hosts, latency.

    \b
    Examples:
      fleet diagnose --json
      fleet diagnose --collect 10 --inventory sim/inventory.toml --json
      fleet diagnose --threshold gpu_temp_warn_c=80 --threshold qp_count_warn=512
    """
    if window_s <= 0:
        fail("--window must be positive", ExitCode.USAGE)
    try:
        thresholds = with_overrides(Thresholds(), dict(_pair(text) for text in overrides))
    except ValueError as error:
        fail(f"--threshold {error}", ExitCode.USAGE)
    path = db_path_or_default(db_path)
    cabling: Sequence[CablingRow] = ()
    if inventory_path is not None or collect_s is not None:
        inventory = open_inventory(inventory_path)
        cabling = inventory.cabling
    writer = open_writer(path)
    try:
        if collect_s is not None:
            run_async(collect_for(inventory, writer, collect_s))
            writer.flush(timeout=30)
        findings = diagnose_store(path, window_s=window_s, cabling=cabling, thresholds=thresholds, writer=writer)
        stored = writer.flush(timeout=30)
        store_failing = None if stored else writer.stats().failing or "timed out after 30 s"
    finally:
        writer.close()
    if as_json:
        print_json([finding_json(f) for f in findings])
    else:
        if not findings:
            click.echo("No findings.")
        for f in findings:
            gpu = str(f.evidence.get("gpu", ""))
            part = " ".join(p for p in (f.node, f.nic or gpu, f.switch, f.port) if p) or f"job {f.job}"
            click.echo(f"{f.severity.value:8s} {f.kind:20s} {part}")
    if store_failing is not None:
        fail(f"findings not stored in {path}: {store_failing}", ExitCode.NO_DATA)


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"{text!r}: expected NAME=VALUE")
    return name.strip(), value.strip()
