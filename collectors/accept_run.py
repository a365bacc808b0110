"""``fleet accept``: run the suite the criteria ask for, the diagnosis, then every check in turn.

Why in this order: the customer watches; the numbers are measured once (the
standard suite of :mod:`collectors.baseline_run`), then each agreed check is
judged against them one at a time (``on_check`` after each), so a progress
view or the walkthrough screen can turn each line pass/fail as it happens.

Findings come from ``diagnose`` when one is given (the fleet diagnosis);
otherwise from what the suite itself localized: each link-test suspect is a
finding of kind ``linktest_<nic|cable|leaf|spine>``, each NIC the local checks
flagged one of kind ``nic_check``, each unreachable node ``node_unreachable``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from collectors.baseline_run import ProgressCallback, SuiteRun, SuiteSettings, run_suite
from collectors.inventory import Inventory
from collectors.sshpool import SshPool
from fabric.acceptance import CheckResult, Criteria, evaluate_check
from fabric.events import Finding, Severity
from store.writer import StoreWriter

Diagnose = Callable[[SuiteRun], Awaitable[Sequence[Finding]]]
"""Given the suite's results, the findings the acceptance checks look at."""


@dataclass(frozen=True, slots=True)
class AcceptanceRun:
    criteria: Criteria
    suite: SuiteRun
    findings: tuple[Finding, ...]
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)


def suite_findings(run: SuiteRun) -> list[Finding]:
    """Findings from the suite's own localization (see the module doc)."""
    found: list[Finding] = []
    for node, reason in sorted(run.baseline.unreachable.items()):
        found.append(Finding("node_unreachable", Severity.CRITICAL, node=node, evidence={"reason": reason},
                             next_step="check the node's power, network and sshd"))
    if run.linktest is None:
        return found
    for suspect in run.linktest.suspects:
        found.append(Finding(
            f"linktest_{suspect.kind}", Severity.CRITICAL, node=suspect.node, nic=suspect.nic, switch=suspect.switch,
            evidence={"bad_probes": suspect.bad, "probes": suspect.total, "reason": suspect.reason},
            next_step=f"inspect {suspect.part}",
        ))  # fmt: skip
    for check in run.linktest.nic_checks:
        if check.problems:
            evidence: dict[str, object] = {"problems": "; ".join(check.problems)}
            if check.rx_power_dbm is not None:
                evidence["rx_power_dbm"] = check.rx_power_dbm
            found.append(Finding("nic_check", Severity.WARNING, node=check.node, nic=check.nic, evidence=evidence,
                                 next_step="clean or replace the cable" if check.cable_suspect else "inspect the NIC"))
    return found


async def run_acceptance(
    inventory: Inventory,
    criteria: Criteria,
    *,
    writer: StoreWriter,
    db_path: Path,
    nodes: tuple[str, ...] | None = None,
    on_progress: ProgressCallback | None = None,
    on_check: Callable[[CheckResult], None] | None = None,
    diagnose: Diagnose | None = None,
    pool: SshPool | None = None,
) -> AcceptanceRun:
    """Measure, diagnose, judge each check in the file's order; never raises for a machine's fault."""
    settings = SuiteSettings.from_table(criteria.suite, nodes=nodes)
    suite = await run_suite(inventory, settings, writer=writer, db_path=db_path, label=criteria.title,
                            on_progress=on_progress, pool=pool)
    findings = tuple(await diagnose(suite)) if diagnose is not None else tuple(suite_findings(suite))
    results = []
    for check in criteria.checks:
        result = evaluate_check(check, suite.baseline, findings)
        results.append(result)
        if on_check is not None:
            on_check(result)
    return AcceptanceRun(criteria, suite, findings, tuple(results))


__all__ = ["AcceptanceRun", "Diagnose", "run_acceptance", "suite_findings"]
