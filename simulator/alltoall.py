"""nccl-tests ``alltoall_perf`` and ``sendrecv_perf`` over the traffic model.

``run_exchange_test`` is what ``fleet.simulator.perftest.run_nccl`` calls for
either program, alone on a node or under ``mpirun``, once the ranks are placed.
The physics:

- one node: every GPU sends over NVLink; NCCL's protocol overhead leaves
  ``NVLINK_ALLTOALL_BUSBW_GBS`` of an H100's 450 GB/s per direction;
- several nodes: every rail carries one connection from every node to every
  other node (``fleet.simulator.exchange``), hashed by the leaves onto the
  spines with the jobs' traffic, so an ECMP collision or a NIC trained slow on
  one rail holds the whole collective back, as on real fabrics. Each NIC
  moves ``NCCL_NET_SHARE`` of what its slowest connection allows times its
  peers; the bus bandwidth follows from nccl-tests' definition
  (``fleet.fabric.alltoall``): the per-GPU network rate times (NG-1)/(G(N-1)),
  never above the NVLink figure.
- ``sendrecv_perf``: rank i sends to rank i+1 (nccl-tests ``src/sendrecv.cu``),
  bus bandwidth = algorithm bandwidth; across nodes the slowest of those
  connections gates it.

``mpirun -x`` variables the model honours: ``CUDA_VISIBLE_DEVICES`` (which
GPUs, so which rails), ``NCCL_IB_HCA`` (which NICs), ``NCCL_IB_QPS_PER_CONNECTION``
(flows per connection, each hashed on its own) and ``NCCL_DEBUG`` (``VERSION``
prints the banner, ``INFO`` NCCL's own lines, interleaved with the table as
``tests/fixtures/nccl`` shows them).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.simulator.exchange import NCCL_NET_SHARE, Pair, all_pairs, pair_rates, slowest_per_rail
from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.tools.nccl_format import (
    NcclParams,
    NcclRank,
    NcclRow,
    format_all_reduce_perf,
    make_row,
)
from fleet.simulator.traffic import fresh_random

if TYPE_CHECKING:
    from fleet.simulator.perftest import NcclArgs

NVLINK_ALLTOALL_BUSBW_GBS = 370.0
"""Bus bandwidth of an all-to-all (any collective but NVLink-SHARP all-reduce) inside an 8 x H100 node,
GB/s: NVLink's 450 GB/s less NCCL's ~20 % protocol overhead (NCCL maintainers,
https://github.com/NVIDIA/nccl-tests/issues/212)."""

NCCL_VERSION = "2.21.5+cuda12.4"
"""The NCCL release the simulated nodes run (printed with NCCL_DEBUG=VERSION or INFO)."""

MAX_RUN_S = 10.0
"""Longest a simulated run takes in wall time."""

THROTTLED = 0x60
"""NVML clock-event reasons of a GPU held back by heat (HW slowdown, HW thermal slowdown)."""


def rails_of(env: dict[str, str], ranks: Sequence[NcclRank]) -> list[int]:
    """The rails a run uses: the NICs ``NCCL_IB_HCA`` names, else the rails of the ranks' GPUs (PXN)."""
    hca = env.get("NCCL_IB_HCA", "").lstrip("=")
    if hca and not hca.startswith("^"):
        names = [item.split(":")[0].strip() for item in hca.split(",")]
        rails = sorted({r for r in range(RAILS_PER_NODE) if nic_name(r) in names})
        if rails:
            return rails
    return sorted({r.device % RAILS_PER_NODE for r in ranks})


def _node_penalty(machine: Machine, nodes: Sequence[str], t: float) -> float | None:
    """None when a node's GPU fell off the bus (XID 79): the run fails; else the slowest node's pace (0-1)."""
    penalty = 1.0
    for node in nodes:
        view = machine.model.node_view(node, t)
        if any(g.xid_last == 79 for g in view.gpus):
            return None
        if any(g.throttle_reasons & THROTTLED for g in view.gpus):
            penalty = min(penalty, 0.85)
    return penalty


async def _busbw(machine: Machine, program: str, ranks: Sequence[NcclRank], rails: Sequence[int], qps: int,
                 t: float) -> float:
    """The run's peak bus bandwidth, GB/s (0.0: a connection has no path).

    The connections' paths and shares are worked out in a thread (``asyncio.to_thread``): an all-to-all over
    N nodes hashes N(N-1) flows per rail (64 nodes: ~0.5 s of CPU, 256 nodes: ~13 s), and the simulator's
    other machines keep answering meanwhile. What it reads (the solved fabric state) no task changes."""
    model = machine.model
    nodes = list(dict.fromkeys(r.host for r in ranks))
    penalty = _node_penalty(machine, nodes, t)
    if penalty is None:
        return 0.0
    if len(nodes) == 1:
        return NVLINK_ALLTOALL_BUSBW_GBS * penalty
    state, solution = model.solution(t)
    fabric = model.fabric
    if program == "sendrecv_perf":
        rail = rails[0] if rails else 0
        pairs: list[Pair] = []
        for k, rank in enumerate(ranks):
            peer = ranks[(k + 1) % len(ranks)]
            if peer.host != rank.host:
                pairs.append(((rank.host, rail if len(rails) == 1 else rank.device % RAILS_PER_NODE),
                              (peer.host, rail if len(rails) == 1 else peer.device % RAILS_PER_NODE)))
        rates = await asyncio.to_thread(pair_rates, fabric, state, solution, pairs, qps, ("sendrecv", t))
        slowest = min(rates.values(), default=0.0)
        return min(NVLINK_ALLTOALL_BUSBW_GBS, slowest * NCCL_NET_SHARE / 8.0) * penalty
    rates = await asyncio.to_thread(pair_rates, fabric, state, solution, all_pairs(nodes, rails), qps,
                                    ("alltoall", t))
    slowest = min(slowest_per_rail(rates).values(), default=0.0)
    if slowest <= 0.0:
        return 0.0
    per_node = len(ranks) / len(nodes)
    per_gpu = len(rails) * (len(nodes) - 1) * slowest * NCCL_NET_SHARE / 8.0 / per_node
    busbw = per_gpu * (len(ranks) - 1) / (per_node * (len(nodes) - 1))
    return min(NVLINK_ALLTOALL_BUSBW_GBS, busbw) * penalty


def _sizes(args: NcclArgs) -> list[int]:
    sizes = []
    size = max(1, args.min_bytes)
    while size <= args.max_bytes:
        sizes.append(size)
        size *= max(2, args.step_factor)
    return sizes


def _info_lines(program: str, ranks: Sequence[NcclRank], rails: Sequence[int], env: dict[str, str],
                machine: Machine) -> tuple[list[str], list[str]]:
    """NCCL's INFO lines at start-up (before the table) and as the first size connects (inside it)."""
    model = machine.model
    nodes = list(dict.fromkeys(r.host for r in ranks))
    devices = " ".join(f"[{i}]{nic_name(rail)}:1/{'RoCE' if model.roce else 'IB'}" for i, rail in enumerate(rails))
    before: list[str] = []
    inside: list[str] = []
    for rank in ranks:
        prefix = f"{rank.host}:{rank.pid}:{rank.pid + 40} [{rank.device}] NCCL INFO"
        local = [r for r in ranks if r.host == rank.host]
        before += [
            f"{prefix} NCCL version {NCCL_VERSION}",
            f"{prefix} NET/IB : Using {devices} [RO]; OOB eth0:{model.topology.addresses.get(rank.host, '')}<0>",
            f"{prefix} Using network IB",
            *(f"{prefix} {name} set by environment to {value}." for name, value in sorted(env.items())
              if name.startswith("NCCL_") and name != "NCCL_DEBUG"),
            f"{prefix} comm 0x{int(fresh_random(model.seed, 'comm', rank.host, rank.rank) * 0xFFFFFFF):x} "
            f"rank {rank.rank} nRanks {len(ranks)} nNodes {len(nodes)} localRanks {len(local)} "
            f"localRank {local.index(rank)} MNNVL 0",
        ]
        peer = ranks[(rank.rank + 1) % len(ranks)]
        via = "P2P/CUMEM" if peer.host == rank.host else f"NET/IB/{rank.device % max(1, len(rails))}/GDRDMA"
        inside.append(f"{prefix} Channel 00/1 : {rank.rank}[{rank.device}] -> {peer.rank}[{peer.device}] "
                      f"[send] via {via}")
    return before, inside


async def run_exchange_test(machine: Machine, program: str, args: NcclArgs, ranks: list[NcclRank],
                            env: dict[str, str], io: StreamIO) -> int:
    """``alltoall_perf`` or ``sendrecv_perf`` on ``ranks`` (see the module doc)."""
    t = machine.model.now()
    rails = rails_of(env, ranks)
    try:
        qps = max(1, int(env.get("NCCL_IB_QPS_PER_CONNECTION", "1")))
    except ValueError:
        qps = 1
    debug = env.get("NCCL_DEBUG", "").upper()
    params = NcclParams(
        n_gpus=args.gpus_per_proc, min_bytes=args.min_bytes, max_bytes=args.max_bytes, ranks=tuple(ranks),
        step_factor=args.step_factor, warmup_iters=args.warmup_iters, iters=args.iters, validation=args.check,
        redop="none" if program == "alltoall_perf" else "sum",
        nccl_version=NCCL_VERSION if debug == "VERSION" else None,
    )  # fmt: skip
    before, inside = _info_lines(program, ranks, rails, env, machine) if debug == "INFO" else ([], [])
    busbw = await _busbw(machine, program, ranks, rails, qps, t)
    if busbw <= 0.0:
        header = format_all_reduce_perf(params, [], log_before=before, log_in_table=inside).split("# Out of bounds")[0]
        io.stdout(header)
        await asyncio.sleep(min(MAX_RUN_S, 2.0))
        io.stderr(f"{machine.host}: Test NCCL failure common.cu:1005 'remote process exited or there was a "
                  "network error'\n")
        return 1
    n = len(ranks)
    factor = (n - 1) / n if program == "alltoall_perf" and n > 1 else 1.0
    nodes = len({r.host for r in ranks})
    base_usec = 12.0 + (1.5 * n if program == "alltoall_perf" else 6.0) + (8.0 if nodes > 1 else 0.0)
    rows: list[NcclRow] = []
    for size in _sizes(args):
        algbw = busbw / factor
        out_time = base_usec + size / (algbw * 1e3)
        wobble = fresh_random(machine.model.seed, program, size, t)
        count = size // 4 // n if program == "alltoall_perf" else size // 4
        rows.append(make_row(size, n, out_time * (1.0 + 0.01 * wobble), out_time * (0.997 + 0.01 * (1 - wobble)),
                             factor=factor, count=count, in_checked=False))
    wall = sum(r.out_time_usec + r.in_time_usec for r in rows) * (args.iters + args.warmup_iters) / 1e6
    await asyncio.sleep(min(MAX_RUN_S, wall))
    io.stdout(format_all_reduce_perf(params, rows, log_before=before, log_in_table=inside))
    return 0


async def per_nic_gbps(machine: Machine, nodes: Sequence[str], rails: Sequence[int], qps: int, t: float) -> float:
    """What each NIC of an all-to-all over ``nodes`` moves, Gb/s: its peers times its slowest connection
    (the expert-parallel kernels' RDMA figure starts from it; worked out in a thread, as ``_busbw``)."""
    if len(nodes) < 2:
        return 0.0
    state, solution = machine.model.solution(t)
    rates = await asyncio.to_thread(pair_rates, machine.model.fabric, state, solution, all_pairs(list(nodes), rails),
                                    qps, ("ep", t))
    slowest = min(slowest_per_rail(rates).values(), default=0.0)
    return 0.0 if not math.isfinite(slowest) else (len(nodes) - 1) * slowest * NCCL_NET_SHARE


__all__ = ["NCCL_VERSION", "NVLINK_ALLTOALL_BUSBW_GBS", "per_nic_gbps", "rails_of", "run_exchange_test"]
