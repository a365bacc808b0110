"""Hosts the collector cannot read: node_unreachable, node_unresponsive, node_slow.

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

from fabric.events import Finding, Severity
from fabric.records import HostStatus
from fabric.rules.context import Context
from fabric.states import HostState

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
    return found + _slow(ctx)


def _host_finding(ctx: Context, kind: str, severity: Severity, host: str, status: HostStatus, step: str,
                  extra: dict[str, object] | None = None) -> Finding:
    evidence: dict[str, object] = {"state": status.state.value, "since_unix_s": round(status.since, 3),
                                   "reason": status.reason, **(extra or {})}
    if ctx.role(host) in ("leaf", "spine"):
        return Finding(kind, severity, switch=host, evidence=evidence, next_step=step)
    return Finding(kind, severity, node=host, job=ctx.job_of.get(host, ""), evidence=evidence, next_step=step)


def _slow(ctx: Context) -> list[Finding]:
    slow: dict[str, HostStatus] = {}
    for event in ctx.data.events:
        if event.kind == "host_state" and event.data.get("state") == HostState.SLOW.value and event.host:
            slow[event.host] = HostStatus(event.host, HostState.SLOW, event.ts, str(event.data.get("reason", "")))
    for host, status in ctx.data.statuses.items():
        if status.state is HostState.SLOW:
            slow[host] = status
        elif status.state.is_failure:
            slow.pop(host, None)  # worse than slow: reported as such
    by_role: dict[str, list[str]] = defaultdict(list)
    for host in ctx.data.statuses:
        by_role[ctx.role(host) or "node"].append(host)
    found = []
    for _role, hosts in sorted(by_role.items()):
        mine = sorted(h for h in hosts if h in slow)
        named = mine
        if len(mine) > ctx.t.slow_fleet_fraction * len(hosts):
            seconds = {h: _seconds(slow[h].reason) for h in mine}
            known = [s for s in seconds.values() if s is not None]
            typical = statistics.median(known) if known else None
            named = [h for h in mine if typical is not None and (seconds[h] or 0.0)
                     >= ctx.t.slow_outlier_factor * typical]
        for host in named:
            found.append(_host_finding(ctx, "node_slow", Severity.WARNING, host, slow[host],
                                       "The host answers, late: check its load (`uptime`, `top`), memory "
                                       "pressure and the management link; a slow node delays every "
                                       "collective of its job.",
                                       {"answer_s": _seconds(slow[host].reason)}))
    return found


def _seconds(reason: str) -> float | None:
    match = _SECONDS.search(reason)
    return float(match.group(1)) if match else None
