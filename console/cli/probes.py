"""`fleet lat`, `fleet bw`, `fleet linktest`, `fleet allreduce`: active probes from the command line.

Each result is stored in the history (``--db``) with its raw output, printed
in words or, with ``--json``, as one JSON document on stdout; ``lat``, ``bw`` and
``allreduce`` add their verdict against the link's speed and the last baseline's
or the previous result (``fleet.collectors.probes.history.verdict_of``); a failing
verdict does not change the exit status. Exit status (docs/exit-codes.md): a probe
or all-reduce that fails, or a link test that finds bad pairs or bad NICs, exits 1
with a one-line reason on stderr (and, with ``--json``, the result on stdout); a
name the inventory does not hold, a bad option, or read-only mode 2; a link test
with too few reachable nodes, or a store that cannot write, 3. Ctrl-C stops the
probe and its perftest servers before exiting 130.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import click
import hostlist

from fleet.collectors.inventory import Inventory
from fleet.collectors.probes.allreduce import AllreduceSpec, run_allreduce
from fleet.collectors.probes.history import (
    BaselineValue,
    baseline_value,
    link_rate_gbps,
    previous_probe,
    verdict_of,
)
from fleet.collectors.probes.linktest import LinktestReport, LinktestSpec, run_linktest
from fleet.collectors.probes.perftest_probe import BW_TESTS, LAT_TESTS, PerftestSpec, run_perftest
from fleet.collectors.sshpool import SshPool
from fleet.console.cli.common import (
    db_option,
    db_path_or_default,
    fail,
    interrupted,
    inventory_option,
    json_option,
    open_inventory,
    open_reader,
    open_writer,
    print_json,
    run_async,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.fabric.pairing import MODES
from fleet.fabric.records import ProbeRecord

T = TypeVar("T")


def _run(inventory: Inventory, work: Callable[[SshPool], Awaitable[T]]) -> T:
    """Run ``work`` with a pool over the inventory; Ctrl-C cancels it (cleanup runs) and exits 130."""

    async def main() -> T:
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        try:
            return await work(pool)
        finally:
            await pool.close()

    try:
        return run_async(main())
    except KeyboardInterrupt:
        interrupted("interrupted; probe servers stopped")


def _nodes(inventory: Inventory, names: list[str]) -> tuple[str, ...]:
    known = {host.name for host in inventory.nodes}
    unknown = [name for name in names if name not in known]
    if unknown:
        fail(f"not a node of the inventory: {', '.join(unknown)}", ExitCode.USAGE)
    return tuple(names)


def _hostlist(inventory: Inventory, expression: str | None) -> tuple[str, ...]:
    if expression is None:
        return tuple(host.name for host in inventory.nodes)
    try:
        names = hostlist.expand_hostlist(expression)
    except hostlist.BadHostlist as error:
        fail(f"bad host list {expression!r}: {error}", ExitCode.USAGE)
    return _nodes(inventory, list(names))


def _store(db_path: Path | None, records: list[ProbeRecord]) -> Path:
    path = db_path_or_default(db_path)
    with open_writer(path) as writer:
        for record in records:
            writer.put_probe(record)
        if not writer.flush(timeout=30):
            fail(f"could not write to {path}: {writer.stats().failing or 'timed out'}", ExitCode.NO_DATA)
    return path


def _history(db_path: Path | None, record: ProbeRecord) -> tuple[ProbeRecord | None, BaselineValue | None]:
    """The last stored probe of the same kind, pair and NICs before this one, and the last baseline's value."""
    path = db_path_or_default(db_path)
    if not path.exists():
        return None, None
    with open_reader(path) as reader:
        return previous_probe(reader, record), baseline_value(reader, record)


async def _with_rate(pool: SshPool, spec: PerftestSpec) -> tuple[ProbeRecord, float | None]:
    """The probe, then (bandwidth only) the slower NIC's trained rate, over the same connections."""
    record = await run_perftest(pool, spec)
    return record, (await link_rate_gbps(pool, record) if record.ok and record.kind == "bw" else None)


def _record_json(record: ProbeRecord, *, raw: bool = True) -> dict[str, Any]:
    data = asdict(record)
    if not raw:
        data.pop("raw")
    return data


def _perftest_command(kind: str) -> click.Command:
    tests = LAT_TESTS if kind == "lat" else BW_TESTS
    what = "latency (usec)" if kind == "lat" else "bandwidth (Gb/s)"

    @click.command(name=kind, help=f"RDMA {what} from SRC (client) to DST (server) with perftest.")
    @click.argument("src")
    @click.argument("dst")
    @click.option("--nic", default="mlx5_0", show_default=True, help="RDMA device on SRC.")
    @click.option("--peer-nic", default="", help="RDMA device on DST (default: the same name as --nic).")
    @click.option("--size", "size_bytes", type=int, default=None, help="Message size in bytes (perftest -s).")
    @click.option("--test", type=click.Choice(tests), default=tests[0], show_default=True)
    @click.option("--iterations", type=int, default=None, help="perftest -n (default: perftest's own).")
    @click.option("--gid-index", type=int, default=None, help="RoCE GID index (default: found with show_gids).")
    @click.option("--timeout", "timeout_s", type=float, default=60.0, show_default=True, help="Seconds.")
    @inventory_option
    @db_option
    @read_only_option
    @json_option
    def probe(src: str, dst: str, nic: str, peer_nic: str, size_bytes: int | None, test: str,
              iterations: int | None, gid_index: int | None, timeout_s: float, inventory_path: Path | None,
              db_path: Path | None, read_only_flag: bool, as_json: bool) -> None:
        refuse_if_read_only(read_only_flag, f"starts {test} on {dst} and {src} and puts traffic on their links")
        inventory = open_inventory(inventory_path)
        _nodes(inventory, [src, dst])
        try:
            spec = PerftestSpec(src, dst, test=test, src_nic=nic, dst_nic=peer_nic, size_bytes=size_bytes,
                                iterations=iterations, gid_index=gid_index, timeout_s=timeout_s)
        except ValueError as error:
            fail(str(error), ExitCode.USAGE)
        record, link_gbps = _run(inventory, lambda pool: _with_rate(pool, spec))
        previous, baseline = _history(db_path, record)
        verdict = verdict_of(record, previous, baseline, link_gbps)
        _store(db_path, [record])
        if as_json:
            print_json(_record_json(record) | {
                "previous": _record_json(previous, raw=False) if previous else None,
                "baseline": asdict(baseline) if baseline else None, "link_gbps": link_gbps,
                "verdict": verdict.as_json() if verdict else None})
        elif record.ok:
            click.echo(_perftest_words(record))
            if previous is not None:
                click.echo(f"previous ({time.strftime('%Y-%m-%d %H:%M', time.localtime(previous.ts))}): "
                           + _perftest_words(previous).split(": ", 1)[1])
            if verdict is not None:
                click.echo(f"verdict: {verdict.words}")
        if not record.ok:
            fail(str(record.result.get("error", "probe failed")), ExitCode.FAILED)

    return probe


def _perftest_words(record: ProbeRecord) -> str:
    r = record.result
    head = f"{record.src} {record.src_nic} -> {record.dst} {record.dst_nic} {record.params.get('test')} " \
           f"{r.get('size_bytes')} B"
    if record.kind == "lat":
        return (f"{head}: typical {r['t_typical_usec']} us, avg {r['t_avg_usec']} us, p99 {r['p99_usec']} us, "
                f"p99.9 {r['p999_usec']} us (min {r['t_min_usec']} us)")
    return f"{head}: avg {r['bw_avg_gbps']:.2f} Gb/s, peak {r['bw_peak_gbps']:.2f} Gb/s"


lat = _perftest_command("lat")
bw = _perftest_command("bw")


class _ProgressBar:
    """``[#####.....] done/total ETA`` on stderr, redrawn in place; only when stderr is a terminal."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, done: int, total: int, eta_s: float | None) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        eta = f"ETA {eta_s:.0f} s" if eta_s is not None else ""
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} probes {eta}   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _rails(text: str) -> tuple[int, ...]:
    try:
        rails = tuple(int(r) for r in hostlist.expand_hostlist(f"[{text}]"))
    except (hostlist.BadHostlist, ValueError):
        fail(f"bad rail list {text!r}: use e.g. 0-7 or 0,3", ExitCode.USAGE)
    return rails


@click.command()
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node of the inventory).")
@click.option("--mode", type=click.Choice(MODES), default="mesh", show_default=True,
              help="mesh: every pair, all rails at once; rail: one rail after another; sample: a few rounds.")
@click.option("--rails", "rails_text", default="0-7", show_default=True, help="Rails (NIC indices) to test.")
@click.option("--flows", type=int, default=1, show_default=True, help="Flow labels per pair (spread over spines).")
@click.option("--sample-rounds", type=int, default=4, show_default=True)
@click.option("--max-parallel", type=int, default=512, show_default=True, help="Probes in flight at once.")
@click.option("--iterations", type=int, default=None, help="perftest -n per probe.")
@click.option("--no-local-checks", is_flag=True, help="Skip the per-NIC checks (state, errors, optics, LLDP).")
@inventory_option
@db_option
@read_only_option
@json_option
def linktest(nodes_expr: str | None, mode: str, rails_text: str, flows: int, sample_rounds: int, max_parallel: int,
             iterations: int | None, no_local_checks: bool, inventory_path: Path | None, db_path: Path | None,
             read_only_flag: bool, as_json: bool) -> None:
    """Check every NIC, then RDMA latency over node pairs on every rail; name the broken part."""
    refuse_if_read_only(read_only_flag, "starts perftest on every node pair and puts traffic on every rail")
    inventory = open_inventory(inventory_path)
    nodes = _hostlist(inventory, nodes_expr)
    if len(nodes) < 2:
        fail("a link test needs at least two nodes", ExitCode.USAGE)
    spec = LinktestSpec(nodes, rails=_rails(rails_text), mode=mode, flows=flows, sample_rounds=sample_rounds,
                        max_parallel=max_parallel, iterations=iterations, local_checks=not no_local_checks)
    bar = _ProgressBar() if sys.stderr.isatty() else None
    path = db_path_or_default(db_path)
    with open_writer(path) as writer:
        try:
            report = _run(inventory, lambda pool: run_linktest(pool, spec, cabling=inventory.cabling,
                                                               switches=inventory.switches, on_progress=bar,
                                                               on_record=writer.put_probe))
        finally:
            if bar is not None:
                bar.close()
        writer.put_probe(report.summary_record(time.time()))
        stored = writer.flush(timeout=30)
        store_failing = None if stored else writer.stats().failing or "timed out after 30 s"
    if as_json:
        print_json(report.to_json())
    else:
        click.echo(_linktest_words(report))
    if len(report.unreachable) >= len(nodes) - 1:
        fail(f"too few reachable nodes to test: {', '.join(sorted(report.unreachable))} unreachable",
             ExitCode.NO_DATA)
    if store_failing is not None:
        fail(f"the link test was not stored in {path}: {store_failing}", ExitCode.NO_DATA)
    problems = _linktest_problems(report)
    if problems:
        fail(problems, ExitCode.FAILED)


def _linktest_problems(report: LinktestReport) -> str:
    """One line naming what the link test found wrong ("" when nothing): bad pairs, NICs, unreachable nodes."""
    found = []
    if report.bad:
        found.append(f"{len(report.bad)} bad pair(s)")
    nics = [c for c in report.nic_checks if c.problems]
    if nics:
        found.append(f"{len(nics)} NIC(s) with problems")
    if report.unreachable:
        found.append(f"{len(report.unreachable)} node(s) unreachable")
    if not found:
        return ""
    suspects = ", ".join(f"{s.kind} {s.part}" for s in report.suspects[:5])
    more = f" and {len(report.suspects) - 5} more" if len(report.suspects) > 5 else ""
    return "link test found " + ", ".join(found) + (f"; suspects: {suspects}{more}" if suspects else "")


def _linktest_words(report: LinktestReport) -> str:
    lines = [f"{len(report.outcomes)} probes in {report.rounds} rounds, {report.seconds:.1f} s; "
             f"{len(report.bad)} bad, {plural(len(report.suspects), 'suspect')}, "
             f"{plural(len(report.unreachable), 'node')} unreachable"]
    lines += [f"unreachable {node}: {why}" for node, why in sorted(report.unreachable.items())]
    lines += [f"suspect {s.kind} {s.part} (from the {s.source}): {s.reason}" for s in report.suspects]
    lines += [f"note: {note}" for note in report.path_notes]
    return "\n".join(lines)


def plural(count: int, word: str) -> str:
    """``1 suspect``, ``3 suspects``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


@click.command()
@click.option("--nodes", "nodes_expr", default=None,
              help="Slurm host list; one node runs over NVLink only (default: every node of the inventory).")
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--max-bytes", default="1G", show_default=True, help="Largest message (all_reduce_perf -e).")
@click.option("--timeout", "timeout_s", type=float, default=300.0, show_default=True, help="Seconds.")
@inventory_option
@db_option
@read_only_option
@json_option
def allreduce(nodes_expr: str | None, gpus_per_node: int, max_bytes: str, timeout_s: float,
              inventory_path: Path | None, db_path: Path | None, read_only_flag: bool, as_json: bool) -> None:
    """nccl-tests all_reduce_perf: bus bandwidth per size and efficiency against the hardware."""
    refuse_if_read_only(read_only_flag, "starts all_reduce_perf on the GPUs and puts traffic on the fabric")
    inventory = open_inventory(inventory_path)
    nodes = _hostlist(inventory, nodes_expr)
    if not nodes:
        fail("no nodes to run on", ExitCode.USAGE)
    spec = AllreduceSpec(nodes, gpus_per_node=gpus_per_node, max_bytes=max_bytes, timeout_s=timeout_s)
    record = _run(inventory, lambda pool: run_allreduce(pool, spec))
    previous, baseline = _history(db_path, record)
    verdict = verdict_of(record, previous, baseline, None)
    _store(db_path, [record])
    if as_json:
        print_json(_record_json(record) | {"verdict": verdict.as_json() if verdict else None})
    elif record.ok:
        r = record.result
        efficiency = f"{100 * r['efficiency']:.0f} %" if r.get("efficiency") is not None else "unknown"
        click.echo(f"{len(nodes)} node(s), {r['ranks']} ranks of {r['gpu']}: peak bus bandwidth "
                   f"{r['peak_busbw_gbytes_s']} GB/s, {efficiency} of the reference "
                   f"{r.get('reference_busbw_gbytes_s')} GB/s ({r.get('reference_basis')}); "
                   f"theoretical {r['theoretical_busbw_gbytes_s']} GB/s ({r['theoretical_basis']})")
        if verdict is not None:
            click.echo(f"verdict: {verdict.words}")
    if not record.ok:
        fail(str(record.result.get("error", "all-reduce failed")), ExitCode.FAILED)
