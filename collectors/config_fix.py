"""``fleet check fix``: each host's planned fix (``fleet.fabric.config_fix``) as a guarded change.

The hosts go one at a time, the canary first; each host's change:

- refused in read-only mode (nothing connects);
- snapshot: the host is read again and planned again; a plan that differs from the one the user
  confirmed (someone changed the host meanwhile) is refused;
- the commands through the shared runner (``fleet.collectors.guarded_change``: allow-listed,
  stopped at the first refusal, an unanswered command leaves a row that says what may run);
- verified by checking the host again: every check the change was for passes and no check of the
  host that passed before fails;
- kept, or rolled back at once with the commands built from the values read before, then read
  back and compared with the snapshot.

A host that is not kept stops the run: the hosts after it are not attempted (the canary is the first
such stop). Every step is an audit row (``check.fix``, ``check.rollback``) through ``put_action``: the
store writer's, which appends it to the audit hash chain.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fleet.collectors.commands import Command, CommandError, command, write_sysfs
from fleet.collectors.config_read import read_host
from fleet.collectors.guarded_change import (
    READ_ONLY_REFUSAL,
    Argv,
    Audit,
    ChangeRunner,
    StepCallback,
    unknown_state,
)
from fleet.collectors.inventory import Inventory
from fleet.collectors.sshpool import SshPool
from fleet.fabric.config_checks import CheckResult, Verdict, run_checks
from fleet.fabric.config_fix import FixPlan, HostFix, line, plan_fixes
from fleet.fabric.records import ActionRecord
from fleet.fabric.roce_config import FleetConfig, NodeConfig, SwitchConfig
from fleet.fabric.roce_profile import RoceProfile

FIX_ACTION = "check.fix"
ROLLBACK_ACTION = "check.rollback"


@dataclass(frozen=True, slots=True)
class FixSettings:
    timeout_s: float = 60.0
    """Per SSH command (a node's read runs ``lspci -vvv``)."""


@dataclass(frozen=True, slots=True)
class HostOutcome:
    """How one host's change ended. ``state``: kept | rolled-back | refused | failed | unknown |
    rollback-failed | not-attempted."""

    host: str
    state: str
    verdict: str
    canary: bool = False
    audit: tuple[ActionRecord, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"host": self.host, "state": self.state, "verdict": self.verdict, "canary": self.canary,
                "audit_rows": len(self.audit)}


@dataclass(frozen=True, slots=True)
class FixOutcome:
    hosts: tuple[HostOutcome, ...] = ()
    manual: tuple[dict[str, str], ...] = field(default_factory=tuple)

    @property
    def all_kept(self) -> bool:
        return bool(self.hosts) and all(h.state == "kept" for h in self.hosts)

    def as_json(self) -> dict[str, Any]:
        return {"all_kept": self.all_kept, "hosts": [h.as_json() for h in self.hosts], "manual": list(self.manual)}


def build_fix_command(argv: Argv) -> Command:
    """A planned command: ``echo V > /sys/...`` as a checked sysfs write, anything else from the allow-list."""
    if len(argv) == 4 and argv[0] == "echo" and argv[2] == ">":
        if not argv[1].isdigit():
            raise CommandError(f"{argv[1]!r} is not a whole number to write")
        return write_sysfs(argv[3], int(argv[1]))
    return command(*argv)


def _host_results(config: FleetConfig, profile: RoceProfile, host: str) -> list[CheckResult]:
    """The results a check run gives for ``host``'s own parts (link checks left out: both ends fix them)."""
    return [r for r in run_checks(config, profile).results
            if r.target.partition(":")[0] == host and not r.check.startswith("link_")]


def _with(config: FleetConfig, read: NodeConfig | SwitchConfig) -> FleetConfig:
    """``config`` with one host's reading replaced."""
    if isinstance(read, NodeConfig):
        return replace(config, nodes=tuple(read if n.node == read.node else n for n in config.nodes))
    return replace(config, switches=tuple(read if s.switch == read.switch else s for s in config.switches))


def _words(results: Sequence[CheckResult]) -> list[dict[str, str]]:
    return [{"check": r.check, "part": r.target, "verdict": r.verdict.value, "found": r.found} for r in results]


class HostChange:
    """One host's guarded fix; ``config`` is the whole fleet's reading the plan was made from."""

    def __init__(self, pool: SshPool, inventory: Inventory, fix: HostFix, config: FleetConfig,
                 profile: RoceProfile, *, actor: str, put_action: Callable[[ActionRecord], Any],
                 on_step: StepCallback | None = None, settings: FixSettings | None = None,
                 canary: bool = False) -> None:
        self.pool = pool
        self.inventory = inventory
        self.fix = fix
        self.config = config
        self.profile = profile
        self.settings = settings or FixSettings()
        self.canary = canary
        self.audit = Audit(put_action, actor, fix.host, on_step, FIX_ACTION)
        self.runner = ChangeRunner(pool, inventory.host(fix.host), self.audit, self, self.settings.timeout_s,
                                   actions={"apply": FIX_ACTION, "rollback": ROLLBACK_ACTION},
                                   builder=build_fix_command)
        self.read_back = f"fleet check --{'nodes' if fix.role == 'node' else 'switches'} {fix.host}"

    # --- guarded_change.StateWords
    def after_refusal(self, step: str, index: int) -> str:
        host = self.fix.host
        if step == "rollback":
            return (f"{host} still runs the fix, which did not pass its check, from the rollback's command "
                    f"{index + 1} on; restore it by hand: " + "; ".join(line(a) for a in self.fix.rollback))
        if index == 0:
            return f"nothing was changed: {host} runs the configuration of the snapshot"
        if self.fix.os == "cumulus":
            return f"nothing was applied (the commands before only staged it): {host} runs the snapshot's configuration"
        done = "; ".join(line(a) for a in self.fix.apply[:index])
        return (f"{host} runs the snapshot's configuration with the commands before it applied ({done}); "
                f"run `{self.read_back}` and `fleet check fix` again, or undo them: "
                + "; ".join(line(a) for a in self.fix.rollback))

    def after_no_answer(self, step: str, commands: Sequence[Argv], index: int, reason: str) -> str:
        host = self.fix.host
        if step == "rollback":
            return (f"unknown: no answer to the rollback's `{self.runner.sent}` ({reason}): {host} runs the fix, "
                    f"the snapshot's configuration or something between; run `{self.read_back}` to read which")
        subject = "the switch" if self.fix.role == "switch" else host
        return "unknown: " + unknown_state(commands, index, reason, self.read_back, subject)

    def _outcome(self, state: str, verdict: str) -> HostOutcome:
        return HostOutcome(self.fix.host, state, verdict, self.canary, tuple(self.audit.rows))

    async def run(self) -> HostOutcome:
        """The whole change; never raises for a host's fault. Cancelled after a command was sent: audited."""
        try:
            return await self._run()
        except asyncio.CancelledError:
            self.runner.cancelled("the fix", self.read_back, [line(a) for a in self.fix.rollback])
            raise

    async def _read(self) -> NodeConfig | SwitchConfig:
        return await read_host(self.pool, self.inventory, self.fix.host, self.settings.timeout_s)

    async def _run(self) -> HostOutcome:
        host, fix = self.fix.host, self.fix
        snapshot = await self._read()
        if snapshot.reason:
            verdict = f"refused: cannot read {host}'s configuration ({snapshot.reason})"
            self.audit.row("snapshot", before={"plan": fix.as_json()}, verdict=verdict)
            return self._outcome("refused", verdict)
        config = _with(self.config, snapshot)
        before = _host_results(config, self.profile, host)
        again = plan_fixes(run_checks(config, self.profile), config, self.profile).host(host)
        self.audit.row("snapshot", before={"results": _words(before), "plan": fix.as_json()})
        if again != fix:
            verdict = (f"refused: {host}'s configuration changed since the plan was made; run "
                       f"`fleet check fix` again")
            self.audit.row("verdict", before={"plan": fix.as_json()},
                           after={"plan_now": None if again is None else again.as_json()}, verdict=verdict)
            return self._outcome("refused", verdict)
        stopped = await self.runner.run(fix.apply, "apply", before={"results": _words(before)})
        if stopped is not None:
            return self._outcome(stopped.state, stopped.verdict)
        after_read = await self._read()
        if after_read.reason:
            return await self._rollback(before, f"{host} could not be read after the change ({after_read.reason})")
        after = _host_results(_with(config, after_read), self.profile, host)
        planned = {step.check for step in fix.steps}
        was_ok = {(r.check, r.target) for r in before if r.verdict is Verdict.PASS}
        still = [r for r in after if r.check in planned and r.verdict is not Verdict.PASS]
        broken = [r for r in after if (r.check, r.target) in was_ok and r.verdict is not Verdict.PASS]
        if not still and not broken:
            words = f"checked again: {', '.join(sorted(planned))} pass on {host}"
            self.audit.row("verify", before={"results": _words(before)}, after={"results": _words(after)},
                           verdict="verified: " + words)
            verdict = f"kept the fix on {host}: {words}"
            self.audit.row("verdict", verdict=verdict)
            return self._outcome("kept", verdict)
        why = "; ".join([f"{r.check} on {r.target} still {r.verdict.value}s ({r.found})" for r in still] +
                        [f"{r.check} on {r.target} now {r.verdict.value}s ({r.found})" for r in broken])
        self.audit.row("verify", before={"results": _words(before)}, after={"results": _words(after)},
                       verdict="not verified: " + why)
        return await self._rollback(before, why)

    async def _rollback(self, before: list[CheckResult], reason: str) -> HostOutcome:
        host = self.fix.host
        stopped = await self.runner.run(self.fix.rollback, "rollback", before={"results": _words(before)})
        if stopped is not None:
            state = "unknown" if stopped.state == "unknown" else "rollback-failed"
            return self._outcome(state, f"rollback after '{reason}' did not finish: {stopped.verdict}")
        back = await self._read()
        if back.reason:
            check = (f"{host} did not answer the read-back ({back.reason}): it should run the snapshot's "
                     f"configuration; run `{self.read_back}` to prove it")
            state = "unknown"
        else:
            now = _host_results(_with(self.config, back), self.profile, host)
            restored = _words(now) == _words(before)
            state = "rolled-back" if restored else "rollback-failed"
            check = (f"read back: {host} runs the snapshot's configuration again" if restored else
                     f"read back: {host} differs from the snapshot: " + "; ".join(
                         f"{r.check} on {r.target}: {r.found}" for r, b in zip(now, before, strict=False)
                         if (r.verdict, r.found) != (b.verdict, b.found)))
        verdict = f"rolled back the fix on {host}: {reason}; {check}"
        self.audit.row("verdict", action=ROLLBACK_ACTION, verdict=verdict)
        return self._outcome(state, verdict)


async def fix_fleet(pool: SshPool, inventory: Inventory, plan: FixPlan, config: FleetConfig, profile: RoceProfile,
                    *, actor: str, put_action: Callable[[ActionRecord], Any], read_only: bool,
                    canary: str | None = None, on_step: StepCallback | None = None,
                    settings: FixSettings | None = None) -> FixOutcome:
    """Every planned host, the canary first (``canary`` or the plan's first host); stops at the first host
    whose change is not kept."""
    manual = tuple(m.as_json() for m in plan.manual)
    hosts = sorted(plan.hosts, key=lambda h: (h.host != canary, plan.hosts.index(h)))
    if read_only:
        return FixOutcome(tuple(HostOutcome(h.host, "refused", READ_ONLY_REFUSAL, i == 0)
                                for i, h in enumerate(hosts)), manual)
    outcomes: list[HostOutcome] = []
    for index, fix in enumerate(hosts):
        change = HostChange(pool, inventory, fix, config, profile, actor=actor, put_action=put_action,
                            on_step=on_step, settings=settings, canary=index == 0)
        outcome = await change.run()
        outcomes.append(outcome)
        if outcome.state != "kept":
            who = f"the canary {fix.host}" if index == 0 else fix.host
            outcomes += [HostOutcome(h.host, "not-attempted", f"not attempted: {who} ended {outcome.state}")
                         for h in hosts[index + 1:]]
            break
    return FixOutcome(tuple(outcomes), manual)
