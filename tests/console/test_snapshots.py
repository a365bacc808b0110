"""Screenshots of every screen, compared with the stored SVGs so a visual change is seen.

Regenerate after an intended change: ``pytest tests/console/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from console_waits import view_where
from textual.pilot import Pilot

from fleet.console.app import FleetApp
from fleet.console.screens.node import NodeScreen
from fleet.console.widgets.fleet_table import FleetTable

SIZE = (160, 40)
MakeApp = Callable[..., FleetApp]


async def _ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    assert isinstance(app, FleetApp)
    await view_where(app, lambda v: len(v.rows) == 8)
    await pilot.pause()


def test_fleet_screen(snap_compare: Any, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_ready)


def test_fleet_screen_read_only_high_contrast(snap_compare: Any, make_app: MakeApp) -> None:
    assert snap_compare(make_app(read_only=True, theme="fleet-high-contrast"),
                        terminal_size=SIZE, run_before=_ready)


def test_fleet_screen_light_replay(snap_compare: Any, make_app: MakeApp) -> None:
    from fleetstore import T0

    assert snap_compare(make_app(theme="fleet-light", at=T0 - 300), terminal_size=SIZE,
                        run_before=_ready)


def test_node_screen(snap_compare: Any, make_app: MakeApp) -> None:
    async def open_node(pilot: Pilot[Any]) -> None:
        await _ready(pilot)
        table = pilot.app.screen.query_one(FleetTable)
        table.move_cursor(row=list(table.order).index("gpu003"))
        await pilot.press("enter")
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, NodeScreen)
        await asyncio.wait_for(screen.drawn.wait(), 10)
        # The tables size their columns when idle after new rows: let that happen twice.
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_node)


def _mode(key: str) -> Callable[[Pilot[Any]], Any]:
    async def run(pilot: Pilot[Any]) -> None:
        await _ready(pilot)
        await pilot.press(key)
        await pilot.pause()

    return run


def test_events_screen(snap_compare: Any, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_mode("2"))


def test_jobs_screen(snap_compare: Any, make_app: MakeApp) -> None:
    async def choose(pilot: Pilot[Any]) -> None:
        await _mode("3")(pilot)
        await pilot.press("enter")
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=choose)


def test_topology_screen(snap_compare: Any, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_mode("4"))


def test_help_screen(snap_compare: Any, make_app: MakeApp) -> None:
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_mode("question_mark"))
