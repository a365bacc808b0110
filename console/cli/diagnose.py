"""`fleet diagnose`: the findings open now, judged over the stored window, optionally after collecting it.

Prints the open findings (worst first) as text: what, where, since when, the
evidence and the next step; or with ``--json`` one JSON list of objects with
kind, severity, node, nic, switch, port, job, evidence, next_step, basis and the
finding's life (opened_at, last_seen, closed_at, active, reopened). The same
``DiagnosisWatch`` as the console's keeps the life: a finding an earlier run (or
the console) raised keeps its ``opened_at``, and only what opened or closed is
written to the store as events, so the Events screen shows the transitions.
Exit status 0 whether or not something was found: findings are a result, not a
failure; 2 on a bad option, inventory or history file; 3 when there is no
history, or the transitions could not be stored (docs/exit-codes.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path

import click

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
from fleet.console.diagnosis_watch import DIAGNOSIS_WINDOW_S, DiagnosisWatch
from fleet.fabric.diagnosis import Thresholds
from fleet.fabric.finding_life import FindingLife
from fleet.fabric.rules.thresholds import with_overrides
from fleet.store.writer import StoreWriter

DEFAULT_WINDOW_S = DIAGNOSIS_WINDOW_S
"""The console's window (30 s): what the findings say is true now, and a fault fixed a minute ago no
longer shows. A longer ``--window`` judges a longer stretch (e.g. after a collection of several minutes)."""


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
                   thresholds: Thresholds | None = None, writer: StoreWriter | None = None) -> list[FindingLife]:
    """The findings open at the newest stored data, with their life; transitions go to ``writer`` as events."""
    open_reader(db_path).close()  # a missing or foreign file: one line and its exit code
    watch = DiagnosisWatch(db_path, cabling=cabling, window_s=window_s, thresholds=thresholds)
    transitions = watch.run()
    if writer is not None:
        for event in transitions.events:
            writer.put_event(event)
    return list(transitions.findings)


def finding_lines(life: FindingLife, now: float) -> list[str]:
    """A finding as plain text: the line that names it, its evidence, since when, its next step."""
    f = life.finding
    gpu = str(f.evidence.get("gpu", ""))
    part = " ".join(p for p in (f.node, f.nic or gpu, f.switch, f.port) if p) or f"job {f.job}"
    held = "" if life.active else ", evidence gone, held open"
    lines = [f"{f.severity.value:8s} {f.kind:20s} {part}  (open {_age(now - life.opened_at)}{held})"]
    numbers = ", ".join(f"{k}={v}" for k, v in f.evidence.items()
                        if isinstance(v, int | float | str) and not isinstance(v, bool) and v != "" and k != "gpu")
    if numbers:
        lines.append(f"         evidence: {numbers}")
    if f.next_step:
        lines.append(f"         next: {f.next_step}")
    return lines


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


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
      fleet diagnose --threshold gpu_temp_warn_c=80 --threshold nccl_ib_qps_per_connection=4
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
        print_json([life.as_json() for life in findings])
    else:
        if not findings:
            click.echo("No findings.")
        now = time.time()
        for life in findings:
            for line in finding_lines(life, now):
                click.echo(line)
    if store_failing is not None:
        fail(f"findings not stored in {path}: {store_failing}", ExitCode.NO_DATA)


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"{text!r}: expected NAME=VALUE")
    return name.strip(), value.strip()
