"""The guarded change: how fleet sends a configuration change to a machine, whatever the change is.

``fleet ecmp apply`` (``fleet.collectors.ecmp_apply``) and ``fleet check fix``
(``fleet.collectors.config_fix``) change switches and nodes the same way:

- refused in read-only mode (:data:`READ_ONLY_REFUSAL`), before anything connects;
- a snapshot first, so the audit says what a rollback returns to;
- the commands one at a time through :class:`ChangeRunner`: each built from the
  allow-list (``fleet.collectors.commands``: a command that cannot be built is
  not sent, and the audit says so), stopped at the first the machine refuses
  (on NVUE the changes staged before it are detached), and a machine that stops
  answering leaves an audit row that says what it may be running now
  (:func:`unknown_state`): nothing is assumed;
- verified by reading the machine again, kept, or rolled back with the same
  runner and read back;
- cancelled (Ctrl-C, the console closing) after a command was sent: an audit
  row says the machine may run the change unverified (:meth:`ChangeRunner.cancelled`);
- every step one :class:`fleet.fabric.records.ActionRecord` handed to
  ``put_action``: the store writer's, which appends it to the audit hash chain
  (``fleet.store.audit``; ``fleet audit verify`` proves the chain).

What to measure, when a change is good enough and how the verdicts are worded
belong to each change; the words for a stopped command come from a
:class:`StateWords` of the change's own.
"""

from __future__ import annotations

import getpass
import os
import shlex
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fleet.collectors.commands import Command, CommandError, command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import SshPool
from fleet.fabric.records import ActionRecord
from fleet.fabric.text import clean_text

READ_ONLY_REFUSAL = "refused: read-only mode never changes a machine"

Argv = tuple[str, ...]

StepCallback = Callable[[str, str], None]
"""Told each step as it happens: (step, words) for a progress view."""


def actor() -> str:
    """user@host for the audit (a uid when the account has no name, as in some containers)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


class Audit:
    """The audit rows of one change: each is stored through ``put_action`` and told to ``on_step``."""

    def __init__(self, put_action: Callable[[ActionRecord], Any], actor: str, target: str,
                 on_step: StepCallback | None, action: str) -> None:
        self._put = put_action
        self._actor = actor
        self.target = target
        self._on_step = on_step
        self.action = action
        """The action of a row that names none (``ecmp.apply``, ``config.apply``)."""
        self.rows: list[ActionRecord] = []

    def row(self, step: str, *, action: str | None = None, target: str | None = None, commands: Sequence[str] = (),
            output: str = "", before: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
            verdict: str = "") -> None:
        record = ActionRecord(time.time(), self._actor, target or self.target, action or self.action, step,
                              tuple(commands), clean_text(output), before or {}, after or {},
                              clean_text(verdict))  # a machine's words
        self.rows.append(record)
        self._put(record)
        if self._on_step is not None:
            self._on_step(step, verdict or ", ".join(commands) or step)


def unknown_state(commands: Sequence[Argv], failed_index: int, reason: str, read_back: str,
                  subject: str = "the switch") -> str:
    """Exactly what a machine that stopped answering at ``commands[failed_index]`` may be running
    (``read_back``: the fleet command that reads its configuration again; ``subject``: the machine in words)."""
    read = f"run `{read_back}` to read it back"
    argv = commands[failed_index]
    sent = shlex.join(argv)
    if argv[:3] == ("nv", "config", "apply"):
        staged = "set staged" if failed_index > 0 else "nothing staged"
        return (f"{staged}, apply sent, no answer ({reason}): the switch may or may not run the new config; "
                f"{read}")
    if argv[:2] == ("nv", "set"):
        return (f"`{sent}` sent, no answer ({reason}): the change may be staged but was not applied; the running "
                f"config is unchanged unless someone applies it (`nv config diff` on the switch shows staged "
                f"changes, `nv config detach` drops them); {read}")
    return f"`{sent}` sent, no answer ({reason}): {subject} may or may not run the new config; {read}"


class StateWords(Protocol):
    """How a change words the configuration its machine runs after one of its commands stopped."""

    def after_refusal(self, step: str, index: int) -> str:
        """``step``'s command ``index`` was refused (or could not be built): what runs now."""
        ...

    def after_no_answer(self, step: str, commands: Sequence[Argv], index: int, reason: str) -> str:
        """No answer to ``step``'s command ``index``: the whole verdict (``unknown: ...``)."""
        ...


@dataclass(frozen=True, slots=True)
class Stopped:
    """Why a step's commands stopped. ``state``: failed | rollback-failed | unknown."""

    state: str
    verdict: str


def build(argv: Argv) -> Command:
    """The default builder: ``argv`` as one allow-listed command."""
    return command(*argv)


class ChangeRunner:
    """Sends one machine's change (or rollback) commands in order; every outcome is an audit row.

    ``actions``: the audit action of each step (``apply``, ``rollback``); ``builder`` makes a
    ``Command`` of an argument vector (raises ``CommandError`` for one that must not be sent).
    """

    def __init__(self, pool: SshPool, host: InventoryHost, audit: Audit, words: StateWords, timeout_s: float, *,
                 actions: Mapping[str, str], builder: Callable[[Argv], Command] = build) -> None:
        self.pool = pool
        self.host = host
        self.audit = audit
        self.words = words
        self.timeout_s = timeout_s
        self.actions = actions
        self.builder = builder
        self.sent = ""
        """The last command sent ("" until the first)."""
        self.rolling_back = False

    async def run(self, argvs: Sequence[Argv], step: str, *, before: dict[str, Any] | None = None,
                  after: dict[str, Any] | None = None) -> Stopped | None:
        """Run the commands in order; None when all succeeded, else why they stopped, already audited.

        ``before``/``after``: the configuration the audit row of a finished (or unanswered) step names."""
        if step == "rollback":
            self.rolling_back = True
        action = self.actions.get(step, self.audit.action)
        name = self.host.name
        lines: list[str] = []
        outputs: list[str] = []
        for index, argv in enumerate(argvs):
            try:
                cmd = self.builder(argv)
            except CommandError as error:
                verdict = (f"failed: {error}, so `{shlex.join(argv)}` was not sent; "
                           f"{self.words.after_refusal(step, index)}")
                self.audit.row(step, action=action, commands=lines, output="".join(outputs), verdict=verdict)
                return Stopped("failed", verdict)
            lines.append(cmd.text)
            self.sent = cmd.text
            result = await self.pool.run(name, cmd, self.timeout_s)
            outputs.append(f"$ {cmd.text}\n{result.stdout}{result.stderr}")
            if result.exit_status is None:
                verdict = self.words.after_no_answer(step, argvs, index, result.reason)
                self.audit.row(step, action=action, commands=lines, output="".join(outputs), before=before,
                               verdict=verdict)
                return Stopped("unknown", verdict)
            if result.exit_status != 0:
                detach = ""
                if self.host.os == "cumulus" and index > 0:
                    dropped = await self.pool.run(name, command("nv", "config", "detach"), self.timeout_s)
                    lines.append("nv config detach")
                    detach = ("; staged changes detached" if dropped.ok
                              else f"; `nv config detach` failed ({dropped.reason}): changes may stay staged")
                verdict = (f"failed: the switch refused `{cmd.text}` ({result.reason}){detach}; "
                           if self.host.role in ("leaf", "spine") else
                           f"failed: {name} refused `{cmd.text}` ({result.reason}); ") + \
                    self.words.after_refusal(step, index)
                self.audit.row(step, action=action, commands=lines, output="".join(outputs), verdict=verdict)
                return Stopped("failed" if step != "rollback" else "rollback-failed", verdict)
        self.audit.row(step, action=action, commands=lines, output="".join(outputs), before=before, after=after,
                       verdict=f"{step} sent and acknowledged")
        return None

    def cancelled(self, change: str, read_back: str, rollback_lines: Sequence[str]) -> None:
        """The audit row of a change cancelled after a command was sent (none when nothing was sent)."""
        name = self.host.name
        if self.rolling_back:
            self.audit.row("verdict", action=self.actions.get("rollback"), verdict=(
                f"cancelled during the rollback after `{self.sent}` was sent: {name} may run {change} "
                f"or the configuration of the snapshot; run `{read_back}` to read it"))
        elif self.sent:
            self.audit.row("verdict", verdict=(
                f"cancelled after `{self.sent}` was sent: {name} may run {change} unverified "
                f"and not rolled back; run `{read_back}` to read its config "
                f"(rollback: {'; '.join(rollback_lines)})"))
