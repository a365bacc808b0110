"""What an all-to-all can reach on this hardware and fabric, and which part holds one back.

Why: expert-parallel (mixture-of-experts) training sends every GPU's tokens to
every other GPU. Unlike a ring all-reduce, whose traffic crosses the spines on
a few ring edges, an all-to-all puts most of every NIC's traffic on the spines
at once: an ECMP collision on one leaf, or one NIC trained slow, holds the
whole collective back. This module gives the figure a result is judged
against, and the pure steps of finding the part that holds it back.

**Bus bandwidth.** nccl-tests reports ``busbw = algbw x (n-1)/n`` for
all-to-all, ``algbw = S/t`` with ``S`` the bytes each rank sends (its whole
send buffer) and ``n`` ranks (nccl-tests ``doc/PERFORMANCE.md``,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md, and
``AlltoAllGetBw`` in ``src/alltoall.cu``): the bytes each rank sends to the
*other* ranks per second.

**The theoretical figure** (GB/s = 1e9 bytes/s):

- one node (NVLink only): every rank sends ``S(n-1)/n`` over its own NVLink
  ports, so ``busbw <= B_nvl``, the GPU's NVLink bandwidth in one direction
  (``fleet.fabric.hardware``).
- ``N`` nodes of ``G`` GPUs, ``b`` = the node's NIC bandwidth per GPU (NICs x
  line rate / 8 / G): each rank sends ``S/n`` to each of the ``(N-1)G`` ranks
  on other nodes, so a node's NICs carry ``G x S(N-1)/N`` per operation and
  ``t >= S G (N-1) / (N G b)``. Hence
  ``busbw <= b x (NG-1) / (G (N-1))``: ``15/8 b`` for two 8-GPU nodes (the
  local eighth of the traffic stays on NVLink), tending to ``b`` for many
  nodes. It is never above ``B_nvl``.
- across a leaf-spine fabric, rail-optimized (NIC ``r`` of every node of a
  leaf group on that group's rail-``r`` leaf, so traffic between nodes of one
  group stays on the leaf: NVIDIA's InfiniBand cluster bring-up procedure,
  https://docs.nvidia.com/networking/display/ibclusterbringupprocedure/setting+the+infiniband+cluster+topology),
  a leaf with ``k`` of the ``N`` nodes sends ``k r_nic (N-k)/(N-1)`` to the
  spines (the share of each NIC's traffic for nodes behind other leaves)
  through uplinks of ``U`` Gb/s in all. So each NIC's rate is at most
  ``U (N-1) / (k (N-k))``: the bisection bound. It binds on an
  oversubscribed leaf (oversubscription = the servers' bandwidth on a leaf /
  its uplink bandwidth, VMware Validated Design, "Oversubscription in the
  Leaf Layer",
  http://pubs.vmware.com/vmware-validated-design-40/topic/com.vmware.vvd.sddc-design.doc/GUID-0ED17BA7-1A17-437E-B5B0-2F5E2DBD4327.html):
  32 node ports and 8 spine uplinks of the same speed carry a quarter of the
  nodes' rate up. The bound uses the least of the NIC rate and every leaf's
  bisection share.

**Which part holds it back** (``holding_back``, ``slow_nodes``,
``hot_leaves``): the probe runs the all-to-all once per rail (one GPU per
node, on that rail's NIC), names a rail whose figure is under ``RAIL_SHARE``
of the rails' median, then asks that rail's leaves for their uplink balance
(an ECMP collision puts a leaf's flows on one hot uplink) and, when no leaf is
at fault, times pairs of nodes on that rail in two rounds of disjoint pairs
(``pair_rounds``): a node slow in both rounds has the slow NIC.

Pure: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fleet.fabric.ecmp import LeafBalance
from fleet.fabric.hardware import HardwareTable

RAIL_SHARE = 0.8
"""A rail under this share of the rails' median all-to-all bus bandwidth holds the collective back:
a rail's figure is its slowest path's, and healthy rails of one fabric differ by a few percent."""

PAIR_SHARE = 0.8
"""A node pair under this share of the round's median send/receive bandwidth is slow."""

HOT_UTIL_PCT = 90.0
"""An uplink this busy (percent of its speed) while its leaf's group is uneven is where the flows pile up;
the same bar as the ECMP balance (``fleet.fabric.ecmp.EcmpThresholds.hot_util_pct``)."""

UNEVEN_RATIO = 1.5
"""max/mean of a leaf's uplink throughput at which its group is uneven (``fleet.fabric.ecmp``)."""


@dataclass(frozen=True, slots=True)
class LeafUplinks:
    """A leaf's nodes in the run and its spine uplinks' total capacity, Gb/s."""

    leaf: str
    nodes: int
    uplink_gbps: float


@dataclass(frozen=True, slots=True)
class AlltoallBound:
    """The theoretical all-to-all bus bandwidth, GB/s, and how it was derived (for the report)."""

    busbw_gbytes_s: float
    basis: str
    per_gpu_gbytes_s: float
    """The per-GPU bandwidth the bound starts from: NVLink (one node) or the NICs after the bisection."""


def alltoall_bound(hardware: HardwareTable, gpu_name: str, nodes: int, gpus_per_node: int,
                   nic_ca_types: Sequence[str] = (), leaves: Sequence[LeafUplinks] = ()) -> AlltoallBound | None:
    """The theoretical bus bandwidth of an all-to-all over ``nodes`` nodes (see the module doc).

    ``nic_ca_types``: one entry per RDMA NIC of a node (needed when ``nodes`` > 1). ``leaves``: per
    leaf of one rail, its nodes in the run and its uplink capacity; empty when the fabric is unknown
    (the bound is then the NICs'). None when a model is unknown: no made-up figure.
    """
    gpu = hardware.gpu(gpu_name)
    if gpu is None or gpus_per_node < 1:
        return None
    nvlink = gpu.nvlink_gbytes_s
    nvl_words = f"{gpu.match} NVLink {nvlink:g} GB/s per direction ({gpu.source})"
    if nodes <= 1:
        return AlltoallBound(nvlink, nvl_words, nvlink)
    nics = [hardware.nic(t) for t in nic_ca_types]
    if not nics or any(n is None for n in nics):
        return None
    nic_gbps = min(n.line_rate_gbps for n in nics if n is not None)
    names = sorted({f"{n.name} {n.line_rate_gbps:g} Gb/s" for n in nics if n is not None})
    words = [f"{len(nics)} x {', '.join(names)} per node"]
    per_nic = nic_gbps
    for leaf in leaves:
        if 0 < leaf.nodes < nodes and leaf.uplink_gbps > 0:
            share = leaf.uplink_gbps * (nodes - 1) / (leaf.nodes * (nodes - leaf.nodes))
            if share < per_nic:
                per_nic = share
                words.append(f"bisection: {leaf.leaf} sends {leaf.nodes} NICs' cross-leaf share through "
                             f"{leaf.uplink_gbps:g} Gb/s of uplinks = {share:.0f} Gb/s per NIC")
    per_gpu = len(nics) * per_nic / 8.0 / gpus_per_node
    factor = (nodes * gpus_per_node - 1) / (gpus_per_node * (nodes - 1))
    busbw = per_gpu * factor
    words.append(f"{per_gpu:.1f} GB/s per GPU x (NG-1)/(G(N-1)) = {factor:.3f} for N={nodes}, G={gpus_per_node}")
    if nvlink < busbw:
        return AlltoallBound(nvlink, f"{'; '.join(words)}; capped by {nvl_words}", nvlink)
    return AlltoallBound(round(busbw, 2), "; ".join(words), per_gpu)


def busbw_factor(ranks: int) -> float:
    """nccl-tests' all-to-all bus bandwidth over algorithm bandwidth: (n-1)/n."""
    return (ranks - 1) / ranks if ranks > 1 else 1.0


def holding_back(rails: Mapping[int, float | None], share: float = RAIL_SHARE) -> list[int]:
    """Rails whose bus bandwidth (GB/s) is under ``share`` of the measured rails' median, slowest first.

    A rail that did not run (None) holds the collective back by definition; with fewer than two
    measured rails nothing can be compared.
    """
    measured = {rail: value for rail, value in rails.items() if value is not None}
    failed = sorted(rail for rail, value in rails.items() if value is None)
    if len(measured) < 2:
        return failed
    median = statistics.median(measured.values())
    slow = sorted((value, rail) for rail, value in measured.items() if value < share * median)
    return failed + [rail for _, rail in slow]


def pair_rounds(nodes: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint node pairs (no node twice in a round) in which every node meets different peers.

    Round one pairs node i with node i + n/2 (so pairs cross leaf groups when the nodes are in
    order), round two node 2i with node 2i + 1; an odd node out meets the first node in a third
    round; with three nodes, the rounds are (a, b) and (b, c). A node slow in every pair it took part
    in is the slow one (``slow_nodes``).
    """
    ordered = list(dict.fromkeys(nodes))
    if len(ordered) < 2:
        return []
    if len(ordered) == 2:
        return [[(ordered[0], ordered[1])]]
    if len(ordered) == 3:
        return [[(ordered[0], ordered[1])], [(ordered[1], ordered[2])]]
    even = ordered[: len(ordered) - len(ordered) % 2]
    half = len(even) // 2
    rounds = [[(even[i], even[i + half]) for i in range(half)], [(even[i], even[i + 1]) for i in range(0, len(even), 2)]]
    if len(ordered) % 2:  # the odd one out meets the first node in a round of its own
        rounds.append([(ordered[-1], ordered[0])])
    return rounds


def slow_pairs(results: Mapping[tuple[str, str], float | None], share: float = PAIR_SHARE) -> set[tuple[str, str]]:
    """Pairs under ``share`` of the median of the measured pairs (GB/s), and every pair that failed."""
    measured = [value for value in results.values() if value is not None]
    median = statistics.median(measured) if measured else 0.0
    return {pair for pair, value in results.items() if value is None or value < share * median}


def slow_nodes(rounds: Sequence[Mapping[tuple[str, str], float | None]], share: float = PAIR_SHARE) -> list[str]:
    """Nodes whose every measured pair was slow in every round it took part in (at least one).

    With one pair in all (two nodes) both ends are named: a two-node test cannot tell them apart.
    """
    seen: dict[str, list[bool]] = {}
    for results in rounds:
        slow = slow_pairs(results, share)
        for pair in results:
            for node in pair:
                seen.setdefault(node, []).append(pair in slow)
    return sorted(node for node, flags in seen.items() if flags and all(flags))


def hot_leaves(balances: Sequence[LeafBalance], ratio: float = UNEVEN_RATIO,
               hot_util_pct: float = HOT_UTIL_PCT) -> list[tuple[str, str]]:
    """Leaves whose uplinks are uneven (max/mean >= ``ratio``) with the hottest at ``hot_util_pct`` or more:
    (leaf, words), the most uneven first. That is how an ECMP collision looks from the switch: the leaf
    hashes its cross-leaf flows onto fewer uplinks than it has, and they queue there."""
    found: list[tuple[float, str, str]] = []
    for balance in balances:
        if len(balance.uplinks) < 2 or balance.imbalance < ratio or balance.hot_util_pct < hot_util_pct:
            continue
        mean = sum(u.tx_gbps for u in balance.uplinks) / len(balance.uplinks)
        hot = next(u for u in balance.uplinks if u.port == balance.hot_port)
        words = (f"{balance.leaf}'s uplinks are uneven (max/mean {balance.imbalance:.1f}): {hot.port} to "
                 f"{hot.spine} at {balance.hot_util_pct:.0f} % of {hot.speed_gbps:g} Gb/s while the mean is "
                 f"{mean:.0f} Gb/s (an ECMP collision: its cross-leaf flows share one uplink)")
        found.append((balance.imbalance, balance.leaf, words))
    return [(leaf, words) for _, leaf, words in sorted(found, key=lambda f: (-f[0], f[1]))]


__all__ = [
    "HOT_UTIL_PCT", "PAIR_SHARE", "RAIL_SHARE", "UNEVEN_RATIO", "AlltoallBound", "LeafUplinks",
    "alltoall_bound", "busbw_factor", "holding_back", "hot_leaves", "pair_rounds", "slow_nodes", "slow_pairs",
]  # fmt: skip
