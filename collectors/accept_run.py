"""``fleet accept``: run the suite the criteria ask for, the diagnosis, then every check in turn.

Why in this order: the customer watches; the numbers are measured once (the
standard suite of :mod:`fleet.collectors.baseline_run`), then each agreed check is
judged against them one at a time (``on_check`` after each), so a progress
view or the walkthrough screen can turn each line pass/fail as it happens.

Findings come from ``diagnose`` when one is given; by default from the fleet
diagnosis over the history the suite wrote (:func:`store_diagnosis`), plus
what the suite itself localized: each link-test suspect is a finding of kind
``linktest_<nic|cable|leaf|spine>``, each NIC the local checks flagged one of
kind ``nic_check``, each unreachable node ``node_unreachable``, and the part
that held the all-to-all across every node back ``alltoall_<leaf|nic|rail>``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fleet.collectors.baseline_run import ProgressCallback, SuiteRun, SuiteSettings, run_suite
from fleet.collectors.diagnose_input import read_input
from fleet.collectors.inventory import CablingRow, Inventory
from fleet.collectors.sshpool import SshPool
from fleet.fabric.acceptance import CheckResult, Criteria, evaluate_check
from fleet.fabric.diagnosis import diagnose as run_rules
from fleet.fabric.events import Finding, Severity
from fleet.fabric.records import ProbeRecord
from fleet.fabric.report_model import Report, make_report
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

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
    found += alltoall_findings(run.records)
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


def alltoall_findings(records: Sequence[ProbeRecord]) -> list[Finding]:
    """The part each all-to-all across nodes named as holding it back (``fleet.collectors.probes.alltoall``)."""
    found: list[Finding] = []
    for record in records:
        bottleneck = record.result.get("bottleneck") if record.kind == "alltoall" and record.ok else None
        if not isinstance(bottleneck, dict) or bottleneck.get("kind") not in ("leaf", "nic", "rail"):
            continue
        evidence = {"rail": bottleneck.get("rail"), "busbw_gbytes_s": record.result.get("peak_busbw_gbytes_s"),
                    "efficiency": record.result.get("efficiency"), "reason": bottleneck.get("words", "")}
        kind = str(bottleneck["kind"])
        parts = [str(p).split(" ") for p in str(bottleneck.get("part", "")).split(", ")] if kind == "nic" else [[]]
        for words in parts:
            node, nic = (words[0], words[1]) if len(words) == 2 else ("", "")
            found.append(Finding(
                f"alltoall_{kind}", Severity.WARNING, node=node, nic=nic,
                switch=str(bottleneck.get("part", "")) if kind == "leaf" else "", evidence=evidence,
                next_step={"leaf": "fleet ecmp plan --leaf " + str(bottleneck.get("part", "")),
                           "nic": f"check {node} {nic}: its trained rate, optics and error counters",
                           "rail": "run fleet linktest on that rail"}[kind],
            ))  # fmt: skip
    return found


def store_diagnosis(writer: StoreWriter, db_path: Path, cabling: Sequence[CablingRow]) -> Diagnose:
    """The fleet diagnosis (``fleet.fabric.diagnosis``) over the history the suite wrote, plus :func:`suite_findings`.

    The window runs from the suite's start to now: the collector snapshot, the
    probes and the counters the suite itself stored.
    """

    async def diagnose(run: SuiteRun) -> list[Finding]:
        writer.flush(timeout=60)
        window_s = max(60.0, time.time() - run.baseline.ts + 5.0)

        def read() -> list[Finding]:
            with StoreReader(db_path) as reader:
                return run_rules(read_input(reader, window_s=window_s, cabling=cabling))

        return [*await asyncio.to_thread(read), *suite_findings(run)]

    return diagnose


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
    diagnose = diagnose or store_diagnosis(writer, db_path, inventory.cabling)
    findings = tuple(await diagnose(suite))
    results = []
    for check in criteria.checks:
        result = evaluate_check(check, suite.baseline, findings, criteria.suite)
        results.append(result)
        if on_check is not None:
            on_check(result)
    return AcceptanceRun(criteria, suite, findings, tuple(results))


def acceptance_record(report: Report, run_id: str) -> ProbeRecord:
    """An acceptance run's report data as a record of the store's probes (kind ``acceptance``): what the
    walkthrough shows and exports in read-only mode, where nothing may be measured again."""
    data = dict(report.data)
    return ProbeRecord(ts=time.time(), kind="acceptance", src="", ok=bool(data.get("passed")),
                       params={"title": data.get("title", ""), "criteria": data.get("criteria_source", ""),
                               "sha256": report.sha256},
                       result=data, run_id=run_id)


def stored_acceptance(reader: StoreReader) -> Report | None:
    """The newest stored acceptance run, as the report it was (the same data, the same SHA-256)."""
    found = reader.probes(kind="acceptance", limit=1)
    return make_report("acceptance", found[0].result) if found else None


__all__ = [
    "AcceptanceRun",
    "Diagnose",
    "acceptance_record",
    "alltoall_findings",
    "run_acceptance",
    "store_diagnosis",
    "stored_acceptance",
    "suite_findings",
]
