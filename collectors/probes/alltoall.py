"""nccl-tests ``alltoall_perf`` on one node (NVLink) or across nodes, rated against the hardware and fabric,
and, when several nodes take part, the part that holds it back named.

Why: expert-parallel training moves its tokens with all-to-all, which puts
most of every NIC's traffic on the spines at once; an ECMP collision on one
leaf or one NIC trained slow costs every expert's step. Steps (each told to
``on_progress``; every command's output is kept in the record's ``raw``):

1. ``ibstat`` on the first node: the NIC models, for the theoretical figure;
   one poll of each leaf of rail 0 the nodes use (from the inventory's
   cabling plan): its spine uplinks, for the bisection bound
   (``fleet.fabric.alltoall``);
2. the all-to-all itself: one node runs ``alltoall_perf -g G``; several run
   under ``mpirun -H a:G,b:G -np N`` from the first node, one rank per GPU,
   with ``NCCL_DEBUG=VERSION`` (``nccl_debug="INFO"`` prints NCCL's own
   lines: the NICs each host used, read by ``fleet.collectors.parsers.nccl_log``);
3. across nodes (``localize``): the all-to-all once per rail, one GPU per
   node on that rail's NIC (``NCCL_IB_HCA=mlx5_r``, ``CUDA_VISIBLE_DEVICES=r``:
   GPU r beside NIC r, as rail-optimized nodes are built); a rail under
   ``RAIL_SHARE`` of the rails' median holds the collective back;
4. for that rail: its leaves' uplinks polled for ``leaf_window_s`` seconds
   (``fleet.collectors.ecmp_measure``): a leaf whose cross-leaf flows pile onto
   one hot uplink is named; otherwise ``sendrecv_perf`` between pairs of nodes
   on that rail in rounds of disjoint pairs names the node whose every pair
   is slow, i.e. its NIC on that rail.

The record (kind ``alltoall``) keeps every size's algorithm and bus bandwidth
(GB/s = 1e9 bytes/s), the peak, the theoretical figure and its basis, the
efficiency (peak / theoretical), each rail's figure and the ``bottleneck``:
``{"kind": "leaf"|"nic"|"rail"|"none", "part", "rail", "words"}``.
Failures are records with ``ok=False`` and ``result["error"]``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import hostlist

from fleet.collectors.commands import Arg, Command, command
from fleet.collectors.ecmp_measure import MeasureFailed, measure_leaf
from fleet.collectors.inventory import CablingRow, InventoryHost
from fleet.collectors.parsers.ibstat import parse_ibstat
from fleet.collectors.parsers.nccl import Nccl, parse_nccl
from fleet.collectors.parsers.nccl_log import parse_nccl_log
from fleet.collectors.probes.allreduce import rdma_nic_types
from fleet.collectors.sshpool import RunResult, SshPool
from fleet.collectors.switches import driver_for
from fleet.fabric.alltoall import (
    RAIL_SHARE,
    LeafUplinks,
    alltoall_bound,
    holding_back,
    hot_leaves,
    pair_rounds,
    slow_nodes,
)
from fleet.fabric.ecmp import EcmpThresholds, LeafBalance
from fleet.fabric.hardware import HardwareTable
from fleet.fabric.naming import nic_name
from fleet.fabric.records import ProbeRecord

ProgressCallback = Callable[[str, int, int], None]
"""Told ``(what runs now, steps done, steps in all)``."""

LEAF_POLL_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class AlltoallSpec:
    """``nodes``: one node (NVLink only) or several (the first launches mpirun)."""

    nodes: tuple[str, ...]
    gpus_per_node: int = 8
    min_bytes: str = "1M"
    max_bytes: str = "1G"
    step_factor: int = 2
    iters: int = 20
    rail_max_bytes: str = "256M"
    """Largest message of the per-rail and pair runs (step 3 and 4): enough to reach a link's rate."""
    localize: bool = True
    nccl_debug: str = "VERSION"
    """``NCCL_DEBUG`` of the all-to-all: ``VERSION`` (the banner) or ``INFO`` (NCCL's NIC choice too)."""
    leaf_window_s: float = 2.0
    leaf_interval_s: float = 1.0
    timeout_s: float = 300.0
    run_id: str = ""

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("an all-to-all needs at least one node")
        if self.gpus_per_node < 1:
            raise ValueError("gpus_per_node must be at least 1")
        if self.nccl_debug not in ("VERSION", "INFO", "WARN"):
            raise ValueError("nccl_debug is VERSION, INFO or WARN")


def _sizes(spec: AlltoallSpec, max_bytes: str) -> list[Arg]:
    return ["-b", spec.min_bytes, "-e", max_bytes, "-f", spec.step_factor, "-n", spec.iters]


def alltoall_command(spec: AlltoallSpec) -> Command:
    """The all-to-all the first node runs (step 2 of the module doc)."""
    nodes = list(dict.fromkeys(spec.nodes))
    test = _sizes(spec, spec.max_bytes)
    if len(nodes) == 1:
        return command("alltoall_perf", *test, "-g", spec.gpus_per_node)
    hosts = ",".join(f"{node}:{spec.gpus_per_node}" for node in nodes)
    return command("mpirun", "-np", len(nodes) * spec.gpus_per_node, "-H", hosts, "-x",
                   f"NCCL_DEBUG={spec.nccl_debug}", "alltoall_perf", *test, "-g", 1)


def rail_command(program: str, spec: AlltoallSpec, nodes: Sequence[str], rail: int) -> Command:
    """``program`` (alltoall_perf or sendrecv_perf) with one rank per node, on GPU ``rail`` and NIC ``mlx5_<rail>``."""
    hosts = ",".join(f"{node}:1" for node in nodes)
    return command("mpirun", "-np", len(nodes), "-H", hosts, "-x", f"NCCL_IB_HCA={nic_name(rail)}",
                   "-x", f"CUDA_VISIBLE_DEVICES={rail}", program, *_sizes(spec, spec.rail_max_bytes), "-g", 1)


def peak_busbw(parsed: Nccl) -> float | None:
    """The largest bus bandwidth of any size, out-of-place or in-place, GB/s."""
    values = [v for row in parsed.rows for v in (row.oop_busbw_gbytes_s, row.ip_busbw_gbytes_s) if v is not None]
    return max(values) if values else None


def rows_json(parsed: Nccl) -> list[dict[str, Any]]:
    """Every size: the better half's algorithm and bus bandwidth (GB/s), the out-of-place time (usec)."""
    rows = []
    for row in parsed.rows:
        busbw = max((v for v in (row.oop_busbw_gbytes_s, row.ip_busbw_gbytes_s) if v is not None), default=None)
        algbw = max((v for v in (row.oop_algbw_gbytes_s, row.ip_algbw_gbytes_s) if v is not None), default=None)
        rows.append({"size_bytes": row.size_bytes, "algbw_gbytes_s": algbw, "busbw_gbytes_s": busbw,
                     "time_usec": row.oop_time_usec})
    return rows


def leaves_of(cabling: Sequence[CablingRow], nodes: Sequence[str], rail: int) -> dict[str, list[str]]:
    """Leaf -> the nodes whose NIC ``mlx5_<rail>`` the cabling plan puts on it (nodes not in the plan left out)."""
    wanted = set(nodes)
    found: dict[str, list[str]] = defaultdict(list)
    for row in cabling:
        if row.node in wanted and row.nic == nic_name(rail):
            found[row.switch].append(row.node)
    return dict(found)


class _Run:
    """One all-to-all probe in progress: its pool, progress, raw output and records (see the module doc)."""

    def __init__(self, pool: SshPool, spec: AlltoallSpec, cabling: Sequence[CablingRow],
                 switches: Sequence[InventoryHost], on_progress: ProgressCallback | None) -> None:
        self.pool = pool
        self.spec = spec
        self.nodes = tuple(dict.fromkeys(spec.nodes))
        self.cabling = cabling
        self.switches = {h.name: h for h in switches}
        self.spines = frozenset(h.name for h in switches if h.role == "spine")
        self.raw: list[str] = []
        self.step = 0
        multi = len(self.nodes) > 1
        self.steps = 1 + (2 + spec.gpus_per_node + 2 if multi and spec.localize else 1 if multi else 0)
        self._told = on_progress or (lambda _what, _done, _total: None)

    def progress(self, what: str) -> None:
        self._told(what, self.step, self.steps)
        self.step += 1

    async def run(self, host: str, cmd: Command, timeout_s: float) -> RunResult:
        result = await self.pool.run(host, cmd, timeout_s)
        self.raw.append(f"# {host}: {cmd.text}\n{result.stdout}{result.stderr}")
        return result

    async def nic_types(self) -> tuple[str, ...]:
        first = self.nodes[0]
        result = await self.run(first, command("ibstat"), min(30.0, self.spec.timeout_s))
        return rdma_nic_types(parse_ibstat(result.stdout).devices, self.spec.gpus_per_node) if result.ok else ()

    async def leaf_uplinks(self, nic_gbps: float | None) -> list[LeafUplinks]:
        """Rail 0's leaves (the rails are built alike): their nodes and uplink capacity, from one poll each."""

        async def one(leaf: str, members: list[str]) -> LeafUplinks | None:
            host = self.switches.get(leaf)
            if host is None:
                return None
            driver = driver_for(host.name, host.os)
            result = await self.run(leaf, driver.poll_command(), LEAF_POLL_TIMEOUT_S)
            if not result.ok:
                return None
            polled = driver.read_poll(result.stdout, time.time())
            uplinks = [p.device for p in polled.ports if p.peer_host in self.spines]
            speeds = [polled.speeds_gbps.get(port) or nic_gbps or 0.0 for port in uplinks]
            return LeafUplinks(leaf, len(members), sum(speeds)) if uplinks and all(speeds) else None

        found = await asyncio.gather(*(one(leaf, members)
                                       for leaf, members in leaves_of(self.cabling, self.nodes, 0).items()))
        return [f for f in found if f is not None]

    async def rails(self) -> dict[int, float | None]:
        """Each rail's all-to-all bus bandwidth (GB/s), one GPU per node; None where it failed."""
        figures: dict[int, float | None] = {}
        for rail in range(self.spec.gpus_per_node):
            self.progress(f"alltoall_perf on rail {rail} ({nic_name(rail)})")
            result = await self.run(self.nodes[0], rail_command("alltoall_perf", self.spec, self.nodes, rail),
                                    self.spec.timeout_s)
            figures[rail] = peak_busbw(parse_nccl(result.stdout)) if result.ok else None
        return figures

    async def leaf_at_fault(self, rail: int) -> tuple[str, str] | None:
        """The leaf of ``rail`` whose uplinks show the collision (``hot_leaves``), polled at once; None when none."""
        leaves = leaves_of(self.cabling, self.nodes, rail)
        hosts = [self.switches[leaf] for leaf in sorted(leaves) if leaf in self.switches]
        if len(leaves) < 2 or not hosts:
            return None
        self.progress(f"uplinks of {', '.join(h.name for h in hosts)} for {self.spec.leaf_window_s:g} s")

        async def one(host: InventoryHost) -> LeafBalance | None:
            try:
                measured = await measure_leaf(self.pool, host, self.spines, EcmpThresholds(),
                                              window_s=self.spec.leaf_window_s, interval_s=self.spec.leaf_interval_s,
                                              timeout_s=LEAF_POLL_TIMEOUT_S)
            except MeasureFailed as failure:
                self.raw.append(f"# {host.name}: uplink balance not measured: {failure}\n")
                return None
            self.raw.append(f"# {host.name}: uplinks {measured.balance.as_json()}\n")
            return measured.balance

        balances = [b for b in await asyncio.gather(*(one(h) for h in hosts)) if b is not None]
        hot = hot_leaves(balances)
        return hot[0] if hot else None

    async def slow_nics(self, rail: int) -> tuple[list[str], list[dict[str, Any]]]:
        """``sendrecv_perf`` pairs on ``rail`` in rounds (``pair_rounds``): the nodes slow in every pair, and
        every pair's figure."""
        rounds: list[dict[tuple[str, str], float | None]] = []
        pairs_json: list[dict[str, Any]] = []
        for number, pairs in enumerate(pair_rounds(self.nodes), start=1):
            self.progress(f"sendrecv_perf round {number} on rail {rail}: {len(pairs)} pairs")

            async def one(a: str, b: str) -> tuple[tuple[str, str], float | None]:
                result = await self.run(a, rail_command("sendrecv_perf", self.spec, (a, b), rail), self.spec.timeout_s)
                return (a, b), peak_busbw(parse_nccl(result.stdout)) if result.ok else None

            found = dict(await asyncio.gather(*(one(a, b) for a, b in pairs)))
            rounds.append(found)
            pairs_json += [{"round": number, "nodes": list(pair), "busbw_gbytes_s": value}
                           for pair, value in found.items()]
        return slow_nodes(rounds), pairs_json


async def run_alltoall(
    pool: SshPool,
    spec: AlltoallSpec,
    *,
    cabling: Sequence[CablingRow] = (),
    switches: Sequence[InventoryHost] = (),
    hardware: HardwareTable | None = None,
    clock: Callable[[], float] = time.time,
    on_progress: ProgressCallback | None = None,
) -> ProbeRecord:
    """Run the all-to-all, rate it and (across nodes) name what holds it back; always returns a record."""
    hardware = hardware or HardwareTable()
    probe = _Run(pool, spec, cabling, switches, on_progress)
    nodes = probe.nodes
    cmd = alltoall_command(spec)
    ts = clock()
    params: dict[str, Any] = {"nodes": list(nodes), "gpus_per_node": spec.gpus_per_node, "command": cmd.text,
                              "min_bytes": spec.min_bytes, "max_bytes": spec.max_bytes, "localize": spec.localize}
    first = nodes[0]
    rest = hostlist.collect_hostlist(list(nodes[1:])) if len(nodes) > 1 else ""

    def record(ok: bool, result: dict[str, Any]) -> ProbeRecord:
        return ProbeRecord(ts=ts, kind="alltoall", src=first, dst=rest, ok=ok, params=params, result=result,
                           raw="".join(probe.raw), run_id=spec.run_id)

    nic_types: tuple[str, ...] = ()
    leaves: list[LeafUplinks] = []
    if len(nodes) > 1:
        probe.progress("ibstat and the leaves' uplinks: the theoretical figure")
        nic_types = await probe.nic_types()
        nic = hardware.nic(nic_types[0]) if nic_types else None
        leaves = await probe.leaf_uplinks(nic.line_rate_gbps if nic else None)
    probe.progress(f"alltoall_perf on {len(nodes)} node(s), {len(nodes) * spec.gpus_per_node} GPUs")
    result = await probe.run(first, cmd, spec.timeout_s)
    if result.exit_status is None and not result.stdout:
        return record(False, {"error": f"{first}: {result.state.value}: {result.reason}"})
    parsed = parse_nccl(result.stdout)
    summary = summarize(parsed, result.stdout, hardware, len(nodes), spec.gpus_per_node, nic_types, leaves)
    if not result.ok or not parsed.rows:
        why = parsed.errors[0] if parsed.errors else (result.stderr.strip().splitlines() or [result.reason])[-1]
        return record(False, {**summary, "error": f"{first}: alltoall_perf failed: {why or 'no result rows'}"})
    if summary["wrong"]:
        return record(False, {**summary, "error": "alltoall_perf found wrong results (#wrong > 0)"})
    if len(nodes) > 1 and spec.localize:
        summary.update(await _localize(probe))
    probe.progress("done")
    return record(True, summary)


async def _localize(probe: _Run) -> dict[str, Any]:
    """Steps 3 and 4 of the module doc: each rail's figure and the bottleneck."""
    rails = await probe.rails()
    found: dict[str, Any] = {"rails": [{"rail": r, "nic": nic_name(r), "busbw_gbytes_s": v} for r, v in rails.items()]}
    slow = holding_back(rails)
    if not slow:
        found["bottleneck"] = {"kind": "none", "part": "", "rail": None,
                               "words": "no rail holds the all-to-all back: every rail within "
                                        f"{100 * (1 - RAIL_SHARE):.0f} % of the rails' median"}
        return found
    rail = slow[0]
    figure = rails[rail]
    measured = [v for v in rails.values() if v is not None]
    rail_words = (f"rail {rail} ({nic_name(rail)}) " + (f"reaches {figure:.1f} GB/s while the rails' median is "
                  f"{statistics.median(measured):.1f}" if figure is not None else "failed"))
    leaf = await probe.leaf_at_fault(rail)
    if leaf is not None:
        found["bottleneck"] = {"kind": "leaf", "part": leaf[0], "rail": rail, "words": f"{rail_words}; {leaf[1]}"}
        return found
    nodes, pairs = await probe.slow_nics(rail)
    found["pairs"] = pairs
    if nodes and len(nodes) < len(probe.nodes):
        parts = [f"{node} {nic_name(rail)}" for node in nodes]
        found["bottleneck"] = {"kind": "nic", "part": ", ".join(parts), "rail": rail,
                               "words": f"{rail_words}; every sendrecv_perf pair of {', '.join(parts)} on that rail "
                                        "is slow, the other pairs are not"}
        return found
    found["bottleneck"] = {"kind": "rail", "part": f"rail {rail}", "rail": rail,
                           "words": f"{rail_words}; no single leaf's uplinks or node's NIC explains it"}
    return found


def summarize(parsed: Nccl, text: str, hardware: HardwareTable, nodes: int, gpus_per_node: int,
              nic_types: Collection[str], leaves: Sequence[LeafUplinks]) -> dict[str, Any]:
    """Bus bandwidth per size, the peak, the theoretical figure and the efficiency, and what NCCL said."""
    peak = peak_busbw(parsed)
    gpu = parsed.ranks[0].device_name if parsed.ranks else ""
    bound = alltoall_bound(hardware, gpu, nodes, gpus_per_node, tuple(nic_types), leaves)
    log = parse_nccl_log(text)
    wrong = any((w or 0) > 0 for row in parsed.rows for w in (row.oop_wrong, row.ip_wrong))
    return {
        "rows": rows_json(parsed),
        "peak_busbw_gbytes_s": peak,
        "ranks": len(parsed.ranks),
        "gpu": gpu,
        "nic_types": list(nic_types),
        "theoretical_busbw_gbytes_s": bound.busbw_gbytes_s if bound else None,
        "theoretical_basis": bound.basis if bound else "unknown GPU or NIC model: add it to the hardware table",
        "efficiency": (peak / bound.busbw_gbytes_s) if bound and peak is not None and bound.busbw_gbytes_s else None,
        "nccl_version": parsed.nccl_version or log.version,
        "nccl_nics": {net.host: [d.name for d in net.devices] for net in log.nets},
        "nccl_transport": sorted({net.transport for net in log.nets}),
        "wrong": wrong,
    }


__all__ = ["AlltoallSpec", "ProgressCallback", "alltoall_command", "leaves_of", "peak_busbw", "rail_command",
           "rows_json", "run_alltoall", "summarize"]
