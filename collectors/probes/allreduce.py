"""nccl-tests ``all_reduce_perf`` on one node (NVLink) or across nodes (``mpirun``), set against the hardware.

Why: a training job's step time follows its all-reduce; a bus bandwidth well
under what the GPUs and NICs allow points at NVLink, a NIC, a rail or the
fabric before the job owner notices. One node runs ``all_reduce_perf -g G``
(one process, G GPUs); several run under ``mpirun -H a:G,b:G -np N`` from the
first node, one rank per GPU. The result keeps every size's bus bandwidth
(GB/s = 1e9 bytes/s), the peak and nccl-tests' average, and the efficiency:
peak / the published reference of :class:`fleet.fabric.hardware.HardwareTable` (what a
healthy machine of that GPU reaches with NCCL's algorithm; the NIC models are read with
``ibstat`` on the first node), with the theoretical bound beside it. Failures are records
with ``ok=False`` and ``result["error"]``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import hostlist

from fleet.collectors.commands import Arg, Command, command
from fleet.collectors.parsers.ibstat import parse_ibstat
from fleet.collectors.parsers.nccl import Nccl, parse_nccl
from fleet.collectors.sshpool import SshPool
from fleet.fabric.hardware import HardwareTable
from fleet.fabric.records import ProbeRecord


@dataclass(frozen=True, slots=True)
class AllreduceSpec:
    """``nodes``: one node (NVLink only) or several (the first launches mpirun)."""

    nodes: tuple[str, ...]
    gpus_per_node: int = 8
    min_bytes: str = "8"
    max_bytes: str = "1G"
    step_factor: int = 2
    iters: int = 20
    timeout_s: float = 300.0
    run_id: str = ""

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("an all-reduce needs at least one node")


def allreduce_command(spec: AllreduceSpec) -> Command:
    """The command the first node runs (see the module doc)."""
    test: list[Arg] = ["-b", spec.min_bytes, "-e", spec.max_bytes, "-f", spec.step_factor, "-n", spec.iters]
    nodes = list(dict.fromkeys(spec.nodes))
    if len(nodes) == 1:
        return command("all_reduce_perf", *test, "-g", spec.gpus_per_node)
    hosts = ",".join(f"{node}:{spec.gpus_per_node}" for node in nodes)
    ranks = len(nodes) * spec.gpus_per_node
    return command("mpirun", "-np", ranks, "-H", hosts, "all_reduce_perf", *test, "-g", 1)


async def run_allreduce(
    pool: SshPool,
    spec: AllreduceSpec,
    *,
    hardware: HardwareTable | None = None,
    clock: Callable[[], float] = time.time,
) -> ProbeRecord:
    """Run the all-reduce and rate it; always returns a record."""
    hardware = hardware or HardwareTable()
    nodes = tuple(dict.fromkeys(spec.nodes))
    cmd = allreduce_command(spec)
    ts = clock()
    params: dict[str, Any] = {"nodes": list(nodes), "gpus_per_node": spec.gpus_per_node, "command": cmd.text,
                              "min_bytes": spec.min_bytes, "max_bytes": spec.max_bytes}
    first = nodes[0]
    rest = hostlist.collect_hostlist(list(nodes[1:])) if len(nodes) > 1 else ""

    def record(ok: bool, result: dict[str, Any], raw: str) -> ProbeRecord:
        return ProbeRecord(ts=ts, kind="allreduce", src=first, dst=rest, ok=ok, params=params, result=result,
                           raw=raw, run_id=spec.run_id)

    nic_types: tuple[str, ...] = ()
    raw_parts: list[str] = []
    if len(nodes) > 1:
        nic_result = await pool.run(first, command("ibstat"), min(30.0, spec.timeout_s))
        raw_parts.append(f"# {first}: ibstat\n{nic_result.stdout}{nic_result.stderr}")
        if nic_result.ok:
            nic_types = rdma_nic_types(parse_ibstat(nic_result.stdout).devices, spec.gpus_per_node)
    result = await pool.run(first, cmd, spec.timeout_s)
    raw_parts.insert(0, f"# {first}: {cmd.text}\n{result.stdout}{result.stderr}")
    raw = "".join(raw_parts)
    if result.exit_status is None and not result.stdout:
        return record(False, {"error": f"{first}: {result.state.value}: {result.reason}"}, raw)
    parsed = parse_nccl(result.stdout)
    summary = summarize(parsed, hardware, len(nodes), nic_types)
    if not result.ok or not parsed.rows:
        why = parsed.errors[0] if parsed.errors else (result.reason or "no result rows")
        return record(False, {**summary, "error": f"{first}: all_reduce_perf failed: {why}"}, raw)
    if summary["wrong"]:
        return record(False, {**summary, "error": "all_reduce_perf found wrong results (#wrong > 0)"}, raw)
    return record(True, summary, raw)


def rdma_nic_types(devices: Sequence[Any], limit: int) -> tuple[str, ...]:
    """CA types of the node's active RDMA NICs, the most common model only, at most ``limit``.

    The training rails are the many NICs of one model; a storage or front-end
    NIC of another model is not part of the all-reduce.
    """
    active = [d.ca_type for d in devices if any(p.state == "Active" for p in d.ports)]
    if not active:
        return ()
    model, count = Counter(active).most_common(1)[0]
    return (model,) * min(count, limit)


def summarize(parsed: Nccl, hardware: HardwareTable, nodes: int, nic_types: tuple[str, ...]) -> dict[str, Any]:
    """Bus bandwidth per size (the better of out-of-place and in-place), peak, efficiency."""
    rows = []
    for row in parsed.rows:
        busbw = max((v for v in (row.oop_busbw_gbytes_s, row.ip_busbw_gbytes_s) if v is not None), default=None)
        algbw = max((v for v in (row.oop_algbw_gbytes_s, row.ip_algbw_gbytes_s) if v is not None), default=None)
        rows.append({"size_bytes": row.size_bytes, "busbw_gbytes_s": busbw, "algbw_gbytes_s": algbw,
                     "time_usec": row.oop_time_usec})
    peaks = [r["busbw_gbytes_s"] for r in rows if r["busbw_gbytes_s"] is not None]
    peak = max(peaks) if peaks else None
    gpu = parsed.ranks[0].device_name if parsed.ranks else ""
    bound = hardware.allreduce_bound(gpu, nodes, nic_types)
    reference = hardware.allreduce_reference(gpu, nodes, nic_types)
    wrong = any((w or 0) > 0 for row in parsed.rows for w in (row.oop_wrong, row.ip_wrong))
    return {
        "rows": rows,
        "peak_busbw_gbytes_s": peak,
        "avg_busbw_gbytes_s": parsed.avg_busbw_gbytes_s,
        "ranks": len(parsed.ranks),
        "gpu": gpu,
        "nic_types": list(nic_types),
        "theoretical_busbw_gbytes_s": bound.busbw_gbytes_s if bound else None,
        "theoretical_basis": bound.basis if bound else "unknown GPU or NIC model: add it to the hardware table",
        "reference_busbw_gbytes_s": reference.busbw_gbytes_s if reference else None,
        "reference_algorithm": reference.algorithm if reference else "",
        "reference_basis": reference.basis if reference else "no published nccl-tests figure for this GPU",
        "efficiency": (peak / reference.busbw_gbytes_s) if reference and peak is not None else None,
        "wrong": wrong,
    }


__all__ = ["AllreduceSpec", "allreduce_command", "rdma_nic_types", "run_allreduce", "summarize"]
