"""Pure view models built from a ``Snapshot``: what the screens draw, nothing more.

Built on the refresh worker thread, compared by the screens against what they
show, so that only changed, visible cells are redrawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import hostlist

from fleet.console.snapshot import Snapshot
from fleet.console.topology_model import leaf_group_rail
from fleet.fabric.events import Severity
from fleet.fabric.health import (
    Health,
    HealthThresholds,
    NodeHealth,
    NodeSummary,
    classify,
    optics_margin_db,
    summarize_node,
)
from fleet.fabric.states import HostState

FINDINGS_WINDOW_S = 3600.0
"""Warnings and criticals of the last hour count as open findings."""
FALLING_BEHIND_S = 5.0
"""Live data older than this (seconds, or three refreshes if longer) means the collector or the
store writer cannot keep up."""


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One line of the Fleet table. Rates per second, throughput Gb/s, margins dB."""

    name: str
    health: Health
    state: str
    reasons: tuple[str, ...]
    group: int
    worst_nic: str
    rx_gbps: float | None
    tx_gbps: float | None
    pause_per_s: float | None
    cnp_per_s: float | None
    error_delta: float
    optics_margin_db: float | None
    gpu_util_pct: float | None
    gpu_temp_c: float | None
    xids: tuple[tuple[str, int], ...]
    jobs: tuple[str, ...]
    tenants: tuple[str, ...]
    capacity_gbps: float | None = None
    """Sum of the trained rates of the node's RDMA ports (the rx sparkline's full height)."""
    rx_trend: tuple[float | None, ...] = ()
    """Received Gb/s over the last minutes, oldest first (``console.trends``)."""
    pause_trend: tuple[float | None, ...] = ()
    """PFC pauses per second over the last minutes, oldest first."""


@dataclass(frozen=True, slots=True)
class FleetSummary:
    ok: int
    degraded: int
    down: int
    unknown: int
    connecting: int
    rx_gbps: float
    tx_gbps: float
    open_findings: int
    lag_s: float | None
    """Seconds between the moment shown and the newest sample (live only)."""
    falling_behind: bool


@dataclass(frozen=True, slots=True)
class JobRow:
    job_id: str
    name: str
    user: str
    account: str
    state: str
    nodes: tuple[str, ...]
    nodelist: str
    rx_gbps: float
    tx_gbps: float
    gpu_util_pct: float | None
    degraded_nodes: int


@dataclass(frozen=True, slots=True)
class TenantRow:
    account: str
    jobs: int
    nodes: int
    tx_gbps: float
    gpu_util_pct: float | None
    degraded_nodes: int


@dataclass(frozen=True, slots=True)
class ConsoleView:
    snapshot: Snapshot
    rows: tuple[NodeRow, ...]
    healths: Mapping[str, NodeHealth]
    summary: FleetSummary
    jobs: tuple[JobRow, ...]
    tenants: tuple[TenantRow, ...]
    trends_filled: bool = False
    """Every sparkline bucket of the window has been read (``console.view_memory``): until then a
    few older buckets may still be blank."""


def _state_text(snapshot: Snapshot, name: str, health: Health) -> str:
    """The collection state when it is the story (down, auth failed, key changed, slow,
    connecting), else the node's health."""
    status = snapshot.statuses.get(name)
    if not snapshot.complete and health is not Health.DOWN:
        return "reading…"
    if status is not None and status.state is not HostState.OK:
        return status.state.value
    return "no data" if health is Health.UNKNOWN else health.value


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def build_view(
    snapshot: Snapshot, thresholds: HealthThresholds | None = None, refresh_s: float = 1.0
) -> ConsoleView:
    t = thresholds or HealthThresholds()
    groups = _groups(snapshot)
    jobs_of: dict[str, list[str]] = {}
    tenants_of: dict[str, set[str]] = {}
    for job in snapshot.jobs:
        for node in job.nodes:
            jobs_of.setdefault(node, []).append(job.job_id)
            tenants_of.setdefault(node, set()).add(job.account)
    rows: list[NodeRow] = []
    healths: dict[str, NodeHealth] = {}
    for name in snapshot.node_names:
        summary = summarize_node(snapshot.values.get(name, {}), snapshot.error_deltas.get(name))
        status = snapshot.statuses.get(name)
        health = classify(status, summary, t)
        if not snapshot.complete and health.health is not Health.DOWN:
            health = NodeHealth(Health.UNKNOWN, ("reading the store",))
        healths[name] = health
        capacity = sum(n.rate_gbps for n in summary.nics if n.rate_gbps) or None
        if status is not None and status.state.is_failure:
            # The last values of a host we cannot read are stale; the Node screen still has them.
            summary = NodeSummary()
        rows.append(NodeRow(
            name=name, health=health.health, state=_state_text(snapshot, name, health.health),
            reasons=health.reasons, group=groups.get(name, -1), worst_nic=health.worst_nic,
            rx_gbps=summary.rx_gbps, tx_gbps=summary.tx_gbps, pause_per_s=summary.pause_per_s,
            cnp_per_s=summary.cnp_per_s, error_delta=summary.error_delta,
            optics_margin_db=optics_margin_db(summary.worst_rx_dbm, t),
            gpu_util_pct=summary.gpu_util_pct, gpu_temp_c=summary.gpu_temp_c,
            xids=summary.xids, jobs=tuple(jobs_of.get(name, ())),
            tenants=tuple(sorted(tenants_of.get(name, ()))),
            capacity_gbps=capacity,
        ))
    return ConsoleView(
        snapshot=snapshot, rows=tuple(rows), healths=healths,
        summary=_summarize(snapshot, rows, refresh_s),
        jobs=_job_rows(snapshot, rows), tenants=_tenant_rows(snapshot, rows),
    )


def _groups(snapshot: Snapshot) -> dict[str, int]:
    """Leaf group per node: the inventory's, else the group of the leaf its cables reach."""
    groups = {h.name: h.group for h in snapshot.hosts if h.group >= 0}
    for port in snapshot.ports:
        if port.host not in groups and port.peer_host:
            group, _rail = leaf_group_rail(port.peer_host)
            if group >= 0:
                groups[port.host] = group
    return groups


def _summarize(snapshot: Snapshot, rows: list[NodeRow], refresh_s: float) -> FleetSummary:
    counts = dict.fromkeys(Health, 0)
    for row in rows:
        counts[row.health] += 1
    findings = {
        (e.kind, e.host, e.device, e.port, e.switch)
        for e in snapshot.events
        if e.severity is not Severity.INFO and e.ts >= snapshot.moment_ts - FINDINGS_WINDOW_S
    }
    lag = None
    if snapshot.live and snapshot.newest_sample_ts is not None:
        lag = max(0.0, snapshot.moment_ts - snapshot.newest_sample_ts)
    return FleetSummary(
        ok=counts[Health.OK], degraded=counts[Health.DEGRADED], down=counts[Health.DOWN],
        unknown=counts[Health.UNKNOWN],
        connecting=sum(1 for s in snapshot.statuses.values() if s.state is HostState.CONNECTING),
        rx_gbps=sum(r.rx_gbps or 0.0 for r in rows), tx_gbps=sum(r.tx_gbps or 0.0 for r in rows),
        open_findings=len(findings), lag_s=lag,
        falling_behind=lag is not None and lag > max(FALLING_BEHIND_S, 3 * refresh_s),
    )


def _job_rows(snapshot: Snapshot, rows: list[NodeRow]) -> tuple[JobRow, ...]:
    by_name = {r.name: r for r in rows}
    result = []
    for job in sorted(snapshot.jobs, key=lambda j: j.job_id):
        mine = [by_name[n] for n in job.nodes if n in by_name]
        result.append(JobRow(
            job_id=job.job_id, name=job.name, user=job.user, account=job.account,
            state=job.state, nodes=job.nodes,
            nodelist=hostlist.collect_hostlist(list(job.nodes)) if job.nodes else "",
            rx_gbps=sum(r.rx_gbps or 0.0 for r in mine), tx_gbps=sum(r.tx_gbps or 0.0 for r in mine),
            gpu_util_pct=_mean([r.gpu_util_pct for r in mine if r.gpu_util_pct is not None]),
            degraded_nodes=sum(1 for r in mine if r.health in (Health.DEGRADED, Health.DOWN)),
        ))
    return tuple(result)


def _tenant_rows(snapshot: Snapshot, rows: list[NodeRow]) -> tuple[TenantRow, ...]:
    by_name = {r.name: r for r in rows}
    accounts: dict[str, tuple[set[str], set[str]]] = {}
    for job in snapshot.jobs:
        jobs, nodes = accounts.setdefault(job.account, (set(), set()))
        jobs.add(job.job_id)
        nodes.update(job.nodes)
    result = []
    for account, (jobs, nodes) in sorted(accounts.items()):
        mine = [by_name[n] for n in sorted(nodes) if n in by_name]
        result.append(TenantRow(
            account=account, jobs=len(jobs), nodes=len(nodes),
            tx_gbps=sum(r.tx_gbps or 0.0 for r in mine),
            gpu_util_pct=_mean([r.gpu_util_pct for r in mine if r.gpu_util_pct is not None]),
            degraded_nodes=sum(1 for r in mine if r.health in (Health.DEGRADED, Health.DOWN)),
        ))
    return tuple(result)
