"""What the diagnosis rules read: the fleet over one window, and helpers to ask it questions.

``DiagnosisInput`` is plain data the collectors side builds from the store
(``fleet.collectors.diagnose_input``); ``Context`` indexes it once for the rules.
Deltas and rates come from the first and the last value of each series in the
window, never from one sample, so a single late or missing sample does not
make or hide a finding. A counter that went down was reset (driver reload):
the delta is then its new value (fabric.rates does the same).

Two spans are judged: the whole window, and its newest part (``recent``, the
last ``recent_s`` seconds). A ratio over the whole window is diluted by the
healthy seconds before a fault started (marks answered by CNPs for 25 s of a
30 s window hide 5 s without any); the newest part shows the onset within
seconds, the whole window keeps the evidence until the fault has been over for
a window. A rule fires when either span shows its pattern.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fleet.fabric.events import Event, Finding, Severity
from fleet.fabric.records import HostStatus, JobRecord, PortRecord, ProbeRecord
from fleet.fabric.rules.thresholds import Thresholds
from fleet.fabric.topology import Endpoint, FabricGraph, PlannedCable, TopologyComparison

SeriesId = tuple[str, str, str, str]
"""(host, metric, device, port), as the store names a series."""

PORT_ACTIVE = 4.0
"""IB port state ACTIVE (``port_state``)."""
PHYS_LINK_UP = 5.0
"""Physical state LinkUp (``phys_state``)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One value of a series at ``ts`` (unix seconds)."""

    ts: float
    value: float


class Moment(NamedTuple):
    """Some series as they were at ``ts`` (unix seconds): one of the ``history`` moments."""

    ts: float
    readings: Mapping[SeriesId, Reading]


@dataclass(frozen=True, slots=True)
class DiagnosisInput:
    """The fleet over ``[start_ts, end_ts]`` (unix seconds).

    ``latest``: newest value of each series; ``first``: its earliest value in
    the window (or the last before it); ``recent``: its value ``recent_s``
    before the end (the newest part of the window, see the module doc);
    ``history``: a few earlier moments (oldest first) of the counters that need
    more than a window to be classed (link downs: one or a pattern) or to be
    compared with their own past (job throughput). ``uplink_tx_gbps``: transmit
    throughput series ``(ts, gbps)`` of the leaf uplinks, keyed (leaf, port).
    ``baseline_probes``: probes before the window, to compare latencies with.
    """

    start_ts: float
    end_ts: float
    latest: Mapping[SeriesId, Reading] = field(default_factory=dict)
    first: Mapping[SeriesId, Reading] = field(default_factory=dict)
    statuses: Mapping[str, HostStatus] = field(default_factory=dict)
    events: Sequence[Event] = ()
    probes: Sequence[ProbeRecord] = ()
    baseline_probes: Sequence[ProbeRecord] = ()
    roles: Mapping[str, str] = field(default_factory=dict)
    ports: Sequence[PortRecord] = ()
    plan: Sequence[PlannedCable] = ()
    graph: FabricGraph = field(default_factory=lambda: FabricGraph((), (), (), (), ()))
    comparison: TopologyComparison = field(default_factory=TopologyComparison)
    jobs: Sequence[JobRecord] = ()
    uplink_tx_gbps: Mapping[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = field(
        default_factory=dict)
    recent: Mapping[SeriesId, Reading] = field(default_factory=dict)
    recent_s: float = 0.0
    history: Sequence[Moment] = ()


class Context:
    """Indexes of one ``DiagnosisInput`` for the rules."""

    def __init__(self, data: DiagnosisInput, thresholds: Thresholds) -> None:
        self.data = data
        self.t = thresholds
        self._by_metric: dict[str, dict[tuple[str, str, str], Reading]] = defaultdict(dict)
        for (host, metric, device, port), reading in data.latest.items():
            self._by_metric[metric][(host, device, port)] = reading
        self.plan_by_nic = {(c.node, c.nic): c for c in data.plan}
        self.plan_by_switch_port = {(c.switch, c.port): c for c in data.plan}
        self.job_of: dict[str, str] = {}
        for job in data.jobs:
            for node in job.nodes:
                self.job_of.setdefault(node, job.job_id)
        self.peer_of: dict[Endpoint, Endpoint] = {}
        for link in data.graph.links:
            self.peer_of[link.a], self.peer_of[link.b] = link.b, link.a
        self._nic_ports = sorted(self._by_metric.get("port_state", {}))
        self._jobs_behind: dict[str, list[str]] | None = None
        self.history_s = round(data.end_ts - data.history[0].ts, 1) if data.history else 0.0
        """How far back the oldest ``history`` moment lies, seconds (0: no history read)."""
        self.flagged_nics: set[tuple[str, str]] = set()
        """NICs an earlier rule already explained (link, optics, storm...): later rules look past them."""

    # --- values -------------------------------------------------------------

    def each(self, metric: str) -> dict[tuple[str, str, str], Reading]:
        """Newest value of ``metric`` per (host, device, port)."""
        return self._by_metric.get(metric, {})

    def value(self, host: str, metric: str, device: str = "", port: str = "") -> float | None:
        reading = self._by_metric.get(metric, {}).get((host, device, port))
        return reading.value if reading is not None else None

    @property
    def spans(self) -> tuple[bool, ...]:
        """The spans to judge, ``recent`` flags: the whole window, then its newest part when read."""
        return (False, True) if self.data.recent else (False,)

    def _start(self, key: SeriesId, recent: bool) -> Reading | None:
        if recent:
            reading = self.data.recent.get(key)
            if reading is not None:
                return reading
        return self.data.first.get(key)

    def delta(self, host: str, metric: str, device: str = "", port: str = "", *, recent: bool = False) -> float | None:
        """Increase over the window (``recent``: over its newest part); a counter that went down was reset,
        its new value is the increase."""
        key = (host, metric, device, port)
        last, first = self.data.latest.get(key), self._start(key, recent)
        if last is None or first is None:
            return None
        return last.value - first.value if last.value >= first.value else last.value

    def rate(self, host: str, metric: str, device: str = "", port: str = "", *, recent: bool = False) -> float | None:
        """Increase per second over the window (or its newest part); None without two readings apart in time."""
        key = (host, metric, device, port)
        last, first = self.data.latest.get(key), self._start(key, recent)
        if last is None or first is None or last.ts <= first.ts:
            return None
        increase = self.delta(host, metric, device, port, recent=recent)
        return None if increase is None else increase / (last.ts - first.ts)

    def seconds(self, host: str, metric: str, device: str = "", port: str = "", *, recent: bool = False) -> float:
        """Seconds the delta of a series spans (0 without two readings)."""
        key = (host, metric, device, port)
        last, first = self.data.latest.get(key), self._start(key, recent)
        return max(0.0, last.ts - first.ts) if last is not None and first is not None else 0.0

    def rate_or_gauge(self, host: str, counter: str, gauge: str, device: str, port: str = "1", *,
                      recent: bool = False) -> float | None:
        """The counter's rate over the window (or its newest part), else the collector's own rate gauge."""
        rate = self.rate(host, counter, device, port, recent=recent)
        return rate if rate is not None else self.value(host, gauge, device, port)

    def history_delta(self, host: str, metric: str, device: str = "", port: str = "") -> float | None:
        """Increase from the oldest ``history`` moment to now: the longer memory some rules class by."""
        key = (host, metric, device, port)
        last = self.data.latest.get(key)
        oldest = next((h.readings[key] for h in self.data.history if key in h.readings), None)
        if last is None or oldest is None:
            return None
        return last.value - oldest.value if last.value >= oldest.value else last.value

    def nic_ports(self) -> list[tuple[str, str, str]]:
        """Every (node, device, port) that reported a port state, sorted."""
        return self._nic_ports

    def expected_rate_gbps(self) -> float | None:
        if self.t.expected_rate_gbps is not None:
            return self.t.expected_rate_gbps
        rates = [r.value for r in self.each("rate_gbps").values() if r.value > 0]
        return Counter(rates).most_common(1)[0][0] if rates else None

    def jobs_behind(self, switch: str) -> list[str]:
        """Jobs with a node cabled to ``switch`` (by LLDP, else by the plan)."""
        if self._jobs_behind is None:
            behind: dict[str, set[str]] = defaultdict(set)
            for node, nic, _ in self._nic_ports:
                if node in self.job_of:
                    behind[self.switch_end(node, nic)[0]].add(self.job_of[node])
            self._jobs_behind = {leaf: sorted(jobs) for leaf, jobs in behind.items()}
        return self._jobs_behind.get(switch, [])

    def role(self, host: str) -> str:
        return self.data.roles.get(host, "")

    # --- parts ----------------------------------------------------------------

    def switch_end(self, node: str, nic: str) -> tuple[str, str]:
        """The switch port a NIC's cable lands on: as seen (LLDP), else as planned."""
        peer = self.peer_of.get(Endpoint(node, nic))
        if peer is not None and self.role(peer.host) in ("leaf", "spine", ""):
            return peer.host, peer.port
        planned = self.plan_by_nic.get((node, nic))
        return (planned.switch, planned.port) if planned else ("", "")

    def nic_finding(self, kind: str, severity: Severity, node: str, nic: str, evidence: Mapping[str, Any],
                    next_step: str, basis: str = "window") -> Finding:
        """A finding on a NIC and its cable: the switch end is named too, and the node's job."""
        switch, port = self.switch_end(node, nic)
        return Finding(kind, severity, node=node, nic=nic, switch=switch, port=port,
                       job=self.job_of.get(node, ""), evidence=dict(evidence), next_step=next_step, basis=basis)


def median(values: Iterable[float]) -> float | None:
    found = list(values)
    return statistics.median(found) if found else None


def rounded(value: float | None, digits: int = 3) -> float | None:
    """Numbers for evidence: rounded to ``digits`` significant decimals, None kept."""
    if value is None:
        return None
    return float(f"{value:.{digits}g}") if abs(value) < 1e-3 and value != 0 else round(value, digits)
