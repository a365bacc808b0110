"""`fleet collect`: the collector, headless, into the store."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from pathlib import Path

import click

from collectors.engine import Collector, RoundSummary
from collectors.inventory import Inventory
from console.cli.common import (
    db_option,
    db_path_or_default,
    inventory_option,
    json_option,
    open_inventory,
    print_json,
)
from store.writer import StoreWriter


@click.command()
@inventory_option
@db_option
@click.option("--once", is_flag=True, help="One round over every host, then exit.")
@click.option("--duration", type=float, default=None, help="Collect for this many seconds, then exit.")
@click.option("--interval", type=float, default=None, help="Seconds between samples (default: the inventory's).")
@click.option("--tofu", is_flag=True, help="Trust unknown host keys on first use and record them.")
@json_option
def collect(inventory_path: Path | None, db_path: Path | None, once: bool, duration: float | None,
            interval: float | None, tofu: bool, as_json: bool) -> None:
    """Collect every node, switch and the Slurm head into the history database."""
    inventory = open_inventory(inventory_path)
    writer = StoreWriter(db_path_or_default(db_path)).start()
    try:
        summary = asyncio.run(_collect(inventory, writer, once, duration, interval, tofu))
    except KeyboardInterrupt:
        summary = None
    finally:
        writer.flush(timeout=30)
        stats = writer.stats()
        writer.close()
    if summary is None:
        sys.exit(130)
    document = summary.as_json() | {"store": {"dropped_gauge_samples": stats.dropped, "failing": stats.failing}}
    if as_json:
        print_json(document)
    else:
        failed = ", ".join(f"{n} {state}" for state, n in sorted(summary.hosts_failed.items())) or "none"
        click.echo(f"{summary.hosts_ok} hosts ok, failed: {failed}; "
                   f"{summary.samples} samples in {summary.seconds:.1f} s")


async def _collect(inventory: Inventory, writer: StoreWriter, once: bool, duration: float | None,
                   interval: float | None, tofu: bool) -> RoundSummary:
    collector = Collector(inventory, writer, interval_s=interval, tofu=tofu,
                          on_round=_progress if sys.stderr.isatty() else None)
    if once:
        return await collector.run_once()
    task = asyncio.ensure_future(collector.run())
    started = time.monotonic()
    try:
        if duration is None:
            await task
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout=duration)
    finally:
        await collector.close()
        await task
    summary = collector.summary()
    return RoundSummary(summary.ts, summary.hosts_ok, summary.hosts_failed, summary.samples,
                        time.monotonic() - started, summary.states)


def _progress(summary: RoundSummary) -> None:
    failed = sum(summary.hosts_failed.values())
    click.echo(f"\r{summary.seconds:6.0f} s  {summary.hosts_ok} ok  {failed} failing  "
               f"{summary.samples} samples", err=True, nl=False)
