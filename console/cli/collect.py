"""`fleet collect`: the collector, headless, into the store."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import click
import hostlist

from fleet.collectors.alertmanager import AlertPublisher
from fleet.collectors.engine import Collector, RoundSummary
from fleet.collectors.inventory import Inventory
from fleet.collectors.shard import Shard
from fleet.collectors.sshpool import SshPool
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.console.cli.common import (
    alertmanager_option,
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
    shard_option,
    sharded,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.console.diagnosis_watch import DIAGNOSIS_INTERVAL_S, DiagnosisWatch
from fleet.fabric.host_failures import failure_groups
from fleet.fabric.records import HostStatus, JobRecord
from fleet.fabric.states import HostState
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
@shard_option
@alertmanager_option
@read_only_option
@json_option
def collect(inventory_path: Path | None, db_path: Path | None, once: bool, duration: float | None,
            interval: float | None, tofu: bool, job_latency: bool, shard: Shard | None, alertmanager: str | None,
            read_only_flag: bool, as_json: bool) -> None:
    """Collect every node, switch and the Slurm head into the history database.

    With ``--shard K/N``, only this shard's share of them (docs/scale-out.md). With ``--alertmanager URL``,
    the findings of what it collects are judged as the console judges them and posted to that
    Alertmanager while they are open, resolved when they close.

    Exit status (docs/exit-codes.md): 0 every host answered; 1 some hosts failed; 3 no host
    answered, or the store cannot write (collection stops at once); 2 a bad inventory, a shard
    left without hosts, or ``--job-latency`` in read-only mode.
    """
    if job_latency:
        refuse_if_read_only(read_only_flag, "with --job-latency starts perftest inside the running jobs")
    whole = open_inventory(inventory_path)
    inventory = sharded(whole, shard)
    if alertmanager is not None and once:
        fail("--alertmanager keeps Alertmanager in step with a running collection; after one round "
             "(--once) judge it with `fleet diagnose`", ExitCode.USAGE)
    writer = open_writer(db_path_or_default(db_path))
    alerts = AlertPublisher(alertmanager) if alertmanager is not None else None
    try:
        summary = run_async(collect_into(inventory, writer, once=once, duration=duration, interval=interval,
                                         tofu=tofu, job_latency=job_latency and not once, whole=whole,
                                         progress=sys.stderr.isatty(), alerts=alerts))
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
        "shard": None if shard is None else {"index": shard.index, "count": shard.count,
                                             "hosts": [h.name for h in inventory.hosts]},
        "alerts": None if alerts is None else {"url": alerts.url, "fired": alerts.totals.fired,
                                               "resolved": alerts.totals.resolved, "failing": alerts.totals.failure},
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
        for line in node_state_lines(summary.node_states):
            click.echo(line)
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


async def collect_into(inventory: Inventory, writer: StoreWriter, *, once: bool = False,
                       duration: float | None = None, interval: float | None = None, tofu: bool = False,
                       job_latency: bool = False, whole: Inventory | None = None, progress: bool = False,
                       stop: asyncio.Event | None = None, alerts: AlertPublisher | None = None) -> RoundSummary:
    """Collect ``inventory`` into ``writer`` for ``duration`` seconds (None: until ``stop`` is set, the
    collector ends or the store fails); ``once``: one round. ``whole``: the full inventory when
    ``inventory`` is one shard of it (the job sampler probes a job's nodes wherever they are collected).
    ``alerts``: judge the collected window as the console does and keep Alertmanager in step with the
    findings (``publish_findings``). ``fleet collect`` and ``fleet export --collect`` both run this."""
    first_round = asyncio.Event()
    store_failing = asyncio.Event()

    def round_done(summary: RoundSummary) -> None:
        first_round.set()
        stats = writer.stats()
        if progress:
            _progress(summary, stats)
        if stats.failing is not None:  # nothing more can be stored: stop now, say why on exit
            store_failing.set()

    collector = Collector(inventory, writer, interval_s=interval, tofu=tofu, on_round=round_done)
    if once:
        return await collector.run_once()
    task = asyncio.ensure_future(collector.run())
    sampler_stop = asyncio.Event()
    if job_latency:
        task = asyncio.ensure_future(_with_job_sampler(collector, writer, task, sampler_stop, first_round,
                                                       whole if whole is not inventory else None, tofu))
    if alerts is not None:
        task = asyncio.ensure_future(_with_alerts(task, writer, inventory, alerts, sampler_stop))
    started = time.monotonic()
    failing = asyncio.ensure_future(store_failing.wait())
    stopped = asyncio.ensure_future((stop or asyncio.Event()).wait())
    try:
        await asyncio.wait({task, failing, stopped}, timeout=duration, return_when=asyncio.FIRST_COMPLETED)
    finally:
        failing.cancel()
        stopped.cancel()
        sampler_stop.set()
        await collector.close()
        await task
    return dataclasses.replace(collector.summary(), seconds=time.monotonic() - started)


async def _with_job_sampler(collector: Collector, writer: StoreWriter, collecting: asyncio.Future[None],
                            stop: asyncio.Event, first_round: asyncio.Event, whole: Inventory | None = None,
                            tofu: bool = False) -> None:
    """The per-job latency sampler beside the collector, over its SSH pool, on the jobs its Slurm poller saw
    (from the end of the first round, when it has seen them); it stops when the collector does.

    A shard (``whole`` given) knows the jobs only if it collects the Slurm head; that shard samples them
    over a pool of its own to every node of ``whole``, since a job's nodes belong to every shard."""
    from fleet.collectors.probes.job_latency import JobLatencySampler

    def running_jobs() -> list[JobRecord]:
        jobs = collector.slurm.jobs if collector.slurm is not None else ()
        return [job for job in jobs if job.state.upper() in ("R", "RUNNING")]

    async def collected_once() -> None:
        """The first round, and the Slurm head's first answer: a sampler round before it would find no job
        and wait a whole sampling interval for the next."""
        await first_round.wait()
        head = collector.slurm
        while head is not None and _unanswered(collector.status.get(head.host.name)) and not stop.is_set():
            await sleep_until_stopped(stop, collector.settings.interval_s)

    async def sample() -> None:
        first = asyncio.ensure_future(collected_once())
        await asyncio.wait({first, collecting}, return_when=asyncio.FIRST_COMPLETED)
        first.cancel()
        if not collecting.done():
            await JobLatencySampler(probe_pool or collector.pool, running_jobs, writer.put_probe).run(stop)

    probe_pool = None
    if whole is not None and collector.slurm is not None:
        probe_pool = SshPool(whole.nodes, known_hosts=whole.known_hosts, tofu=tofu, on_event=writer.put_event)
    sampler = asyncio.ensure_future(sample())
    try:
        await collecting
    finally:
        stop.set()
        await sampler
        if probe_pool is not None:
            await probe_pool.close()


async def _with_alerts(collecting: asyncio.Future[None], writer: StoreWriter, inventory: Inventory,
                       alerts: AlertPublisher, stop: asyncio.Event) -> None:
    findings = asyncio.ensure_future(publish_findings(writer, inventory, alerts, stop))
    try:
        await collecting
    finally:
        stop.set()
        await findings


async def publish_findings(writer: StoreWriter, inventory: Inventory, alerts: AlertPublisher,
                           stop: asyncio.Event) -> None:
    """Until ``stop``: judge the store's newest window every ``DIAGNOSIS_INTERVAL_S`` (the console's
    ``DiagnosisWatch``: findings with their life, transitions stored as events) and post the open and the
    closed findings to Alertmanager. A failing Alertmanager is said once on stderr, and once when it is back;
    collection goes on regardless."""
    watch = DiagnosisWatch(writer.path, cabling=inventory.cabling)
    said: str | None = None
    while not stop.is_set():
        started = time.monotonic()
        writer.flush(timeout=DIAGNOSIS_INTERVAL_S)  # judge what was collected, not what waits in the queue
        transitions = await asyncio.to_thread(watch.run)
        for event in transitions.events:
            writer.put_event(event)
        closed = [event for event in transitions.events if event.data.get("cleared")]
        published = await asyncio.to_thread(alerts.publish, transitions.findings, closed, time.time())
        if published.failure != said and (published.failure or published.fired or published.resolved):
            click.echo(f"fleet: alertmanager: {published.failure}" if published.failure
                       else f"fleet: alertmanager: posting again to {alerts.url}", err=True)
            said = published.failure
        await sleep_until_stopped(stop, DIAGNOSIS_INTERVAL_S - (time.monotonic() - started))


def _unanswered(status: HostStatus | None) -> bool:
    """Whether a host has not answered or failed yet (no state, or still connecting)."""
    return status is None or status.state is HostState.CONNECTING


def node_state_lines(node_states: Mapping[str, tuple[str, ...]]) -> list[str]:
    """One line per node state with the nodes in it, as a hostlist: ``no RDMA devices: 2 nodes, cpu[01-02]``."""
    by_state: dict[str, list[str]] = {}
    for host, states in node_states.items():
        for state in states:
            by_state.setdefault(state, []).append(host)
    return [f"{state}: {len(hosts)} node{'s' if len(hosts) != 1 else ''}, {hostlist.collect_hostlist(hosts)}"
            for state, hosts in sorted(by_state.items())]


def _progress(summary: RoundSummary, stats: WriterStats) -> None:
    failed = sum(summary.hosts_failed.values())
    store = f"  STORE FAILING: {stats.failing}" if stats.failing else ""
    setup = summary.setup
    connecting = "" if setup.complete else f"connecting {setup.done:,}/{setup.total:,}  "
    click.echo(f"\r{summary.seconds:6.0f} s  {connecting}{summary.hosts_ok} ok  {failed} failing  "
               f"{stats.samples_written} samples stored{store}", err=True, nl=False)
