"""Every key README.md and docs/console.md name in their keys tables is pressed on the real console
and does what the row says: a key added to the docs without a check here, or a check of a key the
docs no longer name, fails the first test."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from console_waits import NOW, view_where
from fleetstore import T0
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input

from fleet.collectors.probes.linktest import LinktestReport, LinktestSpec, PairOutcome
from fleet.console.app import FleetApp
from fleet.console.screens.audit import AuditScreen
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.columns_dialog import ColumnsDialog
from fleet.console.screens.config import ConfigScreen
from fleet.console.screens.ecmp_plan import EcmpPlanScreen
from fleet.console.screens.events import EventsScreen
from fleet.console.screens.fleet import FleetScreen
from fleet.console.screens.help import HelpScreen
from fleet.console.screens.jobs import JobsScreen
from fleet.console.screens.jump import JumpScreen
from fleet.console.screens.links import LinksScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.path_prompt import PathPrompt
from fleet.console.screens.probes import ProbesScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.store.writer import StoreWriter

ROOT = Path(__file__).resolve().parents[2]
SIZE = (120, 35)
Check = Callable[[Pilot[Any], FleetApp], Awaitable[None]]


def documented_keys() -> dict[str, set[str]]:
    """Per document, every key its keys table names (the backticked words of a row's first cell)."""
    found: dict[str, set[str]] = {}
    for name in ("README.md", "docs/console.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        section = text.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
        keys: set[str] = set()
        for line in section.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and cells and not set(cells[0]) <= {"-"} and cells[0] != "key":
                keys.update(re.findall(r"`([^`]+)`", cells[0]))
        found[name] = keys
    return found


def _notified(app: FleetApp, words: str) -> bool:
    return any(words in str(n.message) for n in app._notifications)


async def _on(pilot: Pilot[Any], key: str, screen_type: type) -> None:
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(pilot.app.screen, screen_type), (key, pilot.app.screen)


async def _screen_key(pilot: Pilot[Any], app: FleetApp, key: str, screen_type: type) -> None:
    await pilot.press("2" if key == "1" else "1")
    await _on(pilot, key, screen_type)


async def _help(pilot: Pilot[Any], app: FleetApp) -> None:
    await _on(pilot, "question_mark", HelpScreen)


async def _quit(pilot: Pilot[Any], app: FleetApp) -> None:
    await pilot.press("q")
    await pilot.pause()
    assert app._exit


async def _palette(pilot: Pilot[Any], app: FleetApp, key: str) -> None:
    await _on(pilot, key, CommandPalette)


async def _screenshot(pilot: Pilot[Any], app: FleetApp) -> None:
    await pilot.press("ctrl+s")
    await pilot.pause()
    assert list(app.config.screenshot_dir.glob("*.svg")) and _notified(app, str(app.config.screenshot_dir))


async def _replay(pilot: Pilot[Any], app: FleetApp, key: str) -> None:
    start, step = {"[": (None, -60), "]": (NOW - 600, 60), "{": (None, -600), "}": (NOW - 1200, 600)}[key]
    app.cursor_ts = start
    await pilot.press({"[": "left_square_bracket", "]": "right_square_bracket", "{": "left_curly_bracket",
                       "}": "right_curly_bracket"}[key])
    await pilot.pause()
    assert app.cursor_ts == (start if start is not None else NOW) + step


async def _live(pilot: Pilot[Any], app: FleetApp) -> None:
    app.cursor_ts = NOW - 600
    await pilot.press("L")
    assert app.cursor_ts is None


async def _enter(pilot: Pilot[Any], app: FleetApp) -> None:
    await _on(pilot, "enter", NodeScreen)


async def _escape(pilot: Pilot[Any], app: FleetApp) -> None:
    await _on(pilot, "enter", NodeScreen)
    await _on(pilot, "escape", FleetScreen)


async def _node_change(pilot: Pilot[Any], app: FleetApp, key: str) -> None:
    """On the Node screen, drain and resume say why they cannot run without an inventory; with one
    they show the scontrol command and ask (tests/console/test_node_drain.py, test_drain_real.py)."""
    await _on(pilot, "enter", NodeScreen)
    await pilot.press(key)
    await pilot.pause()
    assert _notified(app, "no inventory: start the console with --inventory to drain or resume"), key


async def _filter(pilot: Pilot[Any], app: FleetApp) -> None:
    await pilot.press("slash")
    await pilot.pause()
    box = app.screen.query_one("#filter", Input)
    assert box.display and box.has_focus


async def _sort(pilot: Pilot[Any], app: FleetApp, key: str) -> None:
    screen = app.screen
    assert isinstance(screen, FleetScreen)
    before = (screen.sort_column, screen.sort_descending)
    await pilot.press(key)
    await pilot.pause()
    after = (screen.sort_column, screen.sort_descending)
    assert after[0] != before[0] if key == "s" else after == (before[0], not before[1])


async def _mark(pilot: Pilot[Any], app: FleetApp) -> None:
    screen = app.screen
    assert isinstance(screen, FleetScreen)
    await pilot.press("space")
    assert len(screen.marked) == 1


async def _columns_or_clear(pilot: Pilot[Any], app: FleetApp) -> None:
    await _on(pilot, "c", ColumnsDialog)  # Fleet: choose the columns
    await pilot.press("escape", "3")
    await pilot.pause()
    app.highlighted_nodes = frozenset({"gpu001"})
    await pilot.press("c")  # Jobs: clear the highlight
    assert app.highlighted_nodes == frozenset()


async def _probe(pilot: Pilot[Any], app: FleetApp, key: str) -> None:
    """Without an inventory a probe key says why it cannot run; with one it opens its dialog or
    starts (tests/console/test_probe_keys.py and test_live.py press them on the simulator)."""
    await pilot.press(key)
    await pilot.pause()
    assert _notified(app, "inventory"), key


async def _a(pilot: Pilot[Any], app: FleetApp) -> None:
    await _probe(pilot, app, "a")  # Fleet: all-reduce
    await pilot.press("2")
    screen = app.screen
    assert isinstance(screen, EventsScreen) and not screen.show_all
    await pilot.press("a")  # Events: every event
    assert screen.show_all


async def _show_on_fleet(pilot: Pilot[Any], app: FleetApp) -> None:
    await pilot.press("3")
    await pilot.pause()
    assert isinstance(app.screen, JobsScreen)
    await pilot.press("f")
    await pilot.pause()
    assert isinstance(app.screen, FleetScreen) and app.highlighted_nodes == {"gpu001", "gpu002", "gpu003", "gpu004"}


async def _ecmp(pilot: Pilot[Any], app: FleetApp) -> None:
    await pilot.press("4")
    await pilot.pause()
    await _on(pilot, "e", EcmpPlanScreen)


async def _rail(pilot: Pilot[Any], app: FleetApp, key: str) -> None:
    await pilot.press("p")
    screen = app.screen
    assert isinstance(screen, ProbesScreen)
    while screen.linktest is None:
        await app.next_view()
    await pilot.press(key)
    await pilot.pause()
    assert screen.rail_index % 2 == 1


async def _tool(pilot: Pilot[Any], app: FleetApp, key: str, screen_type: type) -> None:
    await _on(pilot, key, screen_type)


def _bind(check: Callable[..., Awaitable[None]], *args: Any) -> Check:
    async def run(pilot: Pilot[Any], app: FleetApp) -> None:
        await check(pilot, app, *args)

    return run


CHECKS: dict[str, Check] = {
    "?": _help, "q": _quit, ":": _bind(_palette, "colon"), "ctrl+p": _bind(_palette, "ctrl+p"),
    "ctrl+s": _screenshot, "g": _bind(_tool, "g", JumpScreen), "L": _live,
    **{key: _bind(_replay, key) for key in "[]{}"},
    **{key: _bind(_screen_key, key, screen) for key, screen in
       (("1", FleetScreen), ("2", EventsScreen), ("3", JobsScreen), ("4", TopologyScreen), ("p", ProbesScreen))},
    "B": _bind(_tool, "B", BaselinesScreen), "W": _bind(_tool, "W", PathPrompt), "A": _bind(_tool, "A", AuditScreen),
    "N": _bind(_tool, "N", LinksScreen), "C": _bind(_tool, "C", ConfigScreen),
    "enter": _enter, "escape": _escape, "d": _bind(_node_change, "d"), "u": _bind(_node_change, "u"), "/": _filter, "s": _bind(_sort, "s"), "S": _bind(_sort, "S"),
    "space": _mark, "c": _columns_or_clear, "t": _bind(_probe, "t"), "b": _bind(_probe, "b"),
    "l": _bind(_probe, "l"), "x": _bind(_probe, "x"), "a": _a, "f": _show_on_fleet, "e": _ecmp, "r": _bind(_rail, "r"),
    "R": _bind(_rail, "R"),
}


def test_every_documented_key_has_a_check_and_every_check_a_documented_key() -> None:
    documented = documented_keys()
    named = set().union(*documented.values())
    assert named == set(CHECKS), (sorted(named - set(CHECKS)), sorted(set(CHECKS) - named))
    assert documented["README.md"] <= documented["docs/console.md"]  # the README's table is the short one


def _two_rail_link_test(writer: StoreWriter) -> None:
    nodes = ("gpu001", "gpu002", "gpu003")
    outcomes = tuple(PairOutcome(a, b, rail, None, True, 2.0, None, 1.8)
                     for rail in (0, 1) for k, a in enumerate(nodes) for b in nodes[k + 1:])
    report = LinktestReport(run_id="docs-keys", spec=LinktestSpec(nodes, rails=(0, 1)), seconds=1.0, rounds=2,
                            unreachable={}, nic_checks=(), outcomes=outcomes, references_usec={(0, "leaf"): 2.0, (1, "leaf"): 2.0},
                            bad=(), suspects=())
    writer.put_probe(report.summary_record(T0 - 30))
    assert writer.flush(timeout=10)


@pytest.mark.parametrize("key", sorted(CHECKS))
async def test_the_documented_key_does_what_the_docs_say(key: str, make_app: Callable[..., FleetApp],
                                                         store: tuple[Path, StoreWriter]) -> None:
    _two_rail_link_test(store[1])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.pause()
        await CHECKS[key](pilot, app)
