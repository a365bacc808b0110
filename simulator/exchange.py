"""Many RDMA flows at once under the traffic model: what each node pair of an all-to-all gets.

An all-to-all (nccl-tests ``alltoall_perf``, the expert-parallel kernels) opens
one connection from every node to every other node on each rail: NCCL's PXN
hands a GPU's data for a peer GPU to the local GPU on the peer's rail over
NVLink, so rail ``r`` carries the traffic between the nodes' NICs ``mlx5_r``.
Each connection is ``qps`` RoCE queue pairs (``NCCL_IB_QPS_PER_CONNECTION``),
each a flow the leaves hash onto a spine uplink by its UDP source port
(``fleet.simulator.traffic``): a leaf with an ECMP collision puts all of them on
one uplink. The flows share every link they cross with each other and with
the jobs' traffic already there (what the solve left free, or their fair share
of it, as a probe gets); a collective waits for its slowest connection.

Rates in Gb/s.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from fleet.simulator.faults import NicKey
from fleet.simulator.traffic import (
    Fabric,
    Flow,
    NetState,
    Solution,
    TxEnd,
    fresh_random,
    roce_sport,
)

NCCL_NET_SHARE = 0.97
"""Share of a NIC's line rate NCCL moves: 48-49 GB/s on a 400 Gb/s ConnectX-7
(NCCL maintainers, https://github.com/NVIDIA/nccl-tests/issues/267)."""

Pair = tuple[NicKey, NicKey]
"""(source NIC, destination NIC), both on one rail."""


def _qpn(seed: int, *name: object) -> int:
    """A 24-bit QP number above the range the jobs' connections use (``Fabric.qp_base``)."""
    return 0x400000 + int(fresh_random(seed, "xchg-qp", *name) * 0xBFFF00)


def pair_rates(fabric: Fabric, state: NetState, sol: Solution, pairs: Iterable[Pair], qps: int = 1,
               tag: object = "") -> dict[Pair, float]:
    """Gb/s each directed pair moves while every pair sends at once; 0.0 for a pair whose path is down.

    ``tag`` names the run (its QP numbers, and so its paths, are drawn under it).
    """
    context = fabric.probe_context(state, sol)
    routed: list[tuple[Pair, tuple[TxEnd, ...]]] = []
    own: Counter[TxEnd] = Counter()
    for pair in pairs:
        (src, rail), (dst, _dst_rail) = pair
        for q in range(max(1, qps)):
            lqpn, rqpn = _qpn(fabric.seed, tag, pair, q, "l"), _qpn(fabric.seed, tag, pair, q, "r")
            flow = Flow(0, rail, q, src, dst, lqpn, rqpn, roce_sport(lqpn, rqpn), 0.0)
            path, _spine = fabric.route(flow, state, context.configs, context.nic_port, context.up,
                                        defaultdict(float))
            routed.append((pair, path))
            own.update(path)
    share = {end: _share(sol, end, count) for end, count in own.items()}
    rates: dict[Pair, float] = defaultdict(float)
    for pair, path in routed:
        rate = min(share[end] for end in path)
        loss = 1.0 - math.prod(1.0 - sol.loss.get(end, 0.0) for end in path)
        rates[pair] += rate / (1.0 + 400.0 * loss)
    return dict(rates)


def _share(sol: Solution, end: TxEnd, flows: int) -> float:
    """What one of ``flows`` new flows gets on ``end``: the room the jobs left, or the flows' fair share."""
    capacity = sol.capacity.get(end, 0.0)
    if capacity <= 0:
        return 0.0
    room = max(capacity - sol.actual.get(end, 0.0), capacity * flows / (sol.flows_on.get(end, 0) + flows))
    return room / flows


def all_pairs(nodes: Sequence[str], rails: Iterable[int]) -> list[Pair]:
    """Every ordered pair of distinct nodes, on each rail."""
    return [((a, rail), (b, rail)) for rail in rails for a in nodes for b in nodes if a != b]


def slowest_per_rail(rates: Mapping[Pair, float]) -> dict[int, float]:
    """Each rail's slowest pair, Gb/s: what a synchronous collective on that rail waits for."""
    slowest: dict[int, float] = {}
    for ((_src, rail), _dst), gbps in rates.items():
        slowest[rail] = min(slowest.get(rail, math.inf), gbps)
    return slowest


__all__ = ["NCCL_NET_SHARE", "Pair", "all_pairs", "pair_rates", "slowest_per_rail"]
