"""Diagnosis: from what the collectors stored over a window to findings that name the broken part.

``diagnose(data, thresholds)`` runs the rule families of ``fleet.fabric.rules`` in
an order where the root cause comes first: cables and optics, then congestion
(a storm explains its neighbours' pauses), then spines (loss on NICs with their
own cause is left out), GPUs and QPs, hosts, latency, and last jobs (a stalled
job names the member whose own finding holds it back). Each finding has a kind
(the names below), the part (node, nic, switch, port, job), a severity, the
numbers that show it (units in their keys) and a next step.

Pure: the input is plain data (``DiagnosisInput``, built from the store by
``fleet.collectors.diagnose_input``); nothing here reads a machine or a file.
"""

from __future__ import annotations

from fleet.fabric.events import Event, Finding, Severity
from fleet.fabric.rules import config, congestion, gpus, hosts, jobs, latency, links, spine
from fleet.fabric.rules.context import Context, DiagnosisInput, Reading, SeriesId
from fleet.fabric.rules.thresholds import Thresholds

__all__ = ["FINDING_KINDS", "DiagnosisInput", "Reading", "SeriesId", "Thresholds", "diagnose", "finding_event",
           "finding_json"]

FINDING_KINDS: tuple[str, ...] = (
    "link_down", "link_flapping", "degraded_rate", "optics_low_rx_power", "optics_high_rx_power", "optics_tx_power",
    "optics_tx_bias", "optics_temperature", "high_ber", "miswired", "pfc_storm", "ecn_not_working", "nic_rx_discards",
    "ecmp_imbalance", "spine_loss", "qp_errors", "rnr_backpressure", "gpu_xid", "gpu_thermal", "node_unreachable",
    "node_unresponsive", "node_slow", "latency_regression", "job_slow", "misconfigured",
)

_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


def diagnose(data: DiagnosisInput, thresholds: Thresholds | None = None) -> list[Finding]:
    """Every finding over the window, worst first, then by part."""
    ctx = Context(data, thresholds or Thresholds())
    found: list[Finding] = []
    for family in (links, congestion, spine, gpus, hosts, latency):
        found += family.rules(ctx)
    found = config.rules(ctx, found)  # a failed configuration check is the root cause of what it explains
    found += jobs.rules(ctx, found)
    return sorted(found, key=lambda f: (_RANK[f.severity], f.kind, f.node, f.nic, f.switch, f.port, f.job))


def finding_json(finding: Finding) -> dict[str, object]:
    """A finding as the JSON object ``fleet diagnose --json`` prints."""
    return {"kind": finding.kind, "severity": finding.severity.value, "node": finding.node, "nic": finding.nic,
            "switch": finding.switch, "port": finding.port, "job": finding.job, "evidence": finding.evidence,
            "next_step": finding.next_step, "basis": finding.basis}


def finding_event(finding: Finding, ts: float) -> Event:
    """A finding as an event for the store (kind = the finding's kind), so the Events screen lists it."""
    where = " ".join(p for p in (finding.node, finding.nic, finding.switch, finding.port) if p)
    numbers = ", ".join(f"{k}={v}" for k, v in finding.evidence.items() if isinstance(v, int | float | str) and v != "")
    message = f"{finding.kind.replace('_', ' ')}: {where or finding.job}" + (f" ({numbers})" if numbers else "")
    device = finding.nic or str(finding.evidence.get("gpu", ""))
    return Event(ts, finding.kind, finding.severity, message, host=finding.node or finding.switch, device=device,
                 port=finding.port, switch=finding.switch, job=finding.job,
                 data=finding_json(finding) | {"finding": True})
