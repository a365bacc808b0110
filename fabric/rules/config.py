"""Misconfiguration as a root cause: the newest ``fleet check`` run joins the diagnosis.

Why: the symptoms of a misconfigured lossless fabric (ECN marks without
CNPs, pauses instead of CNPs behind a leaf, retransmissions from drops) point
at the wrong place when they stand alone; the configuration that causes them
is known once ``fleet check`` has read it. Each failed check of the newest
stored run (an event of kind ``config_check``, ``fleet.fabric.config_checks``)
becomes a ``misconfigured`` finding that names the setting, where, what it
should be and the fix. When it explains a symptom finding (:data:`EXPLAINS`:
the same part, a symptom that setting causes), the symptom is folded into it:
one finding, the root cause, with the symptom's numbers as evidence.

Pure: reads the ``DiagnosisInput``'s events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fleet.fabric.config_checks import (
    CONFIG_CHECK_EVENT,
    SPECS,
    CheckResult,
    ConfigReport,
    Verdict,
    report_of,
)
from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import Context

EXPLAINS: Mapping[str, frozenset[str]] = {
    "switch_ecn": frozenset({"ecn_not_working"}),
    "nic_dcqcn": frozenset({"ecn_not_working"}),
    "nic_pfc": frozenset({"qp_errors", "nic_rx_discards", "pfc_storm"}),
    "nic_trust": frozenset({"qp_errors", "nic_rx_discards"}),
    "nic_dscp_map": frozenset({"qp_errors", "nic_rx_discards"}),
    "link_pfc": frozenset({"qp_errors", "nic_rx_discards"}),
    "link_dscp": frozenset({"qp_errors", "nic_rx_discards"}),
    "switch_pfc": frozenset({"qp_errors", "nic_rx_discards"}),
    "switch_trust": frozenset({"ecn_not_working", "qp_errors"}),
    "switch_dscp_map": frozenset({"ecn_not_working", "qp_errors"}),
}
"""Check -> the symptom finding kinds its failure causes (docs/checks.md, "In the diagnosis")."""

_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


def newest_report(ctx: Context) -> ConfigReport | None:
    events = sorted((e for e in ctx.data.events if e.kind == CONFIG_CHECK_EVENT), key=lambda e: e.ts)
    return report_of(events[-1]) if events else None


def _gpu_part(rest: str) -> bool:
    """``gpu3`` after a node's name: a GPU of the node (``fleet.fabric.config_checks``), not a NIC."""
    return rest.startswith("gpu") and rest[3:].isdigit()


def _where(part: str, ctx: Context) -> dict[str, str]:
    """``gpu003:mlx5_1`` / ``gpu010`` / ``gpu015:gpu3`` / ``leaf03`` / ``leaf10:Ethernet8`` as finding fields.

    Whether the host is a node or a switch is the inventory's word (its role), whatever the host is
    called; a host the store has no role for is a node when the part names a NIC or a GPU."""
    host, _, rest = part.partition(":")
    role = ctx.role(host)
    is_node = role == "node" or (role == "" and (rest.startswith("mlx5_") or _gpu_part(rest)))
    if is_node:
        return {"node": host, "nic": rest} if rest and not _gpu_part(rest) else {"node": host}
    return {"switch": host, "port": rest}


def _explains(part: str, finding: Finding, ctx: Context) -> bool:
    where = _where(part, ctx)
    if "switch" in where:
        if where["port"]:
            return (finding.switch, finding.port) == (where["switch"], where["port"])
        return finding.switch == where["switch"] or (
            bool(finding.node and finding.nic) and ctx.switch_end(finding.node, finding.nic)[0] == where["switch"])
    if "nic" in where:
        return (finding.node, finding.nic) == (where["node"], where["nic"])
    return finding.node == where["node"]


def _finding(result: CheckResult, part: str, report: ConfigReport, symptoms: Sequence[Finding],
             ctx: Context) -> Finding:
    spec = SPECS[result.check]
    evidence: dict[str, object] = {
        "check": result.check, "setting": spec.title, "expected": result.expected, "found": result.found,
        "checked_at": round(report.ts, 3), "source": spec.url,
    }
    if _gpu_part(part.partition(":")[2]):
        evidence["gpu"] = part.partition(":")[2]
    for symptom in symptoms:
        evidence[f"symptom_{symptom.kind}"] = {k: v for k, v in symptom.evidence.items() if k != "symptom"}
    explained = f" It explains: {', '.join(sorted({s.kind.replace('_', ' ') for s in symptoms}))}." \
        if symptoms else ""
    severity = min((s.severity for s in symptoms), key=_RANK.__getitem__, default=Severity.WARNING)
    fix = f" Fix: {result.fix}." if result.fix else ""
    return Finding(
        "misconfigured", severity, job=next((s.job for s in symptoms if s.job), ""), evidence=evidence,
        next_step=(f"{part}: {spec.title} is {result.found}, the profile expects {result.expected} "
                   f"({spec.expectation}).{explained}{fix} `fleet check fix` applies it on a canary first and "
                   "rolls it back if the check still fails."),
        **_where(part, ctx),
    )


def rules(ctx: Context, found: list[Finding]) -> list[Finding]:
    """``found`` with each failed check of the newest check run as a finding, the symptoms it explains
    folded into it."""
    report = newest_report(ctx)
    if report is None:
        return found
    remaining = list(found)
    causes: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for result in report.results:
        if result.verdict is not Verdict.FAIL:
            continue
        for part in result.culprits:
            if (result.check, part) in seen:
                continue
            seen.add((result.check, part))
            kinds = EXPLAINS.get(result.check, frozenset())
            symptoms = [f for f in remaining if f.kind in kinds and _explains(part, f, ctx)]
            remaining = [f for f in remaining if f not in symptoms]
            causes.append(_finding(result, part, report, symptoms, ctx))
    return remaining + causes
