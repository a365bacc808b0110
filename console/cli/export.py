"""`fleet export`: the latest values for Prometheus/Grafana, in the OpenMetrics text format.

Serves what is in the history database; with ``--collect`` it also runs the
collector in the same process, so one command is a complete exporter.

Exit status (docs/exit-codes.md): 0 after SIGINT/SIGTERM; 2 a bad --listen, an
address it cannot listen on, a bad inventory, ``--shard`` without ``--collect``
or a shard left without hosts, or a file that is not a fleet history; 3 no
history at the path (without ``--collect``), or the store cannot write.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from pathlib import Path

import click

from fleet.collectors.alertmanager import AlertPublisher
from fleet.collectors.inventory import Inventory
from fleet.collectors.openmetrics import serve_metrics
from fleet.collectors.shard import Shard
from fleet.console.cli.collect import collect_into
from fleet.console.cli.common import (
    alertmanager_option,
    db_option,
    db_path_or_default,
    fail,
    inventory_option,
    open_inventory,
    open_reader,
    open_writer,
    run_async,
    shard_option,
    sharded,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.store.writer import StoreWriter

READY_PREFIX = "fleet export: serving "


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` (all addresses) or ``PORT`` -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.removeprefix("[").removesuffix("]") or "0.0.0.0"
    try:
        port = int(port_text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected HOST:PORT (port a number)") from None
    if not 0 <= port <= 65535:
        raise click.BadParameter(f"{text!r}: port {port} is outside 0-65535")
    return host, port


@click.command()
@click.option("--listen", "listen", required=True, metavar="ADDR",
              help="HOST:PORT to serve /metrics on (127.0.0.1:9464, [::1]:9464, :9464; port 0 picks one).")
@inventory_option
@db_option
@click.option("--collect", is_flag=True, help="Also run the collector (needs the inventory) in this process.")
@shard_option
@click.option("--job-latency", is_flag=True,
              help="With --collect: also probe RDMA latency inside every running Slurm job each minute "
                   "(served as fleet_slurm_job_rdma_latency_*). Puts light traffic on the jobs' links.")
@alertmanager_option
@click.option("--max-age", "max_age_s", type=click.FloatRange(1), default=600.0, show_default=True,
              help="Seconds after which a stopped series is no longer served (error counters always are).")
@read_only_option
def export(listen: str, inventory_path: Path | None, db_path: Path | None, collect: bool, shard: Shard | None,
           job_latency: bool, alertmanager: str | None, max_age_s: float, read_only_flag: bool) -> None:
    """Serve the latest value of every series on /metrics for Prometheus to scrape.

    \b
    Examples:
      fleet export --listen 127.0.0.1:9464
      fleet export --listen :9464 --collect --inventory fleet.toml --db fleet.db
      fleet export --listen :9464 --collect --shard 2/3 --inventory fleet.toml --db shard2.db \\
          --job-latency --alertmanager http://alertmanager:9093

    Names and labels: docs/metrics.md (`fleet_nic_tx_bytes_total{node,device,port}`,
    `fleet_host_up{node,state}` ...). Prints one line on stderr when it listens.
    """
    host, port = parse_listen(listen)
    for flag, given in (("--shard", shard is not None), ("--job-latency", job_latency),
                        ("--alertmanager", alertmanager is not None)):
        if given and not collect:
            fail(f"{flag} is about collecting: give it with --collect (without, export serves the history it "
                 "is given)", ExitCode.USAGE)
    if job_latency:
        refuse_if_read_only(read_only_flag, "with --job-latency starts perftest inside the running jobs")
    path = db_path_or_default(db_path)
    whole = open_inventory(inventory_path) if collect else None
    inventory = sharded(whole, shard) if whole is not None else None
    writer = open_writer(path) if collect else None
    try:
        if not path.exists():
            fail(f"no history at {path} (run `fleet collect`, or add --collect)", ExitCode.NO_DATA)
        reader = open_reader(path)
        try:
            server = serve_metrics(reader, host, port, max_age_s=max_age_s)
        except OSError as error:
            fail(f"cannot listen on {listen}: {error.strerror or error}", ExitCode.USAGE)
        bound_host, bound_port = server.address
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        click.echo(f"{READY_PREFIX}http://{shown}:{bound_port}/metrics", err=True)
        try:
            if inventory is not None and writer is not None:
                alerts = AlertPublisher(alertmanager) if alertmanager is not None else None
                run_async(_collect_until_signalled(inventory, writer, job_latency, whole, alerts))
            else:
                _wait_for_signal()
        finally:
            server.close()
            reader.close()
    finally:
        failing = None
        if writer is not None:
            writer.flush(timeout=30)
            failing = writer.stats().failing
            writer.close()
    if failing is not None:  # the collector stopped at once (``collect_into``): say why
        fail(f"store failing: {failing}; collection stopped", ExitCode.NO_DATA)
    sys.exit(int(ExitCode.OK))


def _wait_for_signal() -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()


async def _collect_until_signalled(inventory: Inventory, writer: StoreWriter, job_latency: bool,
                                   whole: Inventory | None, alerts: AlertPublisher | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await collect_into(inventory, writer, job_latency=job_latency, whole=whole, stop=stop, alerts=alerts)
