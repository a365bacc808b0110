"""latency_regression: RDMA latency probes well above the same pair's (or job's) earlier probes.

Probes (``ProbeRecord`` kind "lat", from the probe keys, the link test and the
per-job sampler) carry ``p99_usec``. A pair is compared with its own history
before the window, a job with its own: paths differ by hop count, so only a
part's own baseline says whether it got worse.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from fleet.fabric.events import Finding, Severity
from fleet.fabric.records import ProbeRecord
from fleet.fabric.rules.context import Context, rounded

PairKey = tuple[str, str, str, str]


def _p99(probe: ProbeRecord) -> float | None:
    value = probe.result.get("p99_usec")
    return float(value) if probe.ok and isinstance(value, int | float) else None


def _by_pair(probes: Sequence[ProbeRecord]) -> dict[PairKey, list[float]]:
    grouped: dict[PairKey, list[float]] = defaultdict(list)
    for probe in probes:
        p99 = _p99(probe)
        if probe.kind == "lat" and p99 is not None:
            grouped[(probe.src, probe.src_nic, probe.dst, probe.dst_nic)].append(p99)
    return grouped


def _by_job(probes: Sequence[ProbeRecord]) -> dict[str, list[float]]:
    grouped: dict[str, list[float]] = defaultdict(list)
    for probe in probes:
        p99 = _p99(probe)
        if probe.kind == "lat" and probe.job and p99 is not None:
            grouped[probe.job].append(p99)
    return grouped


def _regressed(ctx: Context, now_usec: float, base_usec: float) -> bool:
    return (now_usec >= ctx.t.latency_regression_factor * base_usec
            and now_usec - base_usec >= ctx.t.latency_regression_min_usec)


def rules(ctx: Context) -> list[Finding]:
    found = []
    before = _by_pair(ctx.data.baseline_probes)
    for (src, src_nic, dst, dst_nic), values in sorted(_by_pair(ctx.data.probes).items()):
        history = before.get((src, src_nic, dst, dst_nic))
        if not history:
            continue
        now, base = statistics.median(values), statistics.median(history)
        if _regressed(ctx, now, base):
            found.append(Finding(
                "latency_regression", Severity.WARNING, node=src, nic=src_nic, job=ctx.job_of.get(src, ""),
                evidence={"p99_usec": rounded(now), "baseline_p99_usec": rounded(base), "dst_node": dst,
                          "dst_nic": dst_nic, "probes": len(values)},
                next_step="Look along this pair's path: the two NICs' error and pause counters, their leaves' "
                          "uplinks; `fleet linktest` over the pair's rail localizes a bad part."))
    jobs_before = _by_job(ctx.data.baseline_probes)
    for job, values in sorted(_by_job(ctx.data.probes).items()):
        history = jobs_before.get(job)
        if not history:
            continue
        now, base = statistics.median(values), statistics.median(history)
        if _regressed(ctx, now, base):
            found.append(Finding(
                "latency_regression", Severity.WARNING, job=job,
                evidence={"p99_usec": rounded(now), "baseline_p99_usec": rounded(base), "probes": len(values)},
                next_step="The job's RDMA latency rose: check the findings on its nodes and leaves, and its "
                          "pairs' latencies in the Jobs screen."))
    return found
