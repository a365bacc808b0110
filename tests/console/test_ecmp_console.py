"""The ECMP screens against the simulator's `ecmp` scenario over real SSH: the topology flags
leaf01 from switch counters, the plan is read from the switch, a confirmed apply ends with a
verdict, before/after bars and audit rows. Short windows (store 4 s, sustain 2 s, verify 3 s)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet
from textual.widgets import Static

from fleet.collectors.ecmp_status import collect_switches
from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.ecmp_ops import EcmpOps, EcmpSettings, read_audit
from fleet.console.feed import Feed, open_store_loader
from fleet.console.screens.audit import AuditScreen
from fleet.console.screens.ecmp_confirm import ConfirmApplyScreen
from fleet.console.screens.ecmp_plan import EcmpPlanScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.widgets.fabric_map import balance_state
from fleet.simulator.scenario import load_scenario
from fleet.store.writer import StoreWriter

SIZE = (160, 45)
SETTINGS = EcmpSettings(window_s=4.0, sustain_s=2.0, verify_window_s=3.0, interval_s=0.5)


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_topology_flags_leaf01_and_a_confirmed_apply_ends_with_a_verdict_and_an_audit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("ecmp"), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        writer = StoreWriter(db).start()
        await collect_switches(inventory, writer, SETTINGS.window_s + 2.0, SETTINGS.interval_s)
        assert await asyncio.to_thread(writer.flush, 30.0)
        await asyncio.to_thread(writer.close, 10.0)
        # replay of what was collected (no in-console collector): the balances come from the store alone
        config = Config(db_path=db, refresh_s=0.5, ecmp_window_s=SETTINGS.window_s,
                        ecmp_sustain_s=SETTINGS.sustain_s, ecmp_verify_s=SETTINGS.verify_window_s)
        app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5))
        async with app.run_test(size=SIZE) as pilot:
            await app.next_view()
            await pilot.press("4")
            topology = app.screen
            assert isinstance(topology, TopologyScreen)

            async def balances_read() -> None:
                while "leaf01" not in topology.balances:
                    await app.next_view()

            await asyncio.wait_for(balances_read(), 15)
            flagged = sorted(name for name, b in topology.balances.items() if b.flagged)
            assert flagged == ["leaf01"]
            await pilot.pause()
            assert topology.picture is not None
            leaf01 = next(c for c in topology.picture.columns if c.key == "leaf01")
            assert leaf01.balance is not None and balance_state(leaf01.balance) == "squeezed"

            ops = EcmpOps(inventory, db, SETTINGS)
            plan_screen = EcmpPlanScreen("leaf01", ops=ops)
            await app.push_screen(plan_screen)
            await asyncio.wait_for(plan_screen.planned.wait(), 20)
            remedy = plan_screen.selected_remedy()
            assert remedy is not None and remedy.id == "hash-fields"
            await pilot.press("a")
            await pilot.pause()
            confirm = app.screen
            assert isinstance(confirm, ConfirmApplyScreen)
            text = str(confirm.query_one("#confirm-text", Static).render())
            assert "$ nv set system forwarding ecmp-hash ingress-interface on" in text
            await pilot.press("y")
            await asyncio.wait_for(plan_screen.finished.wait(), 60)
            outcome = plan_screen.outcome
            assert outcome is not None and outcome.state == "kept", outcome
            assert outcome.after is not None and outcome.before is not None
            assert outcome.after.imbalance < outcome.before.imbalance
            progress = str(plan_screen.query_one("#ecmp-progress", Static).render())
            assert "KEPT: kept hash-fields on leaf01" in progress and "✓ verify" in progress
            after = str(plan_screen.query_one("#ecmp-after", Static).render())
            assert after.startswith("after") and "balanced" in after
            await ops.close()
            await pilot.press("A")
            audit = app.screen
            assert isinstance(audit, AuditScreen)
            await asyncio.wait_for(audit.loaded.wait(), 10)
            assert [r.step for r in audit.rows] == ["verdict", "verify", "apply", "measure", "snapshot"]
            assert audit.rows[0].verdict.startswith("kept hash-fields on leaf01")
            # back on the topology, leaf01's line shows its uplinks before and after the change
            await pilot.press("escape", "escape")
            await pilot.pause()
            assert isinstance(app.screen, TopologyScreen) and app.screen.balances is topology.balances

            async def change_read() -> None:
                while "leaf01" not in topology.last_changes:
                    await app.next_view()

            await asyncio.wait_for(change_read(), 10)
            topology.select_switch("leaf01")
            await pilot.pause()
            title = str(topology.query_one("#link-detail", Static).render())
            assert "last change" in title and " kept: " in title and " → " in title


@pytest.mark.slow
@pytest.mark.timeout(300)  # the bounds below guard against a hang; a busy machine takes minutes
async def test_live_console_flags_and_fixes_leaf01_over_its_own_collector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console collecting itself: the topology flags leaf01 from the collector's switch counters, `e`
    plans it over the console's shared SSH pool, the apply's audit goes through the shared writer."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("ecmp"), tmp_path / "sim") as inventory_path:
        config = Config(db_path=db, refresh_s=0.5, ecmp_window_s=4.0, ecmp_sustain_s=2.0, ecmp_verify_s=3.0,
                        job_latency="off", diagnose=False)
        app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5), load_inventory(inventory_path))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("4")
            topology = app.screen
            assert isinstance(topology, TopologyScreen)

            async def flagged() -> None:
                while not (topology.balances.get("leaf01") and topology.balances["leaf01"].flagged):
                    await app.next_view()

            await asyncio.wait_for(flagged(), 120)
            topology.select_switch("leaf01")
            await pilot.press("e")
            await pilot.pause()
            plan = app.screen
            assert isinstance(plan, EcmpPlanScreen)
            await asyncio.wait_for(plan.planned.wait(), 60)
            await pilot.press("a")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmApplyScreen)
            await pilot.press("y")
            await asyncio.wait_for(plan.finished.wait(), 120)
            assert plan.outcome is not None and plan.outcome.state == "kept", plan.outcome
            rows = await read_audit(db)
            assert [r.step for r in rows][-1] == "verdict" and rows[-1].verdict.startswith("kept hash-fields")
