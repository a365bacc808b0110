"""The data of a report people keep: an acceptance walkthrough or a baseline diff, and its SHA-256.

Why a separate model: the HTML and the Markdown files (``console/report_*.py``)
draw the same numbers, and the digest must cover exactly those numbers. The
report's data is one JSON document, every string in it inert (``clean_text``);
:func:`canonical_json` writes it one way only (sorted keys, no spaces, ASCII,
``<``/``>``/``&`` escaped so it can sit inside an HTML ``<script>`` as is),
and ``sha256`` is the SHA-256 of that text.
The HTML embeds the text, so anyone can recompute the digest and see whether
the figures were edited afterwards. The data also carries the head of the
store's audit chain when the report was made (``audit_head``: rows and
SHA-256, docs/audit.md): compared with ``fleet audit`` later, it shows whether
the history of changes to machines was rewritten since.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleet.fabric.acceptance import CheckResult, Criteria
from fleet.fabric.baseline import Baseline, BaselineDiff
from fleet.fabric.config_checks import CHECKS as CONFIG_CHECKS
from fleet.fabric.events import Finding
from fleet.fabric.interconnect import from_baseline
from fleet.fabric.text import clean_text


@dataclass(frozen=True, slots=True)
class Report:
    kind: str
    """``acceptance`` or ``baseline-diff``."""
    data: Mapping[str, Any]
    canonical: str
    sha256: str

    @property
    def title(self) -> str:
        return str(self.data.get("title", ""))


def canonical_json(data: Any) -> str:
    """One text per document: sorted keys, no whitespace, ASCII, safe inside an HTML script element."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def finite(data: Any) -> Any:
    """``data`` fit for a report: every infinite or NaN float written as a string (``"inf"``: JSON
    has no such numbers), every string and key made inert (``clean_text``: a machine's name or
    version with escape sequences, stored before it was cleaned, is text here too)."""
    if isinstance(data, float) and not math.isfinite(data):
        return str(data)
    if isinstance(data, str):
        return clean_text(data)
    if isinstance(data, Mapping):
        return {clean_text(str(k)): finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data


def make_report(kind: str, data: Mapping[str, Any]) -> Report:
    canonical = canonical_json(finite(data))
    return Report(kind, json.loads(canonical), canonical, hashlib.sha256(canonical.encode("ascii")).hexdigest())


_SHA256 = re.compile(r"[0-9a-f]{64}")


def audit_words(head: Any) -> str:
    """The audit head line every report prints: compare it with ``fleet audit`` later."""
    if not isinstance(head, Mapping):
        return "Audit head: not read."
    digest = head.get("sha256")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        return "Audit head: not a SHA-256 (the store's audit head was altered; run fleet audit verify)."
    rows = head.get("rows")
    return (f"Audit head when generated: {rows if isinstance(rows, int) else '?'} rows, sha256 {digest} "
            "(fleet audit shows the head now; fleet audit verify checks the chain).")


def utc_words(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def shape_json(baseline: Baseline) -> dict[str, Any]:
    """Counts, names and the software versions as "value: how many" per key, each count in its unit
    (``software_units``): a firmware version is counted per NIC, the rest per node."""
    versions: dict[str, Counter[str]] = {}
    for info in baseline.software.values():
        for key, value in info.items():
            group = "nic_firmware" if key.startswith("fw_") else key
            versions.setdefault(group, Counter())[value] += 1
    return {
        "nodes": len(baseline.shape.nodes), "nics": len(baseline.shape.nics),
        "switches": len(baseline.shape.switches), "rails": list(baseline.shape.rails),
        "node_names": list(baseline.shape.nodes), "switch_names": list(baseline.shape.switches),
        "software": {k: dict(sorted(v.items())) for k, v in sorted(versions.items())},
        "software_units": {k: "NICs" if k == "nic_firmware" else "nodes" for k in sorted(versions)},
        "unreachable": dict(baseline.unreachable),
    }  # fmt: skip


def charts_json(baseline: Baseline) -> dict[str, Any]:
    """The distributions and the pingmesh matrices the report draws."""
    return {
        "latency_p99_usec": baseline.values("pair", "p99_usec"),
        "bandwidth_gbps": baseline.values("nic", "bw_avg_gbps"),
        "rx_power_dbm": baseline.values("nic", "rx_power_dbm"),
        "allreduce_efficiency": baseline.values("node", "allreduce_efficiency"),
        "matrices": [dict(m) for m in baseline.matrices],
    }


def configuration_json(baseline: Baseline) -> dict[str, Any]:
    """The suite's ``fleet check`` per check: counts and the parts that failed ("read": whether it ran)."""
    rows = []
    for spec in CONFIG_CHECKS:
        entry = baseline.config_checks.get(spec.id)
        if entry is None:
            continue
        odd = list(dict.fromkeys(str(f.get("part", "")) for f in entry.get("failed", ())))
        rows.append({"check": spec.id, "title": spec.title, "group": spec.group, "pass": int(entry.get("pass", 0)),
                     "warn": int(entry.get("warn", 0)), "fail": int(entry.get("fail", 0)), "odd": odd,
                     "source": spec.url})
    return {"read": bool(baseline.config_checks), "checks": rows}


def finding_json(finding: Finding) -> dict[str, Any]:
    return {"kind": finding.kind, "severity": finding.severity.value, "node": finding.node, "nic": finding.nic,
            "switch": finding.switch, "port": finding.port,
            "evidence": {k: v if isinstance(v, int | float | str | bool) or v is None else str(v)
                         for k, v in finding.evidence.items()},
            "next_step": finding.next_step}


def acceptance_report(
    criteria: Criteria,
    baseline: Baseline,
    results: Sequence[CheckResult],
    findings: Sequence[Finding],
    generated_ts: float,
    audit_head: Mapping[str, Any] | None = None,
) -> Report:
    """The walkthrough's report: shape, criteria, each verdict with numbers and threshold, charts, findings;
    ``audit_head``: the store's audit head as ``fleet.store.audit.AuditHead.as_json()`` gives it (None: not read)."""
    return make_report("acceptance", {
        "kind": "acceptance",
        "title": criteria.title,
        "customer": criteria.customer,
        "criteria_source": criteria.source,
        "generated": utc_words(generated_ts),
        "measured_from": utc_words(baseline.ts),
        "tool_version": baseline.tool_version,
        "passed": bool(results) and all(r.passed for r in results),
        "shape": shape_json(baseline),
        "suite": dict(criteria.suite),
        "checks": [r.to_json() for r in results],
        "findings": [finding_json(f) for f in findings],
        "charts": charts_json(baseline),
        "interconnect": from_baseline(baseline).to_json(),
        "notes": list(baseline.notes),
        "configuration": configuration_json(baseline),
        "audit_head": dict(audit_head) if audit_head is not None else None,
    })  # fmt: skip


def diff_report(result: BaselineDiff, generated_ts: float, audit_head: Mapping[str, Any] | None = None) -> Report:
    """The baseline diff's report: both baselines, regressions first, new/gone parts, software, cables;
    ``audit_head`` as for :func:`acceptance_report`."""
    before, after = result.before, result.after
    changes = result.to_json()
    del changes["before"], changes["after"]
    return make_report("baseline-diff", {
        "kind": "baseline-diff",
        "title": f"Baseline diff: {before.label} -> {after.label}",
        "generated": utc_words(generated_ts),
        "tool_version": after.tool_version,
        "before": {"label": before.label, "taken": utc_words(before.ts), "tool_version": before.tool_version,
                   "shape": shape_json(before), "charts": charts_json(before),
                   "interconnect": from_baseline(before).to_json()},
        "after": {"label": after.label, "taken": utc_words(after.ts), "tool_version": after.tool_version,
                  "shape": shape_json(after), "charts": charts_json(after),
                  "interconnect": from_baseline(after).to_json()},
        **changes,
        "audit_head": dict(audit_head) if audit_head is not None else None,
    })  # fmt: skip


__all__ = [
    "Report", "acceptance_report", "audit_words", "canonical_json", "charts_json", "configuration_json", "diff_report",
    "finding_json", "finite", "make_report",
    "shape_json", "utc_words",
]  # fmt: skip
