"""What a new probe is compared with, and its verdict: the link's speed, the same pair's previous
result and the last baseline's value.

Why: a latency of 3.1 usec says nothing alone; beside last week's 2.2 usec (or
the value of the last acceptance baseline) it says "this pair got slower", and a
bandwidth beside the NICs' trained rate says how much of the link it got
(``fleet.fabric.probe_verdict``). The CLI (``fleet lat``/``fleet bw``/``fleet allreduce``)
and the console both call these, so both compare and judge the same way. Reads the
store, and the two NICs' rates from the nodes (``link_rate_gbps``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from fleet.collectors.commands import CommandError, Glob, command
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.collectors.probe_sessions import Launcher
from fleet.fabric.baseline import Baseline, part_id
from fleet.fabric.probe_verdict import (
    ProbeVerdict,
    Reference,
    allreduce_verdict,
    alltoall_verdict,
    bandwidth_verdict,
    ep_verdict,
    latency_verdict,
)
from fleet.fabric.records import ProbeRecord
from fleet.store.reader import StoreReader

RATE_TIMEOUT_S = 10.0

PREVIOUS_SCAN = 200
"""Probes of the same kind touching ``src`` looked at (newest first) to find the same pair's previous one."""


@dataclass(frozen=True, slots=True)
class BaselineValue:
    """One number of the last baseline that matches a probe: ``metric`` in its unit (usec, Gb/s)."""

    label: str
    ts: float
    """Unix seconds when the baseline's suite started."""
    metric: str
    value: float


def previous_probe(reader: StoreReader, record: ProbeRecord) -> ProbeRecord | None:
    """The last successful stored probe of the same kind, test, pair and NICs before ``record``
    (an all-reduce: on the same nodes)."""
    for old in reader.probes(kind=record.kind, host=record.src, until=record.ts - 1e-6, limit=PREVIOUS_SCAN):
        same = (old.src, old.dst, old.src_nic, old.dst_nic) == (record.src, record.dst, record.src_nic,
                                                                record.dst_nic)
        if same and old.ok and old.params.get("test") == record.params.get("test"):
            return old
    return None


def _rail(nic: str) -> int | None:
    tail = nic.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


def baseline_value(reader: StoreReader, record: ProbeRecord) -> BaselineValue | None:
    """The newest stored baseline's number for this probe's part, or None.

    Latency: the link-test pair's ``p99_usec`` on the client NIC's rail (either direction);
    bandwidth: the client NIC's ``bw_avg_gbps``.
    """
    stored = reader.baselines()
    if not stored:
        return None
    _ts, _name, data = stored[-1]
    try:
        baseline = Baseline.from_json(data)
    except (ValueError, KeyError, TypeError):
        return None
    if record.kind == "lat":
        rail = _rail(record.src_nic)
        if rail is None:
            return None
        for src, dst in ((record.src, record.dst), (record.dst, record.src)):
            value = baseline.metric(part_id("pair", rail, src, dst), "p99_usec")
            if value is not None:
                return BaselineValue(baseline.label, baseline.ts, "p99_usec", value)
        return None
    if record.kind == "bw":
        value = baseline.metric(part_id("nic", record.src, record.src_nic), "bw_avg_gbps")
        if value is not None:
            return BaselineValue(baseline.label, baseline.ts, "bw_avg_gbps", value)
    if record.kind in _COLLECTIVE_METRIC:
        nodes = record.params.get("nodes") or [record.src]
        part = part_id("node", nodes[0]) if len(nodes) == 1 else part_id("fleet", record.kind)
        whole = len(nodes) == 1 or set(nodes) == set(baseline.shape.nodes) - set(baseline.unreachable)
        metric = _COLLECTIVE_METRIC[record.kind]
        value = baseline.metric(part, metric) if whole else None
        if value is not None:
            return BaselineValue(baseline.label, baseline.ts, metric, value)
    return None


_COLLECTIVE_METRIC = {"allreduce": "allreduce_busbw_gbytes_s", "alltoall": "alltoall_busbw_gbytes_s",
                      "ep": "ep_dispatch_bf16_rdma_gbytes_s"}
"""The baseline metric a collective probe over the same nodes is compared with (one node: ``node/<n>``,
the baseline's every reachable node: ``fleet/<kind>``)."""

_VALUE_KEY = {"lat": "p99_usec", "bw": "bw_avg_gbps", "allreduce": "peak_busbw_gbytes_s",
              "alltoall": "peak_busbw_gbytes_s", "ep": "dispatch_bf16_rdma_gbytes_s"}
"""The number of a probe that is judged, by kind."""


def _number(record: ProbeRecord, key: str) -> float | None:
    value = record.result.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def reference(previous: ProbeRecord | None, baseline: BaselineValue | None) -> Reference | None:
    """What the probe is judged against: the last baseline's value, else the pair's previous result."""
    if baseline is not None:
        return Reference(baseline.value, f"baseline {baseline.label}")
    if previous is not None:
        value = _number(previous, _VALUE_KEY.get(previous.kind, ""))
        if value is not None:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(previous.ts))
            return Reference(value, f"previous {when}")
    return None


def verdict_of(record: ProbeRecord, previous: ProbeRecord | None, baseline: BaselineValue | None,
               link_gbps: float | None) -> ProbeVerdict | None:
    """The probe's verdict (``fleet.fabric.probe_verdict``); None for a failed probe (its error says it all)."""
    if not record.ok:
        return None
    ref = reference(previous, baseline)
    value = _number(record, _VALUE_KEY.get(record.kind, ""))
    if value is None:
        return None
    if record.kind == "lat":
        return latency_verdict(value, ref)
    if record.kind == "bw":
        return bandwidth_verdict(value, link_gbps, ref)
    if record.kind == "alltoall":
        return alltoall_verdict(value, _number(record, "efficiency"), _number(record, "theoretical_busbw_gbytes_s"),
                                ref)
    if record.kind == "ep":
        return ep_verdict(value, ref)
    nodes = record.params.get("nodes") or [record.src]
    return allreduce_verdict(value, _number(record, "efficiency"), _number(record, "theoretical_busbw_gbytes_s"),
                             len(nodes), ref)


async def link_rate_gbps(launcher: Launcher, record: ProbeRecord) -> float | None:
    """The slower of the two NICs' trained rates (Gb/s), read from each node's sysfs; None when unknown."""

    async def rate(node: str, device: str) -> float | None:
        try:
            cmd = command("grep", "-H", ".", Glob(f"/sys/class/infiniband/{device}/ports/1/rate"))
        except CommandError:
            return None
        result = await launcher.run(node, cmd, RATE_TIMEOUT_S)
        ports = parse_sysfs(result.stdout).ports if result.ok else ()
        return next((p.rate_gbps for p in ports if p.rate_gbps), None)

    if not record.src_nic or not record.dst:
        return None
    rates = await asyncio.gather(rate(record.src, record.src_nic), rate(record.dst, record.dst_nic or record.src_nic))
    known = [r for r in rates if r]
    return min(known) if known else None
