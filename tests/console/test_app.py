"""The console driven by Pilot against a real store file: what an engineer does in an incident."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from console_waits import NOW, palette_highlights, view_where
from fleetstore import T0
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Input

from fleet.console.actions import changes_machine
from fleet.console.app import FleetApp
from fleet.console.screens.fleet import FleetScreen
from fleet.console.screens.help import HelpScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.widgets.fit_table import FitTable
from fleet.console.widgets.fleet_table import FleetTable
from fleet.console.widgets.header import FleetHeader
from fleet.console.widgets.plot import PlotWidget
from fleet.console.widgets.summary_bar import SummaryBar
from fleet.fabric.health import Health
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

SIZE = (160, 40)
MakeApp = Callable[..., FleetApp]


def table_names(app: FleetApp) -> list[str]:
    return list(app.screen.query_one(FleetTable).order)


def header_text(app: FleetApp) -> str:
    return str(app.screen.query_one(FleetHeader).render())


async def test_fleet_lists_every_node_worst_first(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.pause()
        names = table_names(app)
        assert set(names[:2]) == {"gpu007", "gpu008"}  # down first
        assert set(names[2:4]) == {"gpu003", "gpu005"}  # then degraded
        health = {r.name: r for r in view.rows}
        assert health["gpu007"].state == "unreachable" and health["gpu008"].state == "auth_failed"
        assert health["gpu003"].worst_nic == "mlx5_1"
        assert view.summary.down == 2 and view.summary.degraded == 2 and view.summary.ok == 4
        assert "LIVE" in header_text(app)


async def test_sorting_by_columns(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        screen = app.screen
        screen.sort_column = "tx"  # type: ignore[attr-defined]
        await pilot.pause()
        names = table_names(app)
        # Busiest first; down hosts show no (stale) rates and go last.
        assert names[:3] == ["gpu006", "gpu005", "gpu004"]
        assert set(names[-2:]) == {"gpu007", "gpu008"}
        await pilot.press("S")
        await pilot.pause()
        assert table_names(app)[2:5] == ["gpu003", "gpu001", "gpu002"]
        await pilot.press("s")  # next column after tx: PFC pauses
        assert screen.sort_column == "pause"  # type: ignore[attr-defined]


async def test_filter_by_hostlist_state_job_and_tenant(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("slash")
        box = app.screen.query_one("#filter", Input)
        assert box.has_focus
        for text, expected in (
            ("gpu[001-003]", ["gpu003", "gpu001", "gpu002"]),
            ("state:down", ["gpu007", "gpu008"]),
            ("job:101 !state:down", ["gpu005", "gpu006"]),
            ("tenant:acme state:degraded", ["gpu003"]),
        ):
            box.value = text
            await pilot.pause()
            assert sorted(table_names(app)) == sorted(expected), text
        await pilot.press("enter", "escape")
        await pilot.pause()
        assert len(table_names(app)) == 8


async def test_enter_drills_into_the_node(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        table.move_cursor(row=table_names(app).index("gpu003"))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu003"
        await asyncio.wait_for(app.screen.drawn.wait(), 10)
        await pilot.pause()
        ports = app.screen.query_one("#ports", DataTable)
        assert ports.row_count == 2
        assert [str(c) for c in ports.get_row_at(1)][:3] == ["mlx5_1", "1", "DOWN"]
        assert str(ports.get_row_at(0)[-1]) == "leaf01 swp3"
        plot = app.screen.query_one("#plot-throughput", PlotWidget)
        assert {s.label for s in plot._data.series} == {"rx", "tx"}
        assert len(plot._data.series[0].x) == 3  # T0-600, T0-300, T0
        events = app.screen.query_one("#node-events", DataTable)
        assert events.row_count == 1
        await pilot.press("escape")
        assert not isinstance(app.screen, NodeScreen)


async def test_replay_draws_a_past_moment_through_the_same_screens(make_app: MakeApp) -> None:
    app = make_app(at=T0 - 300)
    async with app.run_test(size=SIZE) as pilot:
        view = await view_where(app, lambda v: len(v.rows) == 8)
        assert not view.snapshot.live and view.snapshot.moment_ts == T0 - 300
        rows = {r.name: r for r in view.rows}
        assert rows["gpu007"].health is Health.OK  # unreachable only from T0-120
        assert rows["gpu003"].health is Health.OK  # its port went down at T0
        assert rows["gpu008"].health is Health.DOWN
        await pilot.pause()
        assert "REPLAY" in header_text(app) and "07:55:00Z" in header_text(app)
        await pilot.press("L")
        view = await view_where(app, lambda v: v.snapshot.live)
        assert {r.name: r for r in view.rows}["gpu007"].health is Health.DOWN


async def test_replay_keys_step_and_jump(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: v.snapshot.live)
        await pilot.press("left_square_bracket")
        assert app.cursor_ts == NOW - 60
        view = await view_where(app, lambda v: not v.snapshot.live)
        assert view.snapshot.moment_ts == NOW - 60
        await pilot.press("left_curly_bracket")
        assert app.cursor_ts == NOW - 660
        await pilot.press("right_curly_bracket", "right_curly_bracket")
        assert app.cursor_ts is None  # past now: live again
        await pilot.press("g")
        await pilot.pause()
        box = app.screen.query_one("#jump-input", Input)
        box.value = "2027-01-15T07:55:00Z"
        await pilot.press("enter")
        assert app.cursor_ts == T0 - 300
        view = await view_where(app, lambda v: v.snapshot.moment_ts == T0 - 300)
        assert {r.name: r for r in view.rows}["gpu007"].health is Health.OK


async def test_a_host_going_down_shows_within_two_refreshes(
    make_app: MakeApp, store: tuple[Path, StoreWriter]
) -> None:
    _path, writer = store
    app = make_app(refresh_s=0.1)
    async with app.run_test(size=SIZE):
        await view_where(app, lambda v: len(v.rows) == 8)
        writer.put_host_status(HostStatus("gpu002", HostState.HOST_KEY_MISMATCH, NOW - 0.5,
                                          "host key changed"))
        assert writer.flush(5.0)
        for _refresh in range(2):
            view = await asyncio.wait_for(app.next_view(), 5.0)
            if {r.name: r for r in view.rows}["gpu002"].health is Health.DOWN:
                break
        gpu002 = {r.name: r for r in view.rows}["gpu002"]
        assert gpu002.health is Health.DOWN
        assert gpu002.state == "host_key_mismatch"
        assert gpu002.reasons == ("host_key_mismatch: host key changed",)


async def test_theme_switches_from_the_palette(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.pause()
        table = app.screen.query_one(FleetTable)
        dark_down = app.theme_variables["health-down"]
        assert str(table.get_cell("gpu007", "state").style) == dark_down
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press(*"fleet-light")
        await palette_highlights(app, pilot, "fleet-light")
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "fleet-light"
        light_down = app.theme_variables["health-down"]
        assert light_down != dark_down
        assert str(table.get_cell("gpu007", "state").style) == light_down


async def test_help_lists_the_bindings_of_the_current_screen(make_app: MakeApp) -> None:
    app = make_app(keymap={"fleet.filter": "f"})
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one(DataTable)
        rows = {str(table.get_row_at(i)[2]): str(table.get_row_at(i)[0]) for i in range(table.row_count)}
        assert rows["fleet.filter"] == "f"  # remapped from the config keymap
        assert {"fleet.sort_next", "app.replay_back", "app.replay_jump", "app.help"} <= set(rows)
        await pilot.press("escape")
        await pilot.press("f")
        assert app.screen.query_one("#filter", Input).has_focus


async def test_events_newest_first_filter_and_jump_to_node(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one("#events-table", DataTable)
        assert [str(table.get_row_at(i)[3]) for i in range(table.row_count)] == ["gpu003", "gpu007", "gpu005"]
        # machine text is shown as typed, never as markup
        assert str(table.get_row_at(2)[5]) == "mlx5_1 Rx -9.0 dBm [bold]low"
        await pilot.press("slash", *"severity:warning")
        await pilot.pause()
        assert table.row_count == 1
        await pilot.press("enter", "enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu005"


async def test_choosing_a_job_highlights_its_nodes(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.jobs) == 2)
        await pilot.press("3")
        await pilot.pause()
        jobs = app.screen.query_one("#jobs-table", DataTable)
        assert jobs.row_count == 2 and str(jobs.get_row_at(0)[6]) == "gpu[001-004]"
        await pilot.press("enter")
        await pilot.pause()
        assert app.highlighted_nodes == frozenset({"gpu001", "gpu002", "gpu003", "gpu004"})
        await app.workers.wait_for_complete()
        plot = app.screen.query_one("#job-latency", PlotWidget)
        assert [s.label for s in plot._data.series] == ["p50", "p99"]
        await pilot.press("f")
        await pilot.pause()
        cell = app.screen.query_one(FleetTable).get_cell("gpu001", "name")
        assert "reverse" in str(cell.style)


async def test_topology_shows_balance_and_the_miswired_cable(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("4")
        await pilot.pause()
        cabling = str(app.screen.query_one("#cabling").render())
        assert "gpu006 mlx5_1 reaches leaf09" in cabling and "plan says leaf10" in cabling
        screen = app.screen
        assert isinstance(screen, TopologyScreen) and screen.picture is not None
        picture = screen.picture
        assert [s.name for s in picture.spines] == ["spine01"]
        assert [c.key for c in picture.columns] == ["leaf01", "leaf02", "leaf09", "leaf10"]
        busy = picture.cells[(0, 0)]  # leaf01's uplink to spine01
        assert busy.util_pct == 85 and busy.hot == 1 and busy.mark == "▲"
        assert picture.columns[2].cable_problems == 1  # leaf09 got gpu006's rail-1 cable
        screen.select_switch("leaf09")
        await pilot.pause()
        assert screen.selected_leaf() == "leaf09"
        links = screen.query_one("#links", FitTable)
        cable = [c.key for c, _w in links.drawn].index("cable")
        cables = [str(links.get_row_at(i)[cable]) for i in range(links.row_count)]
        assert any(c.startswith("miswired") for c in cables)
        detail = str(screen.query_one("#link-detail").render())
        assert detail.startswith("spine01 ⇄ leaf09")


class ScreenWithAMachineAction(FleetScreen):
    """A Fleet screen with one action that would change a machine (e.g. an ECMP apply)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("x", "apply_change", "Apply change", id="test.apply")]
    applied = 0

    @changes_machine("changes a machine in this test")
    def action_apply_change(self) -> None:
        type(self).applied += 1


async def _footer_keys(app: FleetApp) -> set[str]:
    return {b.binding.id or "" for b in app.screen.active_bindings.values()
            if app.screen.check_action(b.binding.action, ()) is not False}


async def test_read_only_hides_and_refuses_machine_changes(make_app: MakeApp) -> None:
    for read_only, expected in ((False, 1), (True, 0)):
        ScreenWithAMachineAction.applied = 0
        app = make_app(read_only=read_only)
        async with app.run_test(size=SIZE) as pilot:
            await view_where(app, lambda v: len(v.rows) == 8)
            await app.push_screen(ScreenWithAMachineAction())
            await pilot.pause()
            assert ("test.apply" in await _footer_keys(app)) is not read_only
            await pilot.press("x")
            await pilot.pause()
            assert ScreenWithAMachineAction.applied == expected
            assert ("READ-ONLY" in header_text(app)) is read_only
            said = [n.message for n in app._notifications]  # the toasts shown, oldest first
            assert (said == ["Apply change (x) changes a machine in this test: refused, read-only mode sends "
                             "nothing and changes nothing"]) is read_only, said


async def test_palette_finds_a_node_and_opens_it(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press(*"gpu005")
        await palette_highlights(app, pilot, "gpu005")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu005"


async def test_connecting_hosts_and_a_lagging_store_are_shown(
    make_app: MakeApp, store: tuple[Path, StoreWriter]
) -> None:
    _path, writer = store
    for name in ("gpu001", "gpu002"):
        writer.put_host_status(HostStatus(name, HostState.CONNECTING, NOW - 0.5))
    assert writer.flush(5.0)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await view_where(app, lambda v: v.summary.connecting == 2)
        await pilot.pause()
        bar = str(app.screen.query_one(SummaryBar).render())
        assert "connecting 6/8" in bar
        assert not view.summary.falling_behind
    late = make_app()
    late.feed.now = lambda: NOW + 60  # nothing written for a minute
    async with late.run_test(size=SIZE) as pilot:
        view = await view_where(late, lambda v: len(v.rows) == 8)
        await pilot.pause()
        assert view.summary.falling_behind and view.summary.lag_s == 61.0
        assert "STORE FALLING BEHIND" in str(late.screen.query_one(SummaryBar).render())


async def test_a_bad_time_is_explained_and_typed_text_is_not_markup(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("g")
        await pilot.pause()
        app.screen.query_one("#jump-input", Input).value = "[bold]soon"
        await pilot.press("enter")
        await pilot.pause()
        error = str(app.screen.query_one("#jump-error").render())
        assert "cannot read '[bold]soon' as a time" in error
        assert app.cursor_ts is None
        await pilot.press("escape")
