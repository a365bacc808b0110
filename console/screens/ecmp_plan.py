"""`e` on a leaf: its uplink balance, the remedies least disruptive first, and the guarded apply.

The plan is read from the switch (its running hash configuration) every time
the screen opens or ``r`` is pressed, so after a change whose outcome is
unknown the screen shows what the switch really runs. Applying asks first
(the exact commands, what restarts), then runs snapshot -> measure -> apply
-> verify -> keep or roll back in a worker and shows each step as it is
told, then the verdict with the uplinks before and after. ``--read-only``
hides and refuses the apply.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from fleet.collectors.ecmp_apply import ApplyOutcome
from fleet.collectors.ecmp_status import LeafPlan
from fleet.console.actions import changes_machine
from fleet.console.ecmp_ops import EcmpOps, EcmpSettings
from fleet.console.messages import EcmpStepReported
from fleet.console.screens.audit import AuditScreen
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.ecmp_confirm import ConfirmApplyScreen
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.console.widgets.uplink_bars import UplinkBars
from fleet.fabric.ecmp_plan import Remedy

STEP_ORDER = ("snapshot", "measure", "apply", "verify", "rollback", "verdict")
"""The steps of ``fleet.collectors.ecmp_apply`` in the order they happen (rollback only when needed)."""


def remedy_text(remedy: Remedy) -> Text:
    """Everything about one remedy, as plain text: commands, diff, restarts, expected, rollback."""
    text = Text(f"[{remedy.id}] {remedy.title}\n", style="bold")
    if remedy.advice_only:
        text.append("Advice for the next job start; nothing is changed on the switch.\n")
    elif remedy.restarts_switchd or remedy.resets_ports:
        text.append("Restarts switchd: every port of the switch resets.\n", style="bold")
    else:
        text.append("Re-hashes in place: no restart, no port reset.\n")
    text.append("\nCommands:\n")
    for line in remedy.command_lines:
        text.append(f"  $ {line}\n")
    if remedy.config_diff:
        text.append("\nConfig diff:\n")
        for line in remedy.config_diff.splitlines():
            text.append(f"  {line}\n")
    text.append(f"\nExpected: {remedy.expected}\n")
    if remedy.rollback_lines:
        text.append("\nRollback:\n")
        for line in remedy.rollback_lines:
            text.append(f"  $ {line}\n")
    for note in remedy.notes:
        text.append(f"\nNote: {note}")
    return text


def settings_of(screen: FleetScreenBase) -> EcmpSettings:
    config = screen.fleet_app.config
    return EcmpSettings(window_s=config.ecmp_window_s, sustain_s=config.ecmp_sustain_s,
                        verify_window_s=config.ecmp_verify_s)


REMEDY_COLUMNS = (
    Col("remedy", "remedy", 16), Col("what", "what", 14, 2, flex=True), Col("disruption", "disruption", 10, 3),
    Col("restarts", "restarts", 8),
)
"""The remedies, least disruptive first: the remedy and whether it restarts switchd stay in the
half of an 80-column terminal the table has (the detail beside it says the rest)."""


class EcmpPlanScreen(FleetScreenBase):
    TITLE_TEXT = "ECMP plan"
    DEFAULT_CSS = """
    #ecmp-top { height: auto; max-height: 14; }
    #ecmp-balance { width: 1fr; height: auto; padding: 0 1; }
    #ecmp-config { width: 1fr; height: auto; padding: 0 1; }
    #ecmp-middle { height: 1fr; }
    #remedies { width: 1fr; height: 1fr; }
    #remedy-scroll { width: 1fr; height: 1fr; border-left: solid $primary; padding: 0 1; }
    #ecmp-progress { height: auto; max-height: 10; padding: 0 1; background: $surface; }
    #ecmp-result { height: auto; }
    #ecmp-before, #ecmp-after { width: 1fr; height: auto; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Apply remedy", id="ecmp_plan.apply"),
        Binding("r", "replan", "Re-read plan", id="ecmp_plan.replan"),
        Binding("A", "audit", "Audit", id="ecmp_plan.audit"),
        Binding("escape", "back", "Back", id="ecmp_plan.back"),
    ]

    def __init__(self, leaf: str, *, ops: EcmpOps | None = None, plan: LeafPlan | None = None) -> None:
        """``plan`` given: shown as it is (tests, screenshots); else read from the switch through ``ops``
        (default: built from the app's inventory)."""
        super().__init__()
        self.leaf = leaf
        self.plan = plan
        self.outcome: ApplyOutcome | None = None
        self.applying = False
        self.planned = asyncio.Event()
        """Set each time a plan is on screen."""
        self.finished = asyncio.Event()
        """Set when an apply ended (kept, rolled back, refused or failed) and its verdict is on screen."""
        self._ops = ops
        self._own_ops = False
        self._steps: list[tuple[str, str]] = []

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="ecmp-top"):
            yield UplinkBars(id="ecmp-balance")
            yield Static(id="ecmp-config")
        with Horizontal(id="ecmp-middle"):
            yield FitTable(REMEDY_COLUMNS, id="remedies")
            with VerticalScroll(id="remedy-scroll"):
                yield Static(id="remedy-detail")
        yield Static(id="ecmp-progress")
        with Horizontal(id="ecmp-result"):
            yield UplinkBars(id="ecmp-before")
            yield UplinkBars(id="ecmp-after")

    def build(self) -> None:
        self.query_one("#remedies", DataTable).focus()
        self.query_one("#ecmp-progress", Static).display = False
        self.query_one("#ecmp-result").display = False
        if self.plan is not None:
            self._show_plan(self.plan)
            return
        inventory = self.fleet_app.inventory
        if self._ops is None and inventory is not None:
            probes = self.fleet_app.probes  # one SSH pool and one store writer for the whole console
            self._ops = EcmpOps(inventory, self.fleet_app.config.db_path, settings_of(self), pool=probes.pool(),
                                writer=probes.writer())
            self._own_ops = True
        if self._ops is None:
            self.query_one("#ecmp-config", Static).update(
                "No inventory: the switch cannot be asked for its configuration (start with --inventory).")
            return
        self.load_plan()

    # --- plan
    @work(group="ecmp-plan", exclusive=True, exit_on_error=False)
    async def load_plan(self) -> None:
        assert self._ops is not None
        self.query_one("#ecmp-config", Static).update(Text(f"reading {self.leaf}'s configuration ..."))
        self.planned.clear()
        plan = await self._ops.plan(self.leaf)
        self.plan = plan
        self._show_plan(plan)

    def _show_plan(self, plan: LeafPlan) -> None:
        self.query_one("#ecmp-balance", UplinkBars).show(plan.balance, f"{plan.leaf}: uplinks now")
        config = Text(f"{plan.leaf} runs ({plan.snapshot.config.os}):\n", style="bold")
        if not plan.snapshot.reachable:
            config.append(f"configuration not readable: {plan.snapshot.reason}\n",
                          style=self.app.theme_variables.get("health-down", ""))
        for key, value in plan.snapshot.config.as_json().items():
            shown = ", ".join(map(str, value)) if isinstance(value, list | tuple) else value
            config.append(f"  {key}: {shown}\n")
        config.append("read with: " + "; ".join(plan.snapshot.commands))
        self.query_one("#ecmp-config", Static).update(config)
        table = self.query_one("#remedies", FitTable)
        table.fill([(Text(remedy.id), Text(remedy.title),
                     Text("advice" if remedy.advice_only else str(remedy.disruption)),
                     Text("switchd" if remedy.restarts_switchd or remedy.resets_ports else "no"))
                    for remedy in plan.remedies], [remedy.id for remedy in plan.remedies])
        default = next((i for i, r in enumerate(plan.remedies) if not r.advice_only), 0)
        if plan.remedies:
            table.move_cursor(row=default)
        self._show_remedy()
        self.planned.set()

    def selected_remedy(self) -> Remedy | None:
        table = self.query_one("#remedies", DataTable)
        if self.plan is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((r for r in self.plan.remedies if r.id == key), None)

    @on(DataTable.RowHighlighted, "#remedies")
    def _show_remedy(self) -> None:
        remedy = self.selected_remedy()
        detail = self.query_one("#remedy-detail", Static)
        detail.update(remedy_text(remedy) if remedy is not None else Text("no remedy for this switch"))

    @on(DataTable.RowSelected, "#remedies")
    def _remedy_chosen(self) -> None:
        if self.check_action("apply", ()):
            self.action_apply()

    def action_replan(self) -> None:
        if self._ops is not None and not self.applying:
            self.load_plan()

    def action_audit(self) -> None:
        self.app.push_screen(AuditScreen())

    def action_back(self) -> None:
        if self.applying:  # leaving would cancel the worker between apply and verify
            self.notify("a change is in progress: wait for its verdict", severity="warning")
            return
        self.app.pop_screen()

    # --- apply
    @changes_machine("changes the leaf's ECMP configuration")
    def action_apply(self) -> None:
        remedy = self.selected_remedy()
        if self.plan is None or remedy is None or self.applying:
            return
        if self._ops is None:
            self.notify("no inventory: the switch cannot be reached (start with --inventory)", severity="error")
            return
        if remedy.advice_only:
            self.notify("this remedy is advice for the next job start; nothing to apply on the switch",
                        severity="warning")
            return
        balance = self.plan.balance
        if balance is None or not balance.actionable:
            why = "the store has no uplink data for it" if balance is None else f"it is {balance.state}: {balance.reason}"
            self.notify(f"refused: {self.leaf} needs no remedy, {why} (`fleet ecmp apply --force REASON` changes it "
                        "anyway, audited)", title="not applied", severity="warning", markup=False)
            return
        plan = self.plan

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run_apply(plan, remedy)

        self.app.push_screen(ConfirmApplyScreen(self.leaf, remedy), confirmed)

    @work(group="ecmp-apply", exclusive=True, exit_on_error=False)
    async def run_apply(self, plan: LeafPlan, remedy: Remedy) -> None:
        assert self._ops is not None
        self.applying = True
        self.finished.clear()
        self._steps = []
        self.query_one("#ecmp-result").display = False
        progress = self.query_one("#ecmp-progress", Static)
        progress.display = True
        progress.update(Text(f"applying {remedy.id} to {self.leaf} ..."))
        try:
            self.outcome = await self._ops.apply(plan, remedy, read_only=self.fleet_app.config.read_only,
                                                 on_step=self._step_told)
            self._show_outcome(self.outcome)
        finally:
            self.applying = False
            self.finished.set()

    def _step_told(self, step: str, words: str) -> None:
        self.post_message(EcmpStepReported(step, words))

    def on_ecmp_step_reported(self, message: EcmpStepReported) -> None:
        self._steps.append((message.step, message.words))
        self.query_one("#ecmp-progress", Static).update(self._progress_text())

    def _progress_text(self) -> Text:
        seen = [step for step, _ in self._steps]
        text = Text("Steps: ", style="bold")
        for step in STEP_ORDER:
            if step == "rollback" and step not in seen:
                continue
            mark = "✓" if step in seen else "·"
            text.append(f"{mark} {step}  ", style="bold" if step in seen else "")
        text.append("\n")
        for step, words in self._steps[-8:]:
            text.append(f"[{step}] {words}\n")
        return text

    def _show_outcome(self, outcome: ApplyOutcome) -> None:
        v = self.app.theme_variables
        style = v.get("health-ok" if outcome.state == "kept" else "health-down", "")
        progress = self._progress_text()
        progress.append(f"{outcome.state.upper()}: ", style=f"bold {style}".strip())
        progress.append(outcome.verdict)
        self.query_one("#ecmp-progress", Static).update(progress)
        self.query_one("#ecmp-result").display = True
        self.query_one("#ecmp-before", UplinkBars).show(outcome.before, "before")
        self.query_one("#ecmp-after", UplinkBars).show(outcome.after, "after")

    async def on_unmount(self) -> None:
        if self._own_ops and self._ops is not None:
            await self._ops.close()
