"""`fleet alltoall` and `fleet ep-bench`: the all-to-all probes from the command line.

``alltoall`` runs nccl-tests ``alltoall_perf`` on the nodes of ``--nodes`` or of
the Slurm job ``--job`` (asked of the inventory's Slurm head, else read from
the history), prints each size's algorithm and bus bandwidth, the efficiency
against the theoretical figure (``fleet.fabric.alltoall``) and, across nodes,
each rail's figure and the part that holds the collective back; ``ep-bench``
runs the UCCL-EP / DeepEP benchmark where the nodes have it. Both store the
result with its raw output and judge it against the last baseline or the
previous result (``fleet.collectors.probes.history``). Exit status
(docs/exit-codes.md): 0 when the probe ran, whatever its verdict, and for
``ep-bench`` also when the benchmark is not installed (said on stderr);
1 when it failed; 2 for an unknown node or job, a bad option or read-only
mode; 3 when the result could not be stored.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from fleet.collectors.commands import command
from fleet.collectors.inventory import Inventory
from fleet.collectors.parsers.slurm import parse_scontrol_job
from fleet.collectors.probes.alltoall import AlltoallSpec, run_alltoall
from fleet.collectors.probes.ep_bench import (
    DEFAULT_SCRIPT,
    KERNELS,
    EpBenchSpec,
    EpOutcome,
    run_ep_bench,
)
from fleet.collectors.probes.history import verdict_of
from fleet.collectors.sshpool import SshPool
from fleet.console.cli.common import (
    db_option,
    db_path_or_default,
    fail,
    inventory_option,
    json_option,
    open_inventory,
    open_reader,
    print_json,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.probes import _history, _hostlist, _nodes, _record_json, _run, _store
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.fabric.records import ProbeRecord
from fleet.fabric.text import clean_text


class _Steps:
    """``[3/12] alltoall_perf on rail 2 (mlx5_2)`` on stderr, redrawn in place; only when stderr is a terminal."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, what: str, done: int, total: int) -> None:
        sys.stderr.write(f"\r[{done + 1}/{total}] {what}\x1b[K")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


async def _job_nodes_from_head(pool: SshPool, head: str, job_id: str) -> tuple[str, ...] | None:
    result = await pool.run(head, command("scontrol", "show", "job", job_id), 30.0)
    if not result.ok:
        return None
    jobs = parse_scontrol_job(result.stdout).jobs
    return next((job.nodes for job in jobs if job.job_id == job_id), None)


def _job_nodes(inventory: Inventory, db_path: Path | None, job_id: str) -> tuple[str, ...]:
    """The job's nodes: from the Slurm head of the inventory, else from the history's jobs."""
    head = inventory.head
    if head is not None:
        found = _run(inventory, lambda pool: _job_nodes_from_head(pool, head.name, job_id))
        if found:
            return _nodes(inventory, list(found))
    path = db_path_or_default(db_path)
    if path.exists():
        with open_reader(path) as reader:
            job = next((j for j in reader.jobs() if j.job_id == job_id), None)
        if job is not None and job.nodes:
            return _nodes(inventory, list(job.nodes))
    fail(f"job {job_id}: not running (asked {'Slurm on ' + head.name if head else 'the history'})", ExitCode.USAGE)


def _chosen_nodes(inventory: Inventory, db_path: Path | None, nodes_expr: str | None, job: str | None) -> tuple[str, ...]:
    if nodes_expr is not None and job is not None:
        fail("give --nodes or --job, not both", ExitCode.USAGE)
    nodes = _job_nodes(inventory, db_path, job) if job is not None else _hostlist(inventory, nodes_expr)
    if not nodes:
        fail("no nodes to run on", ExitCode.USAGE)
    return nodes


def _gbs(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def alltoall_words(record: ProbeRecord) -> list[str]:
    """The result in lines: the peak against the theoretical figure, each size, each rail, the bottleneck."""
    r = record.result
    nodes = record.params.get("nodes") or [record.src]
    efficiency = f"{100 * r['efficiency']:.0f} %" if isinstance(r.get("efficiency"), int | float) else "an unknown share"
    lines = [f"{len(nodes)} node(s), {r.get('ranks')} ranks of {r.get('gpu') or 'unknown GPUs'}: peak all-to-all bus "
             f"bandwidth {_gbs(r.get('peak_busbw_gbytes_s'))} GB/s, {efficiency} of the theoretical "
             f"{_gbs(r.get('theoretical_busbw_gbytes_s'))} GB/s ({r.get('theoretical_basis')})"]
    lines += ["  size (B)      algbw   busbw (GB/s)"]
    lines += [f"  {row['size_bytes']:>12}  {_gbs(row['algbw_gbytes_s']):>6}  {_gbs(row['busbw_gbytes_s']):>6}"
              for row in r.get("rows", [])]
    if r.get("rails"):
        lines.append("per rail (one GPU per node): " + ", ".join(
            f"{x['nic']} {_gbs(x['busbw_gbytes_s'])}" for x in r["rails"]) + " GB/s")
    bottleneck = r.get("bottleneck")
    if bottleneck:
        kind = bottleneck.get("kind")
        head = "held back by nothing single" if kind == "none" else f"held back by {kind} {bottleneck.get('part')}"
        lines.append(f"{head}: {bottleneck.get('words')}")
    return lines


@click.command()
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node of the inventory).")
@click.option("--job", default=None, help="A Slurm job id: its nodes.")
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--max-bytes", default="1G", show_default=True, help="Largest message (alltoall_perf -e).")
@click.option("--no-localize", is_flag=True, help="Across nodes: skip the per-rail runs that name what holds it back.")
@click.option("--nccl-info", is_flag=True, help="Run with NCCL_DEBUG=INFO: which NICs NCCL used on each host.")
@click.option("--timeout", "timeout_s", type=float, default=300.0, show_default=True, help="Seconds per run.")
@inventory_option
@db_option
@read_only_option
@json_option
def alltoall(nodes_expr: str | None, job: str | None, gpus_per_node: int, max_bytes: str, no_localize: bool,
             nccl_info: bool, timeout_s: float, inventory_path: Path | None, db_path: Path | None,
             read_only_flag: bool, as_json: bool) -> None:
    """nccl-tests alltoall_perf: bus bandwidth per size, efficiency against the fabric, what holds it back."""
    refuse_if_read_only(read_only_flag, "starts alltoall_perf on the GPUs and puts traffic on every spine")
    inventory = open_inventory(inventory_path)
    nodes = _chosen_nodes(inventory, db_path, nodes_expr, job)
    try:
        spec = AlltoallSpec(nodes, gpus_per_node=gpus_per_node, max_bytes=max_bytes, localize=not no_localize,
                            nccl_debug="INFO" if nccl_info else "VERSION", timeout_s=timeout_s)
    except ValueError as error:
        fail(str(error), ExitCode.USAGE)
    steps = _Steps() if sys.stderr.isatty() else None
    try:
        record = _run(inventory, lambda pool: run_alltoall(pool, spec, cabling=inventory.cabling,
                                                           switches=inventory.switches, on_progress=steps))
    finally:
        if steps is not None:
            steps.close()
    _report(db_path, record, as_json, alltoall_words)


def _report(db_path: Path | None, record: ProbeRecord, as_json: bool, words: Any) -> None:
    """Compare with the history, store, print, and exit 1 when the probe failed."""
    previous, baseline = _history(db_path, record)
    verdict = verdict_of(record, previous, baseline, None)
    _store(db_path, [record])
    if as_json:
        print_json(_record_json(record) | {
            "previous": _record_json(previous, raw=False) if previous else None,
            "baseline": asdict(baseline) if baseline else None,
            "verdict": verdict.as_json() if verdict else None})
    elif record.ok:  # machine text (GPU names, NCCL's words) printed inert (docs/hostile-input.md)
        for line in words(record):
            click.echo(clean_text(line, one_line=True))
        if previous is not None:
            click.echo(f"previous ({time.strftime('%Y-%m-%d %H:%M', time.localtime(previous.ts))}): "
                       f"{clean_text(words(previous)[0], one_line=True)}")
        if verdict is not None:
            click.echo(f"verdict: {verdict.words}")
    if not record.ok:
        fail(str(record.result.get("error", f"{record.kind} failed")), ExitCode.FAILED)


def ep_words(record: ProbeRecord) -> list[str]:
    """Each kernel's best line: RDMA and NVLink bandwidth, transmit and notify time."""
    r = record.result
    nodes = record.params.get("nodes") or [record.src]
    lines = [f"{len(nodes)} nodes, {r.get('layout') or 'expert-parallel'} test_internode.py: best of "
             f"{r.get('trials', 0)} configurations tried"]
    for _op, _dtype, name in KERNELS:
        best = r.get(name)
        if not best:
            lines.append(f"  {name}: not reported")
            continue
        lines.append(f"  {name:<14} RDMA {_gbs(best['rdma_gbytes_s']):>6} GB/s  NVL {_gbs(best['nvl_gbytes_s']):>6} GB/s"
                     f"  transmit {_gbs(best['transmit_usec'])} us  notify {_gbs(best['notify_usec'])} us")
    return lines


@click.command(name="ep-bench")
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node of the inventory).")
@click.option("--job", default=None, help="A Slurm job id: its nodes.")
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--script", default=DEFAULT_SCRIPT, show_default=True,
              help="test_internode.py of UCCL-EP (ep/bench) or DeepEP (tests) on the nodes.")
@click.option("--timeout", "timeout_s", type=float, default=900.0, show_default=True, help="Seconds.")
@inventory_option
@db_option
@read_only_option
@json_option
def ep_bench(nodes_expr: str | None, job: str | None, gpus_per_node: int, script: str, timeout_s: float,
             inventory_path: Path | None, db_path: Path | None, read_only_flag: bool, as_json: bool) -> None:
    """UCCL-EP / DeepEP dispatch and combine (FP8, BF16) over RDMA and NVLink, where the nodes have it."""
    refuse_if_read_only(read_only_flag, "starts the expert-parallel benchmark on the GPUs and loads every NIC")
    inventory = open_inventory(inventory_path)
    nodes = _chosen_nodes(inventory, db_path, nodes_expr, job)
    try:
        spec = EpBenchSpec(nodes, gpus_per_node=gpus_per_node, script=script, timeout_s=timeout_s)
    except ValueError as error:
        fail(str(error), ExitCode.USAGE)
    outcome: EpOutcome = _run(inventory, lambda pool: run_ep_bench(pool, spec))
    if outcome.record is None:
        if as_json:
            print_json({"kind": "ep", "ran": False, "missing": outcome.missing})
        click.echo(f"fleet: {outcome.missing}; skipped", err=True)
        return
    _report(db_path, outcome.record, as_json, ep_words)
