"""What a new probe is compared with: the same pair's previous result and the last baseline's value.

Why: a latency of 3.1 usec says nothing alone; beside last week's 2.2 usec (or
the value of the last acceptance baseline) it says "this pair got slower".
The CLI (``fleet lat``/``fleet bw``) and the console both call these, so both
compare the same way. Reads the store only.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.fabric.baseline import Baseline, part_id
from fleet.fabric.records import ProbeRecord
from fleet.store.reader import StoreReader

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
    """The last successful stored probe of the same kind, test, pair and NICs before ``record``."""
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
    return None
