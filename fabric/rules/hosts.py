"""Hosts the collector cannot read: node_unreachable, node_unresponsive, host_unreadable, node_slow.

The collector's own states (fabric.states) are the evidence. A host that was
slow at any time in the window counts, because a streaming agent is only
timed on its first answer. When a large share of hosts turn slow together the
slow part is the collector or the management network, not the hosts: then
only a host much slower than the others is named.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict

from fleet.fabric.events import Finding, Severity
from fleet.fabric.records import HostStatus
from fleet.fabric.rules.context import Context
from fleet.fabric.states import HostState

_SECONDS = re.compile(r"(\d+(?:\.\d+)?) s\b")
"""The collector's reasons say how long a host took: "answered in 2.99 s (slow above 2 s)"."""


def rules(ctx: Context) -> list[Finding]:
    found = []
    for host, status in sorted(ctx.data.statuses.items()):
        if status.state is HostState.UNREACHABLE:
            found.append(_host_finding(ctx, "node_unreachable", Severity.CRITICAL, host, status,
                                       "Check the host's power and management network (BMC, ping, the "
                                       "switch port of its management NIC); then its sshd."))
        elif status.state is HostState.HUNG:
            found.append(_host_finding(ctx, "node_unresponsive", Severity.CRITICAL, host, status,
                                       "It accepts connections but does not answer: look at its console "
                                       "(BMC/serial) for a kernel hang or D-state processes; drain it."))
        elif status.state is HostState.UNPARSABLE:
            found.append(_host_finding(ctx, "host_unreadable", Severity.WARNING, host, status,
                                       "It answers, but what it printed cannot be read (the reason names "
                                       "the command): run that command on it by hand; a broken or "
                                       "upgraded tool is the usual cause. Until then its state is unknown."))
    return found + _slow(ctx)


def _host_finding(ctx: Context, kind: str, severity: Severity, host: str, status: HostStatus, step: str,
                  extra: dict[str, object] | None = None, basis: str = "state") -> Finding:
    evidence: dict[str, object] = {"state": status.state.value, "since_unix_s": round(status.since, 3),
                                   "reason": status.reason, **(extra or {})}
    if ctx.role(host) in ("leaf", "spine"):
        return Finding(kind, severity, switch=host, evidence=evidence, next_step=step, basis=basis)
    return Finding(kind, severity, node=host, job=ctx.job_of.get(host, ""), evidence=evidence, next_step=step,
                   basis=basis)


def _slow(ctx: Context) -> list[Finding]:
    slow: dict[str, HostStatus] = {}
    answer_s: dict[str, float] = defaultdict(float)
    observed = [HostStatus(e.host, HostState.SLOW, e.ts, str(e.data.get("reason", ""))) for e in ctx.data.events
                if e.kind == "host_state" and e.data.get("state") == HostState.SLOW.value and e.host]
    observed += [s for s in ctx.data.statuses.values() if s.state is HostState.SLOW]
    times: dict[str, int] = defaultdict(int)
    for status in observed:
        slow.setdefault(status.host, status)
        times[status.host] += 1
        seconds = _seconds(status.reason)
        if seconds is not None and seconds >= answer_s[status.host]:
            answer_s[status.host] = seconds
            slow[status.host] = status
    for host, status in ctx.data.statuses.items():
        if status.state is HostState.SLOW and ctx.data.end_ts - status.since >= ctx.t.slow_held_s:
            times[host] += 1  # slow all along since its one state change: as good as slow again
        if status.state.is_failure:
            slow.pop(host, None)  # worse than slow: reported as such
    # Nodes only: switch CLIs (NVUE, SONiC show) and Slurm take seconds by design, so a slow answer from
    # them says nothing about the fabric or a job.
    nodes = sorted(h for h in slow if ctx.role(h) in ("node", ""))
    found = []
    if nodes:
        for host in _outliers(ctx, nodes, answer_s, times):
            found.append(_host_finding(ctx, "node_slow", Severity.WARNING, host, slow[host],
                                       "The host answers, late: check its load (`uptime`, `top`), memory "
                                       "pressure and the management link; a slow node delays every "
                                       "collective of its job.",
                                       {"answer_s": answer_s.get(host) or None,
                                        "slow_times_in_window": times[host]}, basis="window"))
    return found


def _outliers(ctx: Context, hosts: list[str], answer_s: dict[str, float], times: dict[str, int]) -> list[str]:
    """The slow hosts worth naming: alone and slow again and again, or much slower than the others.

    Several hosts slow together is what a busy collector or management network looks like; the host
    whose own delay comes on top of that stands out by ``slow_outlier_factor``. A lone host has no
    other to compare with: it must have been slow ``slow_times_min`` times, not once in a hiccup.
    """
    if len(hosts) == 1:
        return hosts if times[hosts[0]] >= ctx.t.slow_times_min else []
    if len(hosts) == 2:  # the other one is the reference
        a, b = (answer_s.get(h, 0.0) for h in hosts)
        factor = ctx.t.slow_outlier_factor
        return [h for h, mine, other in ((hosts[0], a, b), (hosts[1], b, a)) if mine >= factor * other > 0]
    typical = statistics.median(answer_s.get(h, 0.0) for h in hosts)
    return [h for h in hosts if typical > 0 and answer_s.get(h, 0.0) >= ctx.t.slow_outlier_factor * typical]


def _seconds(reason: str) -> float | None:
    match = _SECONDS.search(reason)
    return float(match.group(1)) if match else None
