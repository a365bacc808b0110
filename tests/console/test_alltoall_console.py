"""The console's all-to-all key on Jobs and Fleet against a simulated fleet over SSH (progress, the result and its
comparison in the probe panel, read-only refusing it) and the NVLink-vs-network screen."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from console_waits import view_where
from helpers.simfleet import running_fleet
from textual.widgets import Input

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.probe_control import ProbeState
from fleet.console.screens.links import LinksScreen
from fleet.console.screens.probe_alltoall import AlltoallDialog
from fleet.console.widgets.fit_table import FitTable
from fleet.console.widgets.fleet_table import FleetTable
from fleet.console.widgets.probe_panel import ProbePanel
from fleet.simulator.scenario import parse_scenario
from fleet.store.reader import StoreReader

pytestmark = pytest.mark.timeout(120)

SIZE = (160, 48)
SCENARIO = """
[fabric]
nodes = 4
nodes_per_leaf = 2
spines = 2
seed = 3

[[jobs]]
id = 601
tenant = "acme"
nodes = "gpu[001-004]"
load = 0.4
"""


@pytest.fixture
async def fleet_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[..., FleetApp]]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    async with running_fleet(parse_scenario(SCENARIO, source="a2a.toml"), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        db = tmp_path / "fleet.db"

        def make(read_only: bool = False) -> FleetApp:
            config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.3, diagnose=False,
                            job_latency="off", read_only=read_only)
            return FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.3), inventory)

        yield make


async def probe_state(app: FleetApp, done: Callable[[ProbeState], bool], seen: list[ProbeState],
                      timeout: float = 60.0) -> ProbeState:
    """Wait (bounded) for a published state that satisfies ``done`` (or the current one, when it does); every state
    published meanwhile goes to ``seen``."""
    if done(app.probes.state):
        return app.probes.state
    arrived: asyncio.Future[ProbeState] = asyncio.get_running_loop().create_future()

    def published(state: ProbeState) -> None:
        seen.append(state)
        if done(state) and not arrived.done():
            arrived.set_result(state)

    app.probes.changed.subscribe(app, published)
    try:
        return await asyncio.wait_for(arrived, timeout)
    finally:
        app.probes.changed.unsubscribe(app)


async def test_x_on_the_jobs_screen_runs_on_the_jobs_nodes_with_progress(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: any(j.job_id == "601" for j in v.jobs), timeout=20)
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, AlltoallDialog)
        assert app.screen.query_one("#allreduce-nodes", Input).value == "gpu[001-004]"
        states: list[ProbeState] = []
        await pilot.press("enter")
        state = await probe_state(app, lambda s: s.result is not None or bool(s.error), states)
        assert state.result is not None, state.error
        record = state.result.record
        assert record.kind == "alltoall" and record.ok and record.params["nodes"] == ["gpu001", "gpu002", "gpu003",
                                                                                      "gpu004"]
        steps = [s for s in states if s.running and s.total]
        assert steps and steps[0].total == steps[-1].total and len({s.done for s in steps}) > 3  # a step at a time
        assert any("rail 3" in s.text for s in steps)
        await pilot.pause()
        panel = str(app.screen.query_one("#probe-text").render())
        assert "all-to-all bus bandwidth" in panel and "of the theoretical" in panel
        assert "previous: none stored" in panel and "baseline: none stored" in panel
        with StoreReader(app.config.db_path) as reader:
            assert [p.kind for p in reader.probes(kind="alltoall")] == ["alltoall"]


async def test_x_on_the_fleet_screen_compares_with_the_previous_run(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=20)
        table = app.screen.query_one(FleetTable)
        table.move_cursor(row=list(table.order).index("gpu002"))
        finished: list[float] = []
        for _ in range(2):
            await pilot.press("x")
            await pilot.pause()
            assert app.screen.query_one("#allreduce-nodes", Input).value == "gpu002"
            await pilot.press("enter")
            state = await probe_state(app, lambda s: bool(s.error) or (
                s.result is not None and s.result.record.ts not in finished), [])
            assert state.result is not None, state.error
            finished.append(state.result.record.ts)
        assert state.result.previous is not None and state.result.previous.ts == finished[0]
        assert state.result.verdict is not None and state.result.verdict.verdict == "PASS"
        await pilot.pause()
        panel = str(app.screen.query_one("#probe-text").render())
        assert "previous: all-to-all bus bandwidth" in panel and "verdict: bus bandwidth" in panel


async def test_read_only_refuses_x_and_says_why(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=20)
        for key in ("x", "3", "x"):  # on Fleet, then on Jobs
            await pilot.press(key)
            await pilot.pause()
        assert not isinstance(app.screen, AlltoallDialog) and not app.probes.state.label
        said = [n.message for n in app._notifications]
        assert len(said) == 2 and all(m.startswith("All-to-all (x) starts alltoall_perf") for m in said)
        assert all(m.endswith("refused, read-only mode sends nothing and changes nothing") for m in said)
        assert not app.screen.query_one(ProbePanel).display
    with StoreReader(app.config.db_path) as reader:
        assert reader.probes() == []


async def test_the_links_screen_sets_nvlink_beside_the_network(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=(200, 50)) as pilot:  # wide enough for every column
        await view_where(app, lambda v: len(v.rows) == 4, timeout=20)
        app.probes.start_alltoall(["gpu001"])
        await probe_state(app, lambda s: s.result is not None or bool(s.error), [])
        app.probes.start_alltoall(["gpu001", "gpu003"])
        await probe_state(app, lambda s: s.result is not None or bool(s.error), [])
        await pilot.press("N")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LinksScreen)
        await asyncio.wait_for(screen.loaded.wait(), 20)
        table = screen.query_one("#links-table", FitTable)
        assert [column.key for column, _width in table.drawn] == [column.key for column in table.all_columns]
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[0] for r in rows] == ["gpu001", "gpu002", "gpu003", "gpu004", "across nodes"]
        assert "/ 450.0 GB/s = 8" in rows[0][2]  # gpu001's NVLink all-to-all against NVLink's line rate
        assert rows[1][2] == "-" and rows[0][3] == "0"  # not measured there; no NVLink errors
        assert "(2 nodes)" in rows[-1][5] and " GB/s = " in rows[-1][5]  # across nodes, over RDMA
        assert "newest probes" in str(screen.query_one("#links-source").render())
        await pilot.press("b")
        await pilot.pause()
        await asyncio.wait_for(screen.loaded.wait(), 20)
        assert "no baseline stored yet" in str(screen.query_one("#links-source").render())
