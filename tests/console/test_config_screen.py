"""The Config screen (`C`) on a stored check run: checks grouped with their counts, the failing check's
parts below it, and a drill-down to the node or switch at fault; an empty store says how to get a run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from console_waits import NOW, view_where
from textual.widgets import DataTable, Static

from fleet.console.app import FleetApp
from fleet.console.screens.config import ConfigHostScreen, ConfigScreen
from fleet.console.widgets.fit_table import FitTable
from fleet.fabric.config_checks import CheckResult, ConfigReport, Verdict, report_event
from fleet.store.writer import StoreWriter

SIZE = (160, 40)
MakeApp = Callable[..., FleetApp]

PASS, FAIL = Verdict.PASS, Verdict.FAIL
REPORT = ConfigReport(NOW - 30.0, "NVIDIA lossless RoCE (default)", (
    CheckResult("nic_trust", "gpu001:mlx5_0", PASS, "dscp", "dscp"),
    CheckResult("nic_trust", "gpu002:mlx5_0", PASS, "dscp", "dscp"),
    CheckResult("nic_pfc", "gpu001:mlx5_0", PASS, "on priority 3 only", "on priorities 3"),
    CheckResult("nic_pfc", "gpu002:mlx5_0", FAIL, "on priority 3 only", "on priorities none", ("gpu002:mlx5_0",),
                "mlnx_qos -i enp12s0np0 --pfc 0,0,0,1,0,0,0,0"),
    CheckResult("peermem", "gpu001", PASS, "nvidia_peermem or nv_peer_mem", "nvidia_peermem"),
    CheckResult("peermem", "gpu002", PASS, "nvidia_peermem or nv_peer_mem", "nvidia_peermem"),
    CheckResult("switch_ecn", "leaf01", FAIL, "ECN on traffic class 3", "ECN on traffic classes none",
                ("leaf01",), "nv set qos congestion-control default-global traffic-class 3 ecn enable"),
    CheckResult("link_pfc", "gpu002:mlx5_0<->leaf01:swp2", FAIL, "PFC on priority 3 at both ends",
                "NIC none, switch port 3", ("gpu002:mlx5_0",)),
), {"gpu009": "unreachable: connection refused"})
CONFIGURATION = {"gpu002": {"ofed": "MLNX_OFED_LINUX-24.04-0.7.0.0", "peermem": "nvidia_peermem"},
                 "gpu002:mlx5_0": {"trust": "dscp", "pfc": "", "netdev_mtu": 9000},
                 "leaf01": {"trust": "pcp,dscp", "ecn_tcs": ""}}


def _cells(table: DataTable[object], column: int) -> list[str]:
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


def _store_run(writer: StoreWriter) -> None:
    writer.put_event(report_event(REPORT, CONFIGURATION))
    assert writer.flush(timeout=10)


async def _open(app: FleetApp, pilot: object) -> ConfigScreen:
    await view_where(app, lambda v: len(v.rows) == 8)
    await pilot.press("C")  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, ConfigScreen)
    await asyncio.wait_for(screen.loaded.wait(), 5)
    await pilot.pause()  # type: ignore[attr-defined]
    return screen


async def test_checks_grouped_the_failing_one_first_and_a_drill_down_to_the_node(
        make_app: MakeApp, store: tuple[Path, StoreWriter]) -> None:
    _store_run(store[1])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        title = str(screen.query_one("#config-title", Static).render())
        assert "3 of 5 checks fail" in title and "not read: gpu009" in title
        checks = screen.query_one("#config-checks", DataTable)
        assert _cells(checks, 0) == ["NICs", "", "GPUDirect", "switches", "links"]
        assert _cells(checks, 1) == ["NIC trust", "NIC PFC", "peer memory", "switch ECN", "link PFC"]
        assert _cells(checks, 4) == ["0", "1", "0", "1", "1"]
        assert _cells(checks, 5)[1] == "gpu002:mlx5_0"
        assert checks.cursor_row == 1  # the first failing check, its parts below
        parts = screen.query_one("#config-parts", DataTable)
        assert _cells(parts, 0) == ["gpu002:mlx5_0"] and _cells(parts, 3) == ["on priorities none"]
        assert "Source: NVIDIA" in str(screen.query_one("#config-detail", Static).render())
        await pilot.press("tab")
        await pilot.pause()
        assert "fix: mlnx_qos -i enp12s0np0 --pfc 0,0,0,1,0,0,0,0" in str(
            screen.query_one("#config-detail", Static).render())
        await pilot.press("enter")
        await pilot.pause()
        host = app.screen
        assert isinstance(host, ConfigHostScreen) and host.host == "gpu002"
        rows = host.query_one("#host-results", DataTable)
        assert _cells(rows, 0)[:2] == ["NIC PFC", "link PFC"] and _cells(rows, 2)[:2] == ["FAIL", "FAIL"]
        assert sorted(_cells(rows, 0)[2:]) == ["NIC trust", "peer memory"]
        settings = str(host.query_one("#host-settings", Static).render())
        assert "gpu002:mlx5_0: netdev_mtu=9000, pfc=, trust=dscp" in settings and "leaf01" not in settings
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        checks.focus()
        checks.move_cursor(row=3)
        await pilot.pause()
        assert _cells(parts, 0) == ["leaf01"]
        await pilot.press("tab", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfigHostScreen) and app.screen.host == "leaf01"


async def test_without_a_stored_run_the_screen_says_how_to_get_one(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot)
        assert "run `fleet check`" in str(screen.query_one("#config-title", Static).render())
        assert screen.query_one("#config-checks", DataTable).row_count == 0
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ConfigScreen)


def _drawn(table: FitTable) -> list[str]:
    return [column.key for column, _width in table.drawn]


def _fits(table: FitTable) -> None:
    """No sideways scrolling: the columns drawn fit the table's width."""
    assert table.virtual_size.width <= table.size.width, (table.id, table.virtual_size, table.size)


@pytest.mark.parametrize(("size", "checks_drawn", "parts_drawn", "host_drawn"), [
    ((80, 24), ["group", "check", "pass", "warn", "fail", "odd"], ["part", "verdict", "found"],
     ["check", "part", "verdict", "found"]),
    ((120, 35), ["group", "check", "pass", "warn", "fail", "odd"], ["part", "verdict", "expected", "found"],
     ["check", "part", "verdict", "expected", "found"]),
])
async def test_every_table_fits_the_terminal_and_keeps_the_names_and_the_verdict(
        make_app: MakeApp, store: tuple[Path, StoreWriter], size: tuple[int, int], checks_drawn: list[str],
        parts_drawn: list[str], host_drawn: list[str]) -> None:
    _store_run(store[1])
    app = make_app()
    async with app.run_test(size=size) as pilot:
        screen = await _open(app, pilot)
        checks, parts = screen.query_one("#config-checks", FitTable), screen.query_one("#config-parts", FitTable)
        assert _drawn(checks) == checks_drawn and _drawn(parts) == parts_drawn
        _fits(checks)
        _fits(parts)
        found = {column.key: width for column, width in parts.drawn}["found"]
        assert [str(c) for c in parts.get_column("found")] == ["on priorities none"]
        assert found >= len("on priorities none")  # what was found is read whole
        await pilot.press("tab", "enter")
        await pilot.pause()
        host = app.screen
        assert isinstance(host, ConfigHostScreen)
        rows = host.query_one("#host-results", FitTable)
        assert _drawn(rows) == host_drawn
        _fits(rows)
        assert [str(c) for c in rows.get_column("verdict")][:2] == ["FAIL", "FAIL"]


async def test_a_resize_redraws_the_tables_and_keeps_the_part_shown(
        make_app: MakeApp, store: tuple[Path, StoreWriter]) -> None:
    _store_run(store[1])
    app = make_app()
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await _open(app, pilot)
        await pilot.press("tab")
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        checks, parts = screen.query_one("#config-checks", FitTable), screen.query_one("#config-parts", FitTable)
        assert "expected" not in _drawn(parts) and _cells(parts, 0) == ["gpu002:mlx5_0"]
        assert checks.cursor_row == 1 and parts.has_focus
        assert "fix: mlnx_qos" in str(screen.query_one("#config-detail", Static).render())
