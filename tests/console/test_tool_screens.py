"""The ECMP plan, audit, baselines and walkthrough screens on fixed data and a real store file:
what each shows, read-only hiding the apply, reports written; the simulator runs are in
test_ecmp_console.py and test_walkthrough_live.py."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from console_waits import NOW, view_where
from fleetstore import fill_store
from textual.widgets import DataTable, Static
from tooldata import T_BASE, baseline, leaf01_plan

from fleet.collectors.accept_run import AcceptanceRun, acceptance_record
from fleet.collectors.baseline_run import SuiteRun
from fleet.console.app import FleetApp
from fleet.console.config import load_config
from fleet.console.ecmp_ops import EcmpOps, EcmpSettings, roles_inventory
from fleet.console.feed import Feed, open_store_loader
from fleet.console.report_write import chromium_binary
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.ecmp_confirm import ConfirmApplyScreen
from fleet.console.screens.ecmp_plan import EcmpPlanScreen
from fleet.console.screens.path_prompt import PathPrompt
from fleet.console.screens.topology import TopologyScreen
from fleet.console.screens.walkthrough import WALKTHROUGH_THEME, WalkthroughScreen
from fleet.console.widgets.fit_table import FitTable
from fleet.fabric.acceptance import evaluate, parse_criteria
from fleet.fabric.ecmp_plan import plan_remedies
from fleet.fabric.report_model import acceptance_report
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

SIZE = (160, 40)
MakeApp = Callable[..., FleetApp]
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"


def _active(app: FleetApp) -> set[str]:
    return {b.binding.id or "" for b in app.screen.active_bindings.values()
            if app.screen.check_action(b.binding.action, ()) is not False}


def _cells(table: DataTable[object], column: int) -> list[str]:
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


async def test_plan_lists_remedies_least_disruptive_first_with_their_commands(make_app: MakeApp,
                                                                             tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        # nothing connects until an apply is confirmed; this one is cancelled
        ops = EcmpOps(roles_inventory([("leaf01", "leaf")]), tmp_path / "unused.db", EcmpSettings())
        screen = EcmpPlanScreen("leaf01", plan=leaf01_plan(), ops=ops)
        await app.push_screen(screen)
        await asyncio.wait_for(screen.planned.wait(), 5)
        remedies = screen.query_one("#remedies", DataTable)
        assert _cells(remedies, 0) == ["host-qps", "hash-fields", "hash-seed", "adaptive-routing"]
        assert _cells(remedies, 2)[0] == "advice"
        assert _cells(remedies, 3) == ["no", "no", "switchd", "switchd"]
        assert screen.selected_remedy() is not None and screen.selected_remedy().id == "hash-fields"  # type: ignore[union-attr]
        detail = str(screen.query_one("#remedy-detail", Static).render())
        assert "$ nv set system forwarding ecmp-hash ingress-interface on" in detail
        assert "Rollback:" in detail and "ingress-interface off" in detail
        balance = str(screen.query_one("#ecmp-balance", Static).render())
        assert "FLAGGED" in balance and "spine01" in balance and "5101, 5102" in balance
        # a restart is said plainly on the confirmation, with the exact commands
        remedies.move_cursor(row=2)
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        confirm = app.screen
        assert isinstance(confirm, ConfirmApplyScreen) and confirm.remedy.id == "hash-seed"
        text = str(confirm.query_one("#confirm-text", Static).render())
        assert "RESTARTS switchd" in text
        assert all(f"$ {line}" in text for line in confirm.remedy.command_lines)
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen and not screen.applying
        assert not (tmp_path / "unused.db").exists()


async def test_read_only_hides_and_refuses_the_apply(make_app: MakeApp) -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        screen = EcmpPlanScreen("leaf01", plan=leaf01_plan())
        await app.push_screen(screen)
        await asyncio.wait_for(screen.planned.wait(), 5)
        active = _active(app)
        assert "ecmp_plan.replan" in active and "ecmp_plan.apply" not in active
        await pilot.press("a")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen  # no confirmation opened


async def test_apply_on_a_leaf_that_needs_no_remedy_is_refused_with_the_reason(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        idle = replace(leaf01_plan().balance, state="idle", flagged=False, imbalanced_now=False, imbalance=0.0,
                       reason="idle: the uplinks carry 0.02 Gb/s on average (< 1)")
        screen = EcmpPlanScreen("leaf01", plan=replace(leaf01_plan(), balance=idle),
                                ops=EcmpOps(roles_inventory([("leaf01", "leaf")]), Path("/nonexistent.db"),
                                            EcmpSettings()))
        await app.push_screen(screen)
        await asyncio.wait_for(screen.planned.wait(), 5)
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is screen  # no confirmation: nothing can be applied
        said = [n.message for n in app._notifications]
        assert said and said[-1].startswith("refused: leaf01 needs no remedy, it is idle: idle: the uplinks carry")
        assert "idle" in str(screen.query_one("#ecmp-balance", Static).render())


async def test_baselines_screen_diffs_two_stored_baselines_and_writes_the_report(
        make_app: MakeApp, store: tuple[Path, StoreWriter], tmp_path: Path) -> None:
    _path, writer = store
    before = baseline("March", T_BASE)
    after = baseline("April", T_BASE + 30 * 86400, bw_gbps=340.0, p99_usec=2.5)
    moved = dict(after.parts)
    moved["node/gpu003"] = moved.pop("node/gpu002")
    after = replace(after, parts=moved)
    for b in (before, after):
        writer.put_baseline(b.label, b.ts, b.to_json())
    assert writer.flush(timeout=10)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("B")
        screen = app.screen
        assert isinstance(screen, BaselinesScreen)
        await asyncio.wait_for(screen.loaded.wait(), 5)
        assert _cells(screen.query_one("#baselines-table", DataTable), 3) == ["March", "April"]
        await pilot.press("space", "down", "space")
        await pilot.pause()
        assert screen.result is not None
        diff_table = screen.query_one("#diff-table", DataTable)
        kinds = _cells(diff_table, 1)
        parts = _cells(diff_table, 2)
        # regressions first: bandwidth -13 % on every NIC; then latency improved on both rails
        assert kinds[:4] == ["regression"] * 4 and all(p.startswith("nic/") for p in parts[:4])
        assert "improvement" in kinds and any(p.startswith("pair/") for p in parts)
        summary = str(screen.query_one("#diff-summary", Static).render())
        assert "gone: " in summary and "node/gpu002" in summary and "new: " in summary and "node/gpu003" in summary
        await pilot.press("w")
        await pilot.pause()
        prompt = app.screen
        assert isinstance(prompt, PathPrompt)
        prompt.dismiss(tmp_path / "diff.html")
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert screen.report_written == (tmp_path / "diff.html", tmp_path / "diff.md")
        assert "<html" in (tmp_path / "diff.html").read_text()
        assert "nic/gpu001/mlx5_0" in (tmp_path / "diff.md").read_text()


def fixed_run(bad_optic: bool = False) -> AcceptanceRun:
    """The example criteria judged on a fixed two-node baseline (evidence without the simulator's noise)."""
    criteria = parse_criteria(EXAMPLE.read_text(), source=EXAMPLE.name)  # no checkout path on screen
    measured = baseline("Acceptance", T_BASE, rx_dbm=-4.5 if bad_optic else 1.2)
    results = tuple(evaluate(criteria, measured))
    return AcceptanceRun(criteria, SuiteRun(measured, None, "suite-fixed"), (), results)


async def test_walkthrough_turns_each_check_in_turn_on_the_high_contrast_theme(make_app: MakeApp,
                                                                                tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        run = fixed_run(bad_optic=True)
        screen = WalkthroughScreen(EXAMPLE, run=run)
        await app.push_screen(screen)
        await asyncio.wait_for(screen.measured.wait(), 5)
        assert app.theme == WALKTHROUGH_THEME
        checks = screen.query_one("#walk-checks", DataTable)
        assert _cells(checks, 0) == ["…"] * 9
        await pilot.press("space")
        await pilot.pause()
        assert _cells(checks, 0)[:2] == ["PASS", "…"]
        evidence = str(screen.query_one("#walk-evidence", Static).render())
        assert evidence.startswith("PASS  allreduce-node") and "0.96" in evidence and "0.94" in evidence
        await pilot.press("a")
        await pilot.pause()
        verdicts = dict(zip(_cells(checks, 1), _cells(checks, 0), strict=True))
        assert verdicts["optics"] == "FAIL" and list(verdicts.values()).count("FAIL") == 1
        checks.move_cursor(row=_cells(checks, 1).index("optics"))
        await pilot.pause()
        evidence = str(screen.query_one("#walk-evidence", Static).render())
        assert "FAIL nic/gpu001/mlx5_0: -4.5" in evidence and "-3" in evidence
        summary = str(screen.query_one("#walk-summary", Static).render())
        assert summary.startswith("NOT ACCEPTED: 1 of 9 checks failed: optics")
        await pilot.press("w")
        await pilot.pause()
        report_prompt = app.screen
        assert isinstance(report_prompt, PathPrompt)
        report_prompt.dismiss(tmp_path / "acceptance.html")
        await pilot.pause()
        await app.workers.wait_for_complete()
        written = screen.report_written
        assert written is not None and (written.html, written.markdown) == (tmp_path / "acceptance.html",
                                                                            tmp_path / "acceptance.md")
        markdown = (tmp_path / "acceptance.md").read_text()
        assert markdown.startswith("# Acceptance of the 64-node H100 RoCE cluster") and "optics" in markdown
        await pilot.press("escape")
        await pilot.pause()
        assert app.theme == "fleet-dark"


@pytest.mark.parametrize(("size", "drawn"), [
    ((80, 24), ["remedy", "restarts"]),
    ((120, 35), ["remedy", "what", "disruption", "restarts"]),
])
async def test_the_remedies_fit_their_half_of_the_terminal_and_keep_what_restarts(
        make_app: MakeApp, size: tuple[int, int], drawn: list[str]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        screen = EcmpPlanScreen("leaf01", plan=leaf01_plan())
        await app.push_screen(screen)
        await asyncio.wait_for(screen.planned.wait(), 5)
        await pilot.pause()
        remedies = screen.query_one("#remedies", FitTable)
        assert [column.key for column, _width in remedies.drawn] == drawn
        assert remedies.virtual_size.width <= remedies.size.width  # no sideways scrolling
        assert [str(c) for c in remedies.get_column("restarts")] == ["no", "no", "switchd", "switchd"]
        assert screen.selected_remedy() is not None and screen.selected_remedy().id == "hash-fields"  # type: ignore[union-attr]


@pytest.mark.parametrize(("size", "drawn"), [
    ((80, 24), ["verdict", "check", "evidence"]),
    ((120, 35), ["verdict", "check", "threshold", "measured", "evidence"]),
])
async def test_the_walkthrough_table_fits_the_terminal_and_keeps_the_verdict_and_evidence(
        make_app: MakeApp, size: tuple[int, int], drawn: list[str]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        screen = WalkthroughScreen(EXAMPLE, run=fixed_run(bad_optic=True))
        await app.push_screen(screen)
        await asyncio.wait_for(screen.measured.wait(), 5)
        await pilot.press("a")
        await pilot.pause()
        checks = screen.query_one("#walk-checks", FitTable)
        assert [column.key for column, _width in checks.drawn] == drawn
        assert checks.virtual_size.width <= checks.size.width  # no sideways scrolling
        verdicts = dict(zip(_cells(checks, 1), _cells(checks, 0), strict=True))
        assert verdicts["optics"] == "FAIL" and list(verdicts.values()).count("PASS") == 8
        evidence = _cells(checks, len(drawn) - 1)[list(verdicts).index("optics")]
        assert evidence.startswith("4 of 4 failed; gpu001 mlx5_0 -4.5 < -3 dBm")
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert [column.key for column, _width in checks.drawn] == [c.key for c in checks.all_columns]
        assert checks.cursor_row == checks.row_count - 1 and _cells(checks, 0) == list(verdicts.values())


async def test_e_on_a_leaf_the_palette_and_w_open_the_screens(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("4")
        await pilot.pause()
        topology = app.screen
        assert isinstance(topology, TopologyScreen)
        topology.select_switch("leaf01")
        await pilot.press("e")
        await pilot.pause()
        plan = app.screen
        assert isinstance(plan, EcmpPlanScreen) and plan.leaf == "leaf01"
        assert "No inventory" in str(plan.query_one("#ecmp-config", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press(*"ECMP plan: leaf02")
        await pilot.press("enter")

        async def opened() -> None:
            while not isinstance(app.screen, EcmpPlanScreen):
                await pilot.pause()

        await asyncio.wait_for(opened(), 5)
        palette_plan = app.screen
        assert isinstance(palette_plan, EcmpPlanScreen) and palette_plan.leaf == "leaf02"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("W")
        await pilot.pause()
        criteria_prompt = app.screen
        assert isinstance(criteria_prompt, PathPrompt)
        criteria_prompt.dismiss(EXAMPLE)
        await pilot.pause()
        walk = app.screen
        assert isinstance(walk, WalkthroughScreen) and walk.criteria is not None
        assert "No inventory" in str(walk.query_one("#walk-progress", Static).render())
        assert app.theme == WALKTHROUGH_THEME


async def test_the_confirmation_shows_machine_text_as_typed(make_app: MakeApp) -> None:
    leaf = "leaf[bold]01"
    remedy = next(r for r in plan_remedies(leaf, leaf01_plan().snapshot.config) if r.id == "hash-fields")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await app.push_screen(ConfirmApplyScreen(leaf, remedy))
        await pilot.pause()
        text = str(app.screen.query_one("#confirm-text", Static).render())
        assert "Change leaf[bold]01:" in text and "on leaf[bold]01'" in text


async def test_read_only_walkthrough_shows_and_exports_the_newest_stored_run(
        make_app: MakeApp, store: tuple[Path, StoreWriter], tmp_path: Path) -> None:
    path, writer = store
    run = fixed_run(bad_optic=True)
    stored = acceptance_report(run.criteria, run.suite.baseline, run.results, run.findings, T_BASE + 10)
    writer.put_probe(acceptance_record(stored, "suite-fixed"))
    assert writer.flush(timeout=10)
    with StoreReader(path) as reader:
        before = reader.probes()
    app = make_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("W")  # no criteria prompt: read-only mode measures nothing
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WalkthroughScreen)
        await asyncio.wait_for(screen.measured.wait(), 5)
        assert screen.stored and screen.report is not None and screen.report.sha256 == stored.sha256
        assert "the newest acceptance run stored" in str(screen.query_one("#walk-title", Static).render())
        await pilot.press("a")
        await pilot.pause()
        summary = str(screen.query_one("#walk-summary", Static).render())
        assert summary.startswith("NOT ACCEPTED: 1 of 9 checks failed: optics")
        evidence = str(screen.query_one("#walk-evidence", Static).render())
        assert "agreed wording:" in evidence
        await pilot.press("w")
        await pilot.pause()
        prompt = app.screen
        assert isinstance(prompt, PathPrompt)
        prompt.dismiss(tmp_path / "exported.html")
        await pilot.pause()
        await app.workers.wait_for_complete()
        written = screen.report_written
        assert written is not None and stored.sha256 in written.html.read_text()  # the same data, exported
    with StoreReader(path) as reader:
        assert reader.probes() == before  # nothing measured, nothing sent


async def test_a_report_written_in_the_demo_outlives_its_temporary_history(tmp_path: Path) -> None:
    """`fleet demo` keeps its history in a temporary folder deleted on quit; the report goes to the
    reports folder ($XDG_DATA_HOME/fleet/reports), whose path the toast names."""
    demo = tmp_path / "fleet-demo-x"
    db = demo / "demo.sqlite"
    fill_store(db).close(timeout=10.0)
    env = {"XDG_DATA_HOME": str(tmp_path / "home-data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "HOME": str(tmp_path)}
    config = load_config({"db": str(db)}, env, NOW)
    app = FleetApp(replace(config, refresh_s=0.2, diagnose=False),
                   Feed(lambda: open_store_loader(db), refresh_s=0.2, now=lambda: NOW))
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        screen = WalkthroughScreen(EXAMPLE, run=fixed_run())
        await app.push_screen(screen)
        await asyncio.wait_for(screen.measured.wait(), 5)
        await pilot.press("w")
        await pilot.pause()
        assert isinstance(app.screen, PathPrompt)
        await pilot.press("enter")  # the default the prompt offers
        await pilot.pause()
        await app.workers.wait_for_complete()
        written = screen.report_written
        said = [n.message for n in app._notifications]
    assert written is not None and said[-1].startswith(f"report written: {written.html}")
    assert written.html.parent == tmp_path / "home-data" / "fleet" / "reports"
    shutil.rmtree(demo)  # what `fleet demo` does on quit
    assert written.html.exists() and written.markdown.exists()
    assert (written.pdf is not None) == (chromium_binary() is not None)
