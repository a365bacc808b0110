"""``torchrun ... test_internode.py``: the UCCL-EP / DeepEP expert-parallel benchmark on the simulated nodes.

Only nodes whose scenario installs it (``[software] ep_bench``) have ``torchrun``;
elsewhere the shell answers ``torchrun: not found`` as a node without PyTorch
does. Every node of a launch runs the same command with its own
``--node_rank``; they meet at ``--master_addr:--master_port`` (the fleet's
``Rendezvous``) and the launch runs once all ``--nnodes`` have joined (or fails
after ``JOIN_TIMEOUT_S``, as torch's rendezvous does). Local rank 0 of node 0
prints the benchmark's text in the layout of the scenario's tool (UCCL-EP's
``transmit:``/``notify:``/``BW:`` labels, or DeepEP's ``notify + transmit us``:
``fleet.collectors.parsers.ep_bench``); the other nodes print only their ranks'
buffer lines.

The figures: a healthy two-node run reaches what UCCL PR #441 measured on
2 x 8 H200 with ConnectX-7 (``tests/fixtures/nccl/uccl-pr441-...``): dispatch
46.79 GB/s RDMA in FP8 and 67.62 in BF16; its combine figure (8.31 GB/s) was a
regression of that build, so combine takes DeepEP's combine / BF16-dispatch
ratio (64.61 / 85.51, ``uccl-pr723-deepep-ht-tuning-3-lines.txt``). NVLink
bandwidth is the RDMA figure times the byte ratio both captures print (3.27:
every byte sent over RDMA is received by ~3.27 GPUs' worth of NVLink traffic
at two nodes). Each figure scales with what a NIC of the launch moves in an
all-to-all now (``fleet.simulator.alltoall.per_nic_gbps``) over what it moves
on an idle fabric: an ECMP collision or a slow NIC shows here as it does in
``alltoall_perf``.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from fleet.fabric.naming import RAILS_PER_NODE
from fleet.simulator.alltoall import per_nic_gbps
from fleet.simulator.exchange import NCCL_NET_SHARE
from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.traffic import fresh_random

JOIN_TIMEOUT_S = 30.0
"""How long a node waits for the rest of its launch (torch elastic's default join timeout is longer;
a simulated fleet answers at once or not at all)."""

SCRIPT = "test_internode.py"

COMBINE_SHARE = 64.61 / 85.51
"""DeepEP's combine over its BF16 dispatch RDMA bandwidth (UCCL PR #723)."""
HEALTHY = {
    "dispatch FP8": (46.79, 1289.0, 67.87),
    "dispatch BF16": (67.62, 1730.0, 82.04),
    "combine": (67.62 * COMBINE_SHARE, 1730.0 / COMBINE_SHARE, 555.15),
}
"""RDMA GB/s, transmit usec, notify usec of a healthy two-node H200 / ConnectX-7 run: UCCL PR #441's
dispatch figures and combine notify time; the combine bandwidth from the BF16 dispatch and
``COMBINE_SHARE`` (the same bytes at that share take the time over it)."""
NVL_PER_RDMA = 3.27
"""NVLink over RDMA bandwidth in both captures (153.08 / 46.79, 262.50 / 80.42)."""


@dataclass(frozen=True)
class TorchrunArgs:
    nnodes: int = 1
    nproc_per_node: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    script: str = ""


_FLAGS = {"--nnodes": "nnodes", "--nproc_per_node": "nproc_per_node", "--nproc-per-node": "nproc_per_node",
          "--node_rank": "node_rank", "--node-rank": "node_rank", "--master_addr": "master_addr",
          "--master-addr": "master_addr", "--master_port": "master_port", "--master-port": "master_port"}


def parse_torchrun(argv: list[str]) -> TorchrunArgs:
    """``torchrun --nnodes=N --nproc_per_node=G --node_rank=K --master_addr=A --master_port=P SCRIPT ...``."""
    values: dict[str, object] = {}
    words = argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-"):
            values["script"] = word
            break
        name, sep, inline = word.partition("=")
        if name not in _FLAGS:
            raise ValueError(f"torchrun: error: unrecognized arguments: {word}")
        value = inline if sep else (words[i + 1] if i + 1 < len(words) else "")
        i += 1 if sep else 2
        key = _FLAGS[name]
        values[key] = value if key == "master_addr" else int(re.sub(r":.*", "", value))
    return TorchrunArgs(**values)  # type: ignore[arg-type]


async def run_torchrun(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """One node's part of a launch (see the module doc)."""
    try:
        args = parse_torchrun(argv)
    except ValueError as error:
        io.stderr(f"{error}\n")
        return 2
    if not args.script.endswith(SCRIPT):
        io.stderr(f"/usr/bin/python3: can't open file '{args.script}': [Errno 2] No such file or directory\n")
        return 2
    key = (args.master_addr, args.master_port)
    rendezvous = machine.rendezvous
    members = rendezvous.groups.setdefault(key, {})
    joined = rendezvous.joined.setdefault(key, asyncio.Event())
    members[args.node_rank] = machine.host
    if len(members) >= args.nnodes:
        joined.set()
    closed = asyncio.ensure_future(io.closed.wait())
    waiting = asyncio.ensure_future(joined.wait())
    try:
        await asyncio.wait({closed, waiting}, timeout=JOIN_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
    finally:
        closed.cancel()
        waiting.cancel()
    if not joined.is_set():
        members.pop(args.node_rank, None)
        io.stderr("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n")
        return 1
    nodes = [members[k] for k in sorted(members)][: args.nnodes]
    ranks = args.nnodes * args.nproc_per_node
    for local in range(args.nproc_per_node):
        rank = args.node_rank * args.nproc_per_node + local
        io.stdout(f"[rank {rank}] Creating buffer: num_local_ranks={args.nproc_per_node}, num_nodes={args.nnodes}, "
                  f"num_ranks={ranks}, nvl_bytes=2000000000, rdma_bytes=1000000000\n")
    if args.node_rank != 0:
        await asyncio.sleep(0.2)
        return 0
    text = await _benchmark_text(machine, nodes, args)
    await asyncio.sleep(0.5)
    if rendezvous.groups.get(key) is members:
        del rendezvous.groups[key]
        rendezvous.joined.pop(key, None)
    if not text:
        io.stderr("RuntimeError: NCCL error: remote process exited or there was a network error\n")
        return 1
    io.stdout(text)
    return 0


async def _benchmark_text(machine: Machine, nodes: list[str], args: TorchrunArgs) -> str:
    """What local rank 0 of node 0 prints; "" when the fabric cannot carry the exchange at all."""
    model = machine.model
    t = model.now()
    rails = range(min(args.nproc_per_node, RAILS_PER_NODE))
    now = await per_nic_gbps(machine, nodes, rails, 1, t)
    if now <= 0.0:
        return ""
    scale = min(1.0, now / (model.fabric.link_gbps * NCCL_NET_SHARE))
    deepep = model.scenario.software.ep_bench == "deepep"
    lines = [f"[config] num_tokens=4096, hidden=7168, num_topk_groups={min(len(nodes), 4)}, num_topk=8",
             "[layout] Kernel performance: 0.052 ms", ""]
    for dtype in ("BF16", "FP8"):
        for topk in ("without", "with"):
            lines.append(f"[testing] Running with {dtype}, {topk} top-k (async=False, previous=False) ... passed")
    lines.append("")
    for name, (rdma, transmit, notify) in HEALTHY.items():
        noise = 1.0 + 0.02 * (fresh_random(model.seed, "ep", name, t) - 0.5)
        bw = rdma * scale * noise
        usec = transmit / max(scale, 1e-6) / noise
        op, _, dtype = name.partition(" ")
        for trial in range(3):
            tried = bw * (0.8 + 0.06 * trial)
            lines.append(_line(deepep, f"[tuning] SMs 24, NVL chunk {4 * (trial + 1)}, RDMA chunk {4 * (trial + 1)}",
                               usec * bw / tried, notify, tried) + " ")
        head = f"[tuning] Best {op}" + (f" ({dtype})" if dtype else "") + ": SMs 24, NVL chunk 8, RDMA chunk 16"
        lines += [_line(deepep, head, usec, notify, bw, combine=op == "combine"), ""]
    return "\n".join(lines) + "\n"


def _line(deepep: bool, head: str, transmit: float, notify: float, rdma: float, *, combine: bool = False) -> str:
    """One tuning line in the tool's own layout (see ``fleet.collectors.parsers.ep_bench``)."""
    nvl = rdma * NVL_PER_RDMA
    if deepep and combine:
        return f"{head}, {notify:.2f} + {transmit:.2f} us, {rdma:.2f} GB/s (RDMA), {nvl:.2f} GB/s (NVL)"
    if deepep:
        return f"{head}: {notify:.0f} + {transmit:.0f} us, {rdma:.2f} GB/s (RDMA), {nvl:.2f} GB/s (NVL)"
    return (f"{head}, transmit: {transmit:.2f} us, notify: {notify:.2f} us, BW: {rdma:.2f} GB/s (RDMA), "
            f"{nvl:.2f} GB/s (NVL)")


__all__ = ["JOIN_TIMEOUT_S", "TorchrunArgs", "parse_torchrun", "run_torchrun"]
