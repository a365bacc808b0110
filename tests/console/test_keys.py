"""Keys that keep their word, pressed on the real console over a real store: the palette on
ctrl+p, ctrl+s into a folder it makes, the screen keys from every screen, go-to-time with a
time of day, the Fleet table's filter, sort arrow, marks and column choice."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Callable
from pathlib import Path

from console_waits import NOW, view_where
from test_tool_screens import EXAMPLE, fixed_run
from textual.command import CommandPalette
from textual.widgets import Input, SelectionList

from fleet.console.app import FleetApp
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.columns_dialog import ColumnsDialog
from fleet.console.screens.events import EventsScreen
from fleet.console.screens.fleet import FleetScreen
from fleet.console.screens.jobs import JobsScreen
from fleet.console.screens.jump import JumpScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.probes import ProbesScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.screens.walkthrough import WalkthroughScreen
from fleet.console.timespec import format_moment
from fleet.console.widgets.fleet_table import FleetTable
from fleet.console.widgets.key_bar import KeyBar
from fleet.console.widgets.summary_bar import SummaryBar

MakeApp = Callable[..., FleetApp]
SIZE = (120, 35)


async def _ready(app: FleetApp) -> None:
    await view_where(app, lambda v: len(v.rows) == 8)


async def test_ctrl_p_opens_the_palette_as_colon_does(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await _ready(app)
        for key in ("ctrl+p", "colon"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, CommandPalette), key
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, FleetScreen)


async def test_ctrl_s_saves_the_screen_as_svg_in_a_folder_it_makes_and_says_where(
        make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app()
    folder = tmp_path / "screenshots"
    assert not folder.exists()
    async with app.run_test(size=SIZE) as pilot:
        await _ready(app)
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = list(folder.glob("*.svg"))
        assert len(saved) == 1 and saved[0].read_text().startswith("<svg")
        assert any(str(saved[0]) in str(n.message) for n in app._notifications)


async def test_the_footers_screen_keys_work_from_every_screen(make_app: MakeApp) -> None:
    """1 2 3 4 p from a mode screen, from a node, from Baselines and from the walkthrough: the
    screens opened on top close and the screen asked for shows."""
    app = make_app()
    targets = {"1": FleetScreen, "2": EventsScreen, "3": JobsScreen, "4": TopologyScreen, "p": ProbesScreen}
    async with app.run_test(size=SIZE) as pilot:
        await _ready(app)

        async def open_node() -> None:
            await pilot.press("1")
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, NodeScreen)

        async def open_baselines() -> None:
            await pilot.press("B")
            await pilot.pause()
            assert isinstance(app.screen, BaselinesScreen)

        async def open_walkthrough() -> None:
            screen = WalkthroughScreen(EXAMPLE, run=fixed_run())
            await app.push_screen(screen)
            await asyncio.wait_for(screen.measured.wait(), 5)
            assert app.theme == "fleet-high-contrast"

        for opener in (open_node, open_baselines, open_walkthrough):
            for key, screen_type in targets.items():
                await opener()
                bar = app.screen.query_one(KeyBar)
                assert key in {shown.key for shown in bar.shown}, (opener.__name__, key)
                await pilot.press(key)
                await pilot.pause()
                assert type(app.screen) is screen_type, (opener.__name__, key, app.screen)
                assert app.theme == "fleet-dark"  # the walkthrough's theme went with it


async def test_go_to_time_takes_a_time_of_day(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await _ready(app)
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, JumpScreen)
        target = NOW - 300
        await pilot.press(*format_moment(target)[11:16])  # HH:MM, as a person types it
        await pilot.press("enter")
        await pilot.pause()
        assert app.cursor_ts is not None and abs(app.cursor_ts - target) < 60
        await pilot.press("L")
        assert app.cursor_ts is None


async def test_the_filter_box_sits_under_the_summary_bar_and_the_bar_says_a_filter_is_on(
        make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await _ready(app)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await pilot.press("slash")
        await pilot.pause()
        box = screen.query_one("#filter", Input)
        summary = screen.query_one(SummaryBar)
        table = screen.query_one(FleetTable)
        assert summary.region.bottom <= box.region.y < table.region.y  # not over the header any more
        await pilot.press(*"state:down")
        await pilot.pause()
        assert summary.text.startswith(" filter state:down (2 of 8; esc clears)")
        await pilot.press("enter", "escape")
        await pilot.pause()
        assert "filter" not in summary.text and table.row_count == 8


async def test_the_sorted_column_has_an_arrow_and_marked_nodes_a_mark(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await _ready(app)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        assert table.render_line(0).text.split()[1] == "▼state"
        await pilot.press("s")
        await pilot.pause()
        assert screen.sort_column == "group" and "▼grp" in table.render_line(0).text
        await pilot.press("S")
        await pilot.pause()
        assert "▲grp" in table.render_line(0).text
        first = table.current_node()
        await pilot.press("space")
        await pilot.pause()
        assert table.render_line(1).text.split()[:2] == ["◆", first]


async def test_columns_chosen_with_c_are_drawn_and_saved_in_the_config(make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await _ready(app)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await pilot.press("c")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ColumnsDialog)
        choices = dialog.query_one(SelectionList)
        for key in ("jobs", "cnp", "tx"):
            choices.deselect(key)
        await pilot.press("enter")
        await pilot.pause()
        drawn = [c.key for c in screen.query_one(FleetTable).columns_layout.columns]
        assert "jobs" not in drawn and "cnp" not in drawn and "rx" in drawn
    saved = tomllib.loads((tmp_path / "config.toml").read_text())["fleet_columns"]
    assert "jobs" not in saved and saved[:2] == ["name", "state"]


async def test_the_footer_fits_the_terminal_with_q_and_help_always_and_every_screens_key_at_120x35(
        make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app)
        await pilot.pause()
        bar = app.screen.query_one(KeyBar)
        assert bar.size.height == 1
        assert [s.key for s in bar.shown][-2:] == ["question_mark", "q"]
        assert {"1", "2", "3", "4", "p"} <= {s.key for s in bar.shown}
        assert max(s.end for s in bar.shown) <= 80
        await pilot.resize_terminal(120, 35)
        await pilot.pause()
        await pilot.pause()
        assert bar.size.height == 2  # a second line rather than keys left out
        keys = {s.key for s in bar.shown}
        assert {"1", "2", "3", "4", "p", "B", "W", "A", "question_mark", "q"} <= keys
        assert [s.key for s in bar.shown if s.line == 0][-2:] == ["question_mark", "q"]
