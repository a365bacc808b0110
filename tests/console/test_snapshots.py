"""Screenshots of every screen at three terminal sizes (80x24, 120x35, 200x50), compared with the
stored SVGs so a visual change is seen, and at each size the screen's essentials are asserted:
the footer ends with `?` and `q`, and nothing essential is cut off.

The data is frozen (``fleetstore``: a real store written once, read on a fixed clock) and every
wait is on what the screen drew (a view, a loaded event), never on time, so the pictures do not
depend on the machine's load. Regenerate after an intended change:
``pytest tests/console/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from console_waits import view_where
from fleetstore import T0
from test_config_screen import CONFIGURATION, REPORT
from test_links_screen import open_on_baseline
from test_probes_snapshot import stored_link_test
from test_tool_screens import EXAMPLE, fixed_run
from textual.pilot import Pilot
from tooldata import T_BASE, baseline, leaf01_plan, nvlink_baseline

from fleet.console.app import FleetApp
from fleet.console.screens.audit import AuditScreen
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.config import ConfigScreen
from fleet.console.screens.ecmp_plan import EcmpPlanScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.probes import ProbesScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.screens.walkthrough import WalkthroughScreen
from fleet.console.widgets.fleet_table import FleetTable
from fleet.console.widgets.key_bar import KeyBar
from fleet.fabric.config_checks import report_event
from fleet.fabric.records import ActionRecord
from fleet.store.writer import StoreWriter

SIZES = {"80x24": (80, 24), "120x35": (120, 35), "200x50": (200, 50)}
MakeApp = Callable[..., FleetApp]
Steps = Callable[[Pilot[Any]], Awaitable[None]]


async def _ready(pilot: Pilot[Any]) -> FleetApp:
    """The Fleet screen with every node's values and its sparklines read."""
    app = pilot.app
    assert isinstance(app, FleetApp)
    await view_where(app, lambda v: len(v.rows) == 8 and v.trends_filled, timeout=10)
    await pilot.pause()
    return app


async def _essentials(pilot: Pilot[Any]) -> None:
    """At every size the footer ends with `?` and `q` (the way to every key, and out); a dialog
    over a screen has its own keys."""
    bars = pilot.app.screen.query(KeyBar)
    if not bars:
        return
    bar = bars.first()
    keys = [shown.key for shown in bar.shown if shown.line == 0]
    assert keys[-2:] == ["question_mark", "q"], keys


def _snap(snap_compare: Any, app: FleetApp, size: str, steps: Steps) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        await steps(pilot)
        await _essentials(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run)


async def _fleet(pilot: Pilot[Any]) -> None:
    await _ready(pilot)


async def _node(pilot: Pilot[Any]) -> None:
    await _ready(pilot)
    table = pilot.app.screen.query_one(FleetTable)
    table.move_cursor(row=list(table.order).index("gpu005"))  # weak optics on mlx5_1
    await pilot.press("enter")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, NodeScreen)
    await asyncio.wait_for(screen.drawn.wait(), 10)
    await pilot.pause()


def _mode(key: str) -> Steps:
    async def run(pilot: Pilot[Any]) -> None:
        await _ready(pilot)
        await pilot.press(key)
        await pilot.pause()

    return run


async def _jobs(pilot: Pilot[Any]) -> None:
    await _mode("3")(pilot)
    await pilot.press("enter")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def _topology(pilot: Pilot[Any]) -> None:
    await _mode("4")(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TopologyScreen)
    await asyncio.wait_for(screen.balances_read.wait(), 10)
    await pilot.press("right", "right")  # leaf09: the miswired cable of gpu006 arrives there
    await pilot.pause()


async def _probes(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    await pilot.press("p")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ProbesScreen)

    async def loaded() -> None:
        while screen.linktest is None:
            await app.next_view()

    await asyncio.wait_for(loaded(), 10)
    await pilot.press("down", "right")  # the cursor on the slow gpu003's column
    await pilot.pause()


async def _baselines(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    screen = BaselinesScreen()
    await app.push_screen(screen)
    await asyncio.wait_for(screen.loaded.wait(), 5)
    screen.pick(0, 1)
    await pilot.pause()


async def _walkthrough(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    screen = WalkthroughScreen(EXAMPLE, run=fixed_run(bad_optic=True))
    await app.push_screen(screen)
    await asyncio.wait_for(screen.measured.wait(), 5)
    await pilot.press("space", "space", "space")
    await pilot.pause()


async def _audit(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    screen = AuditScreen()
    await app.push_screen(screen)
    await asyncio.wait_for(screen.loaded.wait(), 5)
    await pilot.pause()


async def _ecmp_plan(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    screen = EcmpPlanScreen("leaf01", plan=leaf01_plan())
    await app.push_screen(screen)
    await asyncio.wait_for(screen.planned.wait(), 5)
    await pilot.pause()


async def _config(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    await pilot.press("C")
    screen = app.screen
    assert isinstance(screen, ConfigScreen)
    await asyncio.wait_for(screen.loaded.wait(), 5)
    await pilot.pause()


async def _links(pilot: Pilot[Any]) -> None:
    app = await _ready(pilot)
    await open_on_baseline(app, pilot)


def _with_check_run(writer: StoreWriter) -> None:
    writer.put_event(report_event(REPORT, CONFIGURATION))


def _with_nvlink_baseline(writer: StoreWriter) -> None:
    b = nvlink_baseline("May", T_BASE + 60 * 86400)
    writer.put_baseline(b.label, b.ts, b.to_json())


def _with_tools(writer: StoreWriter) -> None:
    """Baselines, an audited ECMP change and a link test for the tool screens."""
    for b in (baseline("March", T_BASE), baseline("April", T_BASE + 30 * 86400, bw_gbps=340.0, p99_usec=2.5)):
        writer.put_baseline(b.label, b.ts, b.to_json())
    for step, verdict in (("apply", ""), ("verdict", "kept hash-fields on leaf01: max/mean 1.90 -> 1.05")):
        writer.put_action(ActionRecord(T0 - 200, "operator@console", "leaf01", "ecmp.apply", step,
                                       commands=("nv set system forwarding ecmp-hash ingress-interface on",),
                                       before={"imbalance": 1.9}, after={"imbalance": 1.05}, verdict=verdict))
    stored_link_test(writer)
    assert writer.flush(timeout=10)


SCREENS: dict[str, Steps] = {
    "fleet": _fleet, "node": _node, "events": _mode("2"), "jobs": _jobs, "topology": _topology,
    "probes": _probes, "help": _mode("question_mark"), "baselines": _baselines, "walkthrough": _walkthrough,
    "audit": _audit, "ecmp_plan": _ecmp_plan, "config": _config, "links": _links,
}
SCREEN_DATA: dict[str, Callable[[StoreWriter], None]] = {"config": _with_check_run, "links": _with_nvlink_baseline}
"""What a screen needs stored besides the tools' data (kept from the others, whose pictures it would change)."""


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(snap_compare: Any, make_app: MakeApp, store: tuple[Path, StoreWriter], screen: str,
                size: str) -> None:
    if screen in SCREEN_DATA:
        SCREEN_DATA[screen](store[1])
    _with_tools(store[1])
    _snap(snap_compare, make_app(), size, SCREENS[screen])


def test_fleet_screen_read_only_high_contrast(snap_compare: Any, make_app: MakeApp) -> None:
    _snap(snap_compare, make_app(read_only=True, theme="fleet-high-contrast"), "120x35", _fleet)


def test_fleet_screen_light_replay(snap_compare: Any, make_app: MakeApp) -> None:
    _snap(snap_compare, make_app(theme="fleet-light", at=T0 - 300), "120x35", _fleet)
