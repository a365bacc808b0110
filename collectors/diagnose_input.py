"""The diagnosis' input read from the store: the fleet over one window, as plain data.

No rule lives here (fabric.diagnosis judges); this module only reads: the
newest value of every series, its first value in the window and its value at
the start of the window's newest part (for deltas and rates), a few earlier
moments of the counters that need a longer memory, host states, events, probes, jobs, port records, the cabling plan,
the discovered topology and its comparison with the plan, and the leaf uplinks'
throughput series for the ECMP rule.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from fleet.collectors.inventory import CablingRow
from fleet.fabric.config_checks import CONFIG_CHECK_EVENT
from fleet.fabric.diagnosis import DiagnosisInput, Reading, SeriesId
from fleet.fabric.rules.context import Moment
from fleet.fabric.states import HostState
from fleet.fabric.topology import PlannedCable, build_graph, compare
from fleet.store.reader import StoreReader

RECENT_S = 10.0
"""The newest part of the window the rules also judge on its own (fabric.rules.context): long enough for
a few samples at the collector's 1 s interval, short enough that an onset shows within seconds."""
HISTORY_OFFSETS_S = (300.0, 180.0, 90.0)
"""Moments before the end at which the counters that need a longer memory are read (oldest first): link
downs (one or a pattern), storm watchdog errors, the jobs' own recent throughput."""
HISTORY_METRICS = ("link_downed", "link_down_events_phy", "carrier_changes", "tx_pause_storm_error_events",
                   "tx_bytes")
ECMP_HISTORY_S = 120.0
"""Seconds of leaf uplink throughput read for the ECMP rule whatever the window: fabric.ecmp judges an
imbalance only once it held for its sustain time (60 s)."""
FIRST_VALUE_STEPS = 12
"""The window is scanned at this many instants for each series' first value: a host that started
answering inside the window still gets a starting point for its deltas."""
BASELINE_PROBES = 5000
"""Probes before the window kept as the latency baseline (newest first)."""


def read_input(reader: StoreReader, *, window_s: float, end_ts: float | None = None,
               cabling: Sequence[CablingRow] = ()) -> DiagnosisInput:
    """The fleet over the ``window_s`` seconds up to ``end_ts`` (default: the newest data)."""
    span = reader.time_span()
    end = end_ts if end_ts is not None else (span[1] if span else time.time())
    start = end - window_s
    newest = reader.latest() if end_ts is None else reader.as_of(end)
    latest: dict[SeriesId, Reading] = {(p.host, p.metric, p.device, p.port): Reading(p.ts, p.value) for p in newest}
    first: dict[SeriesId, Reading] = {}
    scan_from = max(start, span[0]) if span else start
    for i in range(FIRST_VALUE_STEPS):
        at = scan_from + (end - scan_from) * i / (FIRST_VALUE_STEPS - 1)
        for p in reader.as_of(at):
            first.setdefault((p.host, p.metric, p.device, p.port), Reading(p.ts, p.value))
        if len(first) >= len(latest):
            break
    recent = {(p.host, p.metric, p.device, p.port): Reading(p.ts, p.value)
              for p in reader.as_of(end - RECENT_S) if p.ts >= start} if window_s > RECENT_S else {}
    history = []
    for offset in HISTORY_OFFSETS_S:
        at = end - offset
        if at >= start or (span is not None and at < span[0]):
            continue
        readings = {(p.host, p.metric, p.device, p.port): Reading(p.ts, p.value)
                    for p in reader.as_of(at, metrics=HISTORY_METRICS)}
        if readings:
            history.append(Moment(at, readings))
    roles = {h.name: h.role for h in reader.hosts()}
    ports = reader.ports()
    statuses = reader.host_statuses(as_of=end_ts, settled=True)  # a host being reconnected keeps its last state
    silent = [h for h, s in statuses.items() if s.state in (HostState.UNREACHABLE, HostState.HUNG)]
    plan = [PlannedCable(row.node, row.nic, row.switch, row.port) for row in cabling]
    graph = build_graph(ports, roles)
    uplinks: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {}
    for link in graph.uplinks():
        series = reader.series(link.a.host, "sw_tx_gbps", link.a.port, "", start=min(start, end - ECMP_HISTORY_S),
                               end=end)
        if series.ts:
            uplinks[(link.a.host, link.a.port)] = (tuple(series.ts), tuple(series.avg))
    events = reader.events(since=start, until=end, limit=10_000)
    if not any(e.kind == CONFIG_CHECK_EVENT for e in events):
        # configuration persists: the newest check run (before the moment asked about) says how things are set
        events += reader.events(until=end_ts, kind=CONFIG_CHECK_EVENT, limit=1)
    return DiagnosisInput(
        start_ts=start, end_ts=end, latest=latest, first=first, statuses=statuses,
        events=events,
        probes=reader.probes(since=start, until=end, limit=10_000),
        baseline_probes=reader.probes(until=start, limit=BASELINE_PROBES),
        roles=roles, ports=ports, plan=plan, graph=graph, comparison=compare(graph, plan, silent=silent),
        jobs=reader.jobs(as_of=end_ts), uplink_tx_gbps=uplinks, recent=recent, recent_s=RECENT_S,
        history=tuple(history),
    )
