"""The guarded ECMP change: snapshot, apply to one canary leaf, verify, keep or roll back, audit it all.

Why each step:

- refused in read-only mode, refused for a leaf that needs no remedy (idle,
  balanced, no data: ``fleet.collectors.ecmp_status.guarded_apply``) unless
  forced with a reason, which is audited, and refused when the switch's
  configuration is no longer the one the plan was made from (someone changed
  it meanwhile);
- snapshot first (the hash configuration and, on NVUE, ``nv config
  history``), so the audit says what a rollback returns to;
- before/after numbers come from the leaf's own counters, polled fresh
  through its driver, plus a latency probe whose path crosses the leaf;
- a remedy that restarts switchd is verified only once the switch forwards
  again (members up, LLDP back, traffic flowing; bounded by
  ``restart_wait_s``, each poll told to ``on_step`` as ``wait``);
- kept only when the imbalance or the collision is gone (or fell by
  ``margin``) and the probe did not get worse; otherwise rolled back at once
  and the configuration read back;
- every verdict says which configuration the switch runs afterwards: the
  snapshot's, the remedy's, or unknown (and how to read it back);
- a switch that stops answering mid-change leaves an audit row that says
  what state it may be in: nothing is assumed, and the next plan reads the
  configuration back from the switch.

Every step is one :class:`fleet.fabric.records.ActionRecord` handed to
``put_action`` (the store's audit chain). The commands go through the
machinery every guarded change shares (``fleet.collectors.guarded_change``:
the audit, the runner that sends them, what a stopped command leaves).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleet.collectors import guarded_change
from fleet.collectors.ecmp_config import ConfigSnapshot, read_hash_config
from fleet.collectors.ecmp_measure import (
    MeasureFailed,
    Measurement,
    ProbePair,
    measure_leaf,
    probe_across,
    probe_numbers,
    probe_worse,
)
from fleet.collectors.guarded_change import (
    READ_ONLY_REFUSAL,
    Argv,
    Audit,
    ChangeRunner,
    StepCallback,
)
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import SshPool
from fleet.fabric.ecmp import EcmpThresholds, LeafBalance, improved
from fleet.fabric.ecmp_plan import Remedy
from fleet.fabric.records import ActionRecord, ProbeRecord


@dataclass(frozen=True, slots=True)
class ApplySettings:
    """Seconds unless named otherwise; ``margin`` and ``probe_tolerance`` are fractions."""

    window_s: float = 10.0
    """Counter window before and after the change."""
    interval_s: float = 1.0
    margin: float = 0.25
    """Keep a change that lowers max/mean by this fraction even if it stays above the threshold."""
    probe_tolerance: float = 0.25
    """The probe's p99 may rise by this fraction (plus 0.5 us of noise) before it counts as worse."""
    thresholds: EcmpThresholds = field(default_factory=EcmpThresholds)
    command_timeout_s: float = 30.0
    restart_wait_s: float = 90.0
    """How long a switchd restart may take before the change is judged failed."""
    probe_timeout_s: float = 30.0


@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    """How an apply ended. ``state``: kept | rolled-back | refused | failed | unknown | rollback-failed."""

    leaf: str
    remedy: str
    state: str
    verdict: str
    before: LeafBalance | None = None
    after: LeafBalance | None = None
    probe_before: dict[str, object] = field(default_factory=dict)
    probe_after: dict[str, object] = field(default_factory=dict)
    audit: tuple[ActionRecord, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "leaf": self.leaf, "remedy": self.remedy, "state": self.state, "verdict": self.verdict,
            "before": None if self.before is None else self.before.as_json(),
            "after": None if self.after is None else self.after.as_json(),
            "probe_before": self.probe_before, "probe_after": self.probe_after,
            "audit_rows": len(self.audit),
        }


__all__ = ["ApplyOutcome", "ApplySettings", "EcmpApply", "StepCallback", "unknown_state"]


def unknown_state(leaf: str, commands: Sequence[tuple[str, ...]], failed_index: int, reason: str) -> str:
    """Exactly what a switch that stopped answering at ``commands[failed_index]`` may be running."""
    return guarded_change.unknown_state(commands, failed_index, reason, f"fleet ecmp plan --leaf {leaf}")


def _numbers(balance: LeafBalance | None, probe: ProbeRecord | None) -> dict[str, Any]:
    numbers: dict[str, Any] = {}
    if balance is not None:
        numbers["balance"] = balance.as_json()
    if probe is not None:
        numbers["probe"] = probe_numbers(probe)
    return numbers


class EcmpApply:
    """One guarded apply of ``remedy`` on the canary leaf ``host``.

    ``spines``: names of the spine switches (the ECMP members' neighbours);
    ``probe``: the node pair to probe across the leaf (None: no probe, and
    the audit says so; ``put_probe`` stores each probe run); ``jobs``: jobs
    across the leaf, for the numbers.
    """

    def __init__(self, pool: SshPool, host: InventoryHost, remedy: Remedy, *, spines: Collection[str],
                 actor: str, put_action: Callable[[ActionRecord], Any], settings: ApplySettings | None = None,
                 probe: ProbePair | None = None, jobs: Sequence[str] = (), on_step: StepCallback | None = None,
                 put_probe: Callable[[ProbeRecord], Any] | None = None, force_reason: str = "",
                 flow_gbps: float | None = None) -> None:
        self.force_reason = force_reason
        """Why the change runs on a leaf whose assessment needs no remedy ("": it needs one); audited."""
        self.flow_gbps = flow_gbps
        """One flow's estimated rate (Gb/s) from the leaf's assessment, for the collision estimate."""
        self._on_step = on_step
        self.pool = pool
        self.host = host
        self.remedy = remedy
        self.spines = spines
        self.settings = settings or ApplySettings()
        self.probe_pair = probe
        self.jobs = tuple(jobs)
        self.audit = Audit(put_action, actor, host.name, on_step, "ecmp.apply")
        self._put_probe = put_probe
        self.runner = ChangeRunner(pool, host, self.audit, self, self.settings.command_timeout_s,
                                   actions={"apply": "ecmp.apply", "rollback": "ecmp.rollback"})
        """Sends the remedy's (and the rollback's) commands: ``fleet.collectors.guarded_change``."""

    def _outcome(self, state: str, verdict: str, before: LeafBalance | None = None,
                 after: LeafBalance | None = None, probe_before: ProbeRecord | None = None,
                 probe_after: ProbeRecord | None = None) -> ApplyOutcome:
        return ApplyOutcome(self.host.name, self.remedy.id, state, verdict, before, after,
                            probe_numbers(probe_before), probe_numbers(probe_after), tuple(self.audit.rows))

    async def _measure(self, wait_forwarding_s: float = 0.0, uplinks: Mapping[str, str] | None = None) -> Measurement:
        s = self.settings
        return await measure_leaf(self.pool, self.host, self.spines, s.thresholds, window_s=s.window_s,
                                  interval_s=s.interval_s, jobs=self.jobs, wait_forwarding_s=wait_forwarding_s,
                                  timeout_s=s.command_timeout_s, uplinks=uplinks, flow_gbps=self.flow_gbps,
                                  on_wait=self._waiting)

    def _waiting(self, words: str) -> None:
        """Progress while a restarted switch comes back: shown, not audited (the verify row says how long)."""
        if self._on_step is not None:
            self._on_step("wait", words)

    async def _probe(self) -> ProbeRecord | None:
        if self.probe_pair is None:
            return None
        record = await probe_across(self.pool, self.probe_pair, self.settings.probe_timeout_s)
        if self._put_probe is not None:
            self._put_probe(record)
        return record

    async def run(self, *, read_only: bool) -> ApplyOutcome:
        """The whole sequence; never raises for a switch's fault (the outcome and the audit say what happened).

        Cancelled (Ctrl-C, the console closing) after the first change was
        sent: an audit row says the switch may run the change unverified.
        """
        try:
            return await self._run(read_only)
        except asyncio.CancelledError:
            self.runner.cancelled(self.remedy.id, f"fleet ecmp plan --leaf {self.host.name}",
                                  self.remedy.rollback_lines)
            raise

    async def _run(self, read_only: bool) -> ApplyOutcome:
        remedy, leaf = self.remedy, self.host.name
        if read_only:
            return self._outcome("refused", READ_ONLY_REFUSAL)
        if remedy.advice_only:
            return self._outcome("refused", f"refused: {remedy.id} is advice for the hosts; nothing to apply")
        if self.force_reason:
            self.audit.row("force", before={"remedy": remedy.id, "reason": self.force_reason},
                           verdict=f"forced: {self.force_reason}")
        snapshot = await read_hash_config(self.pool, leaf, self.host.os, self.settings.command_timeout_s)
        self.audit.row("snapshot", commands=snapshot.commands, output=snapshot.text,
                       before={"config": snapshot.config.as_json(), "remedy": remedy.id},
                       verdict="" if snapshot.reachable else f"refused: no snapshot ({snapshot.reason})")
        if not snapshot.reachable:
            return self._outcome("refused", f"refused: cannot read {leaf}'s configuration ({snapshot.reason})")
        if remedy.before is not None and not snapshot.config.same_settings(remedy.before):
            verdict = ("refused: the switch's configuration changed since the plan was made; "
                       f"run `fleet ecmp plan --leaf {leaf}` again")
            self.audit.row("verdict", before={"config": snapshot.config.as_json()},
                           after={"planned_from": remedy.before.as_json()}, verdict=verdict)
            return self._outcome("refused", verdict)
        try:
            measured = await self._measure()
            before = measured.balance
        except MeasureFailed as error:
            self.audit.row("verdict", verdict=f"refused: no counters before the change ({error})")
            return self._outcome("refused", f"refused: no counters before the change ({error})")
        probe_before = await self._probe()
        probe_words = "" if self.probe_pair else "; no probe pair across the leaf: verified on counters only"
        self.audit.row("measure", before=_numbers(before, probe_before),
                       verdict=(f"before: max/mean {before.imbalance:.2f}, hottest uplink {before.hot_port} at "
                                f"{before.hot_util_pct:.0f}%{probe_words}"))
        applied = await self._run_commands(remedy.commands, "apply", snapshot)
        if applied is not None:
            return self._outcome(applied[0], applied[1], before, None, probe_before)
        try:
            wait = self.settings.restart_wait_s if remedy.restarts_switchd else 0.0
            again = await self._measure(wait_forwarding_s=wait, uplinks=measured.uplinks)
            after = again.balance
        except MeasureFailed as error:
            return await self._rollback(snapshot, f"no counters after the change ({error})", before, None,
                                        probe_before, None)
        probe_after = await self._probe()
        keep, why = improved(before, after, self.settings.thresholds, self.settings.margin)
        worse, probe_words = probe_worse(probe_before, probe_after, self.settings.probe_tolerance)
        words = f"{why}; {probe_words}"
        if remedy.restarts_switchd:
            words += f"; switchd back (uplinks up, LLDP, traffic) after {again.waited_s:.0f} s"
        self.audit.row("verify", before=_numbers(before, probe_before), after=_numbers(after, probe_after),
                       verdict=("improved: " if keep and not worse else "not good enough: ") + words)
        if keep and not worse:
            verdict = f"kept {remedy.id} on {leaf}: {words}"
            self.audit.row("verdict", before=_numbers(before, probe_before), after=_numbers(after, probe_after),
                           verdict=verdict)
            return self._outcome("kept", verdict, before, after, probe_before, probe_after)
        reason = probe_words if keep else why
        return await self._rollback(snapshot, reason, before, after, probe_before, probe_after)

    def after_refusal(self, step: str, index: int) -> str:
        """Which configuration the switch runs when ``step``'s command ``index`` was refused (or not built)."""
        leaf, remedy = self.host.name, self.remedy.id
        if step == "rollback":
            return (f"{leaf} still runs {remedy}, which did not pass verification; restore the snapshot by hand: "
                    + "; ".join(self.remedy.rollback_lines))
        if index == 0:
            return f"nothing was applied: {leaf} runs the configuration of the snapshot"
        return f"nothing was applied (the commands before only staged it): {leaf} runs the configuration of the snapshot"

    def after_no_answer(self, step: str, commands: Sequence[Argv], index: int, reason: str) -> str:
        """No answer to ``step``'s command ``index``: what the switch may run (``guarded_change.StateWords``)."""
        leaf = self.host.name
        if step == "rollback":
            return (f"unknown: no answer to the rollback's `{self.runner.sent}` ({reason}): {leaf} "
                    f"runs either {self.remedy.id} or the configuration of the snapshot; run "
                    f"`fleet ecmp plan --leaf {leaf}` to read which")
        return "unknown: " + unknown_state(leaf, commands, index, reason)

    async def _run_commands(self, argvs: Sequence[Argv], step: str,
                            snapshot: ConfigSnapshot) -> tuple[str, str] | None:
        """Run the commands in order; None when all succeeded, else (state, verdict), already audited.

        Each verdict says which configuration the switch runs afterwards (see ``after_refusal``
        and ``unknown_state``)."""
        config = {"config": snapshot.config.as_json()}
        after = {"config": self.remedy.after.as_json()} if step == "apply" and self.remedy.after else config
        stopped = await self.runner.run(argvs, step, before=config, after=after)
        return None if stopped is None else (stopped.state, stopped.verdict)

    async def _rollback(self, snapshot: ConfigSnapshot, reason: str, before: LeafBalance | None,
                        after: LeafBalance | None, probe_before: ProbeRecord | None,
                        probe_after: ProbeRecord | None) -> ApplyOutcome:
        failed = await self._run_commands(self.remedy.rollback, "rollback", snapshot)
        if failed is not None:
            state = "unknown" if failed[0] == "unknown" else "rollback-failed"
            return self._outcome(state, f"rollback after '{reason}' did not finish: {failed[1]}", before, after,
                                 probe_before, probe_after)
        back = await read_hash_config(self.pool, self.host.name, self.host.os, self.settings.command_timeout_s)
        restored = back.reachable and back.config.same_settings(snapshot.config)
        leaf = self.host.name
        if restored and snapshot.config.ecmp_fields is None:
            check = (f"the switch acknowledged the rollback but does not show its hash configuration: {leaf} "
                     "should run the configuration of the snapshot, and cannot be read back to prove it")
        elif restored:
            check = f"configuration read back matches the snapshot: {leaf} runs it again"
        elif not back.reachable:
            check = (f"the switch did not answer the read-back ({back.reason}): {leaf} should run the "
                     f"configuration of the snapshot; run `fleet ecmp plan --leaf {leaf}` to prove it")
        else:
            check = (f"configuration read back differs from the snapshot: {leaf} runs {back.config.as_json()}, "
                     f"neither the snapshot's {snapshot.config.as_json()} nor {self.remedy.id}'s as planned")
        if self.remedy.restarts_switchd:
            check += "; the rollback restarted switchd again"
        state = "rolled-back" if restored else "unknown" if not back.reachable else "rollback-failed"
        verdict = f"rolled back {self.remedy.id} on {leaf}: {reason}; {check}"
        self.audit.row("verdict", action="ecmp.rollback", commands=back.commands, output=back.text,
                       before=_numbers(before, probe_before) | {"config": snapshot.config.as_json()},
                       after=_numbers(after, probe_after) | {"config": back.config.as_json()}, verdict=verdict)
        return self._outcome(state, verdict, before, after, probe_before, probe_after)
