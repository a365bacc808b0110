"""job_slow: a job moving far less traffic than it did a few minutes ago, or than its peers of the same size.

A synchronous collective steps at its slowest member's pace, so one bad part
(a storming NIC, a flapping link, a throttled GPU) drags the whole job down
while each part's own finding may say little about the job. The job's traffic
is the sum of its nodes' RDMA transmit bytes (``tx_bytes``, from
``port_xmit_data``), per node so that jobs of different sizes compare. Its own
recent level is the best rate of the stretches between the ``history`` moments
before the window; its peers are the other running jobs with as many nodes.
The finding names the slowest member where it can tell: the member with the
worst finding of its own, else the member whose NICs sent the least.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence

from fleet.fabric.events import Finding, Severity
from fleet.fabric.records import JobRecord
from fleet.fabric.rules.context import Context, Reading, SeriesId, rounded

_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


def _gbps(ctx: Context, nodes: Sequence[str], start: Mapping[SeriesId, Reading],
          end: Mapping[SeriesId, Reading]) -> dict[str, float]:
    """Per node, Gb/s its RDMA NICs sent between two moments (nodes without two readings left out)."""
    rates: dict[str, float] = {}
    for node in nodes:
        total, seen = 0.0, False
        for (host, device, port) in ctx.each("tx_bytes"):
            if host != node:
                continue
            key = (host, "tx_bytes", device, port)
            first, last = start.get(key), end.get(key)
            if first is None or last is None or last.ts <= first.ts:
                continue
            grown = last.value - first.value if last.value >= first.value else last.value
            total += grown * 8 / 1e9 / (last.ts - first.ts)
            seen = True
        if seen:
            rates[node] = total
    return rates


def _per_node(rates: Mapping[str, float]) -> float | None:
    return sum(rates.values()) / len(rates) if rates else None


def rules(ctx: Context, found: Sequence[Finding]) -> list[Finding]:
    t = ctx.t
    running = [j for j in ctx.data.jobs if j.state.upper() == "RUNNING" and len(j.nodes) > 1]
    now: dict[str, dict[str, float]] = {j.job_id: _gbps(ctx, j.nodes, ctx.data.first, ctx.data.latest)
                                        for j in running}
    moments = [*(m.readings for m in ctx.data.history), ctx.data.first]
    results = []
    for job in running:
        level = _per_node(now[job.job_id])
        if level is None:
            continue
        earlier = [_per_node(_gbps(ctx, job.nodes, a, b)) for a, b in itertools.pairwise(moments)]
        own = max((e for e in earlier if e is not None), default=None)
        peers = [_per_node(now[other.job_id]) for other in running
                 if other.job_id != job.job_id and len(other.nodes) == len(job.nodes)]
        peer_level = statistics.median(p for p in peers if p is not None) if any(
            p is not None for p in peers) else None
        below_own = own is not None and own >= t.job_min_reference_gbps and level < t.job_slow_ratio * own
        below_peers = (peer_level is not None and peer_level >= t.job_min_reference_gbps
                       and level < t.job_slow_ratio * peer_level)
        if not (below_own or below_peers):
            continue
        straggler, why = _straggler(job, now[job.job_id], found)
        results.append(Finding(
            "job_slow", Severity.WARNING, job=job.job_id,
            evidence={"gbps_per_node": rounded(level), "own_recent_gbps_per_node": rounded(own),
                      "peers_gbps_per_node": rounded(peer_level), "peers": len(peers), "nodes": len(job.nodes),
                      "straggler": straggler, "straggler_why": why},
            next_step=(f"The job runs at a fraction of its pace; its slowest member is {straggler} ({why}): "
                       "fix or drain that part and the job recovers." if straggler else
                       "The job runs at a fraction of its pace and no member stands out: check its nodes' "
                       "findings and the leaves and spines between them (`fleet linktest` over its nodes).")))
    return results


def _straggler(job: JobRecord, rates: Mapping[str, float], found: Sequence[Finding]) -> tuple[str, str]:
    """(the member that holds the job back, why), ("", "") when none can be told."""
    members = set(job.nodes)
    own = sorted((f for f in found if f.node in members), key=lambda f: (_RANK[f.severity], f.kind, f.node))
    if own:
        worst = own[0]
        return worst.node, " ".join(p for p in (worst.kind, worst.nic or str(worst.evidence.get("gpu", ""))) if p)
    if len(rates) < 2:
        return "", ""
    slowest = min(rates, key=lambda n: rates[n])
    others = statistics.median(v for n, v in rates.items() if n != slowest)
    if others > 0 and rates[slowest] < 0.5 * others:
        return slowest, f"sent {rates[slowest]:.1f} Gb/s where the other members sent {others:.1f}"
    return "", ""
