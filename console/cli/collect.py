"""`fleet collect`: the collector, headless, into the store."""

from __future__ import annotations

import asyncio
import contextlib
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
    inventory_option,
    json_option,
    open_inventory,
    print_json,
    run_async,
)
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.fabric.records import JobRecord
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
    """Collect every node, switch and the Slurm head into the history database."""
    if job_latency:
        refuse_if_read_only(read_only_flag, "with --job-latency starts perftest inside the running jobs")
    inventory = open_inventory(inventory_path)
    writer = StoreWriter(db_path_or_default(db_path)).start()
    try:
        summary = run_async(_collect(inventory, writer, once, duration, interval, tofu,
                                       job_latency and not once))
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
                   interval: float | None, tofu: bool, job_latency: bool = False) -> RoundSummary:
    first_round = asyncio.Event()
    show = sys.stderr.isatty()

    def round_done(summary: RoundSummary) -> None:
        first_round.set()
        if show:
            _progress(summary)

    collector = Collector(inventory, writer, interval_s=interval, tofu=tofu, on_round=round_done)
    if once:
        return await collector.run_once()
    task = asyncio.ensure_future(collector.run())
    sampler_stop = asyncio.Event()
    if job_latency:
        task = asyncio.ensure_future(_with_job_sampler(collector, writer, task, sampler_stop, first_round))
    started = time.monotonic()
    try:
        if duration is None:
            await task
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout=duration)
    finally:
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


def _progress(summary: RoundSummary) -> None:
    failed = sum(summary.hosts_failed.values())
    click.echo(f"\r{summary.seconds:6.0f} s  {summary.hosts_ok} ok  {failed} failing  "
               f"{summary.samples} samples", err=True, nl=False)
