"""Screenshots of the ECMP plan, baselines and walkthrough screens on fixed data, compared with
the stored SVGs so a visual change is seen.

Regenerate after an intended change: ``pytest tests/console/test_tool_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console_waits import view_where
from test_tool_screens import EXAMPLE, fixed_run
from textual.pilot import Pilot
from tooldata import T_BASE, baseline, leaf01_plan

from fleet.console.app import FleetApp
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.ecmp_plan import EcmpPlanScreen
from fleet.console.screens.walkthrough import WalkthroughScreen
from fleet.store.writer import StoreWriter

SIZE = (160, 40)
MakeApp = Callable[..., FleetApp]


async def _ready(pilot: Pilot[Any]) -> FleetApp:
    app = pilot.app
    assert isinstance(app, FleetApp)
    await view_where(app, lambda v: len(v.rows) == 8)
    await pilot.pause()
    return app


def test_ecmp_plan_screen(snap_compare: Any, make_app: MakeApp) -> None:
    async def open_plan(pilot: Pilot[Any]) -> None:
        app = await _ready(pilot)
        screen = EcmpPlanScreen("leaf01", plan=leaf01_plan())
        await app.push_screen(screen)
        await asyncio.wait_for(screen.planned.wait(), 5)
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_plan)


def test_baselines_screen(snap_compare: Any, make_app: MakeApp, store: tuple[Path, StoreWriter]) -> None:
    _path, writer = store
    for b in (baseline("March", T_BASE), baseline("April", T_BASE + 30 * 86400, bw_gbps=340.0, p99_usec=2.5)):
        writer.put_baseline(b.label, b.ts, b.to_json())
    assert writer.flush(timeout=10)

    async def open_diff(pilot: Pilot[Any]) -> None:
        app = await _ready(pilot)
        screen = BaselinesScreen()
        await app.push_screen(screen)
        await asyncio.wait_for(screen.loaded.wait(), 5)
        screen.pick(0, 1)
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_diff)


def test_walkthrough_screen(snap_compare: Any, make_app: MakeApp) -> None:
    async def walk(pilot: Pilot[Any]) -> None:
        app = await _ready(pilot)
        screen = WalkthroughScreen(EXAMPLE, run=fixed_run(bad_optic=True))
        await app.push_screen(screen)
        await asyncio.wait_for(screen.measured.wait(), 5)
        await pilot.press("space", "space", "space")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=walk)
