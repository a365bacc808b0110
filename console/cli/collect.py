"""`fleet collect`: the collector, headless, into the store."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from pathlib import Path

import click

from fleet.collectors.engine import Collector, RoundSummary
from fleet.collectors.inventory import Inventory
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
from fleet.fabric.host_failures import failure_groups
from fleet.fabric.records import JobRecord
from fleet.store.types import WriterStats
from fleet.store.writer import StoreWriter


@click.command()
@inventory_option
@db_option
@click.option("--once", is_flag=True, help="One round over every host, then exit.")
@click.option("--duration", type=float, default=None, help="Collect for this many seconds, then exit.")
@click.option("--interval", type=float, default=None, help="Seconds between samples (default: the inventory's).")
@click.option("--tofu", is_flag=True, help="Trust unknown host keys on first use and record them.")
@click.option("--job-latency", is_flag=True,
              help="Also probe RDMA latency between a few node pairs of every running Slurm job each minute "
                   "(the console's Jobs screen plots it). Puts light traffic on the jobs' links.")
@read_only_option
@json_option
def collect(inventory_path: Path | None, db_path: Path | None, once: bool, duration: float | None,
            interval: float | None, tofu: bool, job_latency: bool, read_only_flag: bool, as_json: bool) -> None:
    """Collect every node, switch and the Slurm head into the history database.

    Exit status (docs/exit-codes.md): 0 every host answered; 1 some hosts failed; 3 no host
    answered, or the store cannot write (collection stops at once); 2 a bad inventory, or
    ``--job-latency`` in read-only mode.
    """
    if job_latency:
        refuse_if_read_only(read_only_flag, "with --job-latency starts perftest inside the running jobs")
    inventory = open_inventory(inventory_path)
    writer = open_writer(db_path_or_default(db_path))
    try:
        summary = run_async(_collect(inventory, writer, once, duration, interval, tofu,
                                     job_latency and not once))
    except KeyboardInterrupt:
        summary = None
    finally:
        writer.flush(timeout=30)  # returns at the next failed retry when the store is failing
        stats = writer.stats()
        writer.close()
    if summary is None:
        interrupted()
    groups = failure_groups(summary.states.values())
    document = summary.as_json() | {
        "samples_collected": summary.samples,
        "samples_written": stats.samples_written,
        "failures": [{"state": g.state.value, "cause": g.cause, "hosts": list(g.hosts)} for g in groups],
        "store": {"dropped_gauge_samples": stats.dropped, "failing": stats.failing,
                  "items_not_written": stats.queued},
    }
    if as_json:
        print_json(document)
    else:
        failed = ", ".join(f"{n} {state}" for state, n in sorted(summary.hosts_failed.items())) or "none"
        click.echo(f"{summary.hosts_ok} hosts ok, failed: {failed}; "
                   f"{stats.samples_written} samples stored in {summary.seconds:.1f} s")
    for group in groups:
        click.echo(f"fleet: {group.line()}", err=True)
    if stats.failing is not None:
        fail(f"store failing: {stats.failing}; collection stopped, {stats.queued:,} queued sample values and "
             "records not written",
             ExitCode.NO_DATA)
    if groups and summary.hosts_ok == 0:
        fail(f"no host answered: all {sum(len(g.hosts) for g in groups)} failed", ExitCode.NO_DATA)
    if groups:
        sys.exit(int(ExitCode.FAILED))


async def _collect(inventory: Inventory, writer: StoreWriter, once: bool, duration: float | None,
                   interval: float | None, tofu: bool, job_latency: bool = False) -> RoundSummary:
    first_round = asyncio.Event()
    store_failing = asyncio.Event()
    show = sys.stderr.isatty()

    def round_done(summary: RoundSummary) -> None:
        first_round.set()
        stats = writer.stats()
        if show:
            _progress(summary, stats)
        if stats.failing is not None:  # nothing more can be stored: stop now, say why on exit
            store_failing.set()

    collector = Collector(inventory, writer, interval_s=interval, tofu=tofu, on_round=round_done)
    if once:
        return await collector.run_once()
    task = asyncio.ensure_future(collector.run())
    sampler_stop = asyncio.Event()
    if job_latency:
        task = asyncio.ensure_future(_with_job_sampler(collector, writer, task, sampler_stop, first_round))
    started = time.monotonic()
    failing = asyncio.ensure_future(store_failing.wait())
    try:
        await asyncio.wait({task, failing}, timeout=duration, return_when=asyncio.FIRST_COMPLETED)
    finally:
        failing.cancel()
        sampler_stop.set()
        await collector.close()
        await task
    return dataclasses.replace(collector.summary(), seconds=time.monotonic() - started)


async def _with_job_sampler(collector: Collector, writer: StoreWriter, collecting: asyncio.Future[None],
                            stop: asyncio.Event, first_round: asyncio.Event) -> None:
    """The per-job latency sampler beside the collector, over its SSH pool, on the jobs its Slurm poller saw
    (from the end of the first round, when it has seen them); it stops when the collector does."""
    from fleet.collectors.probes.job_latency import JobLatencySampler

    def running_jobs() -> list[JobRecord]:
        jobs = collector.slurm.jobs if collector.slurm is not None else ()
        return [job for job in jobs if job.state.upper() in ("R", "RUNNING")]

    async def collected_once() -> None:
        await first_round.wait()

    async def sample() -> None:
        first = asyncio.ensure_future(collected_once())
        await asyncio.wait({first, collecting}, return_when=asyncio.FIRST_COMPLETED)
        first.cancel()
        if not collecting.done():
            await JobLatencySampler(collector.pool, running_jobs, writer.put_probe).run(stop)

    sampler = asyncio.ensure_future(sample())
    try:
        await collecting
    finally:
        stop.set()
        await sampler


def _progress(summary: RoundSummary, stats: WriterStats) -> None:
    failed = sum(summary.hosts_failed.values())
    store = f"  STORE FAILING: {stats.failing}" if stats.failing else ""
    click.echo(f"\r{summary.seconds:6.0f} s  {summary.hosts_ok} ok  {failed} failing  "
               f"{stats.samples_written} samples stored{store}", err=True, nl=False)
