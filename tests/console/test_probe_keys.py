"""The console's probe keys against a real simulated fleet over SSH, a real store, the app's workers:
`t` between two marked nodes (on the node's worst NIC, with a verdict), `l` over a small fleet on one
rail, `a` all-reduce, read-only refusing each with its reason, and the per-job latency sampler."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from console_waits import view_where
from helpers.simfleet import running_fleet
from textual.widgets import DataTable, Input, OptionList, Select

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.probe_control import ProbeState, ProbeUnavailable
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.probe_allreduce import AllreduceDialog
from fleet.console.screens.probe_dialog import ProbeDialog
from fleet.console.screens.probes import ProbesScreen
from fleet.console.widgets.fleet_table import FleetTable
from fleet.console.widgets.pair_matrix import PairMatrix
from fleet.console.widgets.probe_panel import ProbePanel
from fleet.simulator.scenario import parse_scenario
from fleet.store.reader import StoreReader

SIZE = (160, 48)
SCENARIO = """
[fabric]
nodes = 4
nodes_per_leaf = 4
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 3

[[jobs]]
id = 501
tenant = "acme"
nodes = "gpu[001-004]"
load = 0.6

[[faults]]
kind = "optics_attenuation"
target = "gpu003:mlx5_2"
db = 7.0
at = 0
"""


@pytest.fixture
async def fleet_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[..., FleetApp]]:
    """An app factory over a running 4-node simulated fleet, collecting live into tmp_path/fleet.db."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    async with running_fleet(parse_scenario(SCENARIO, source="probes.toml"), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        db = tmp_path / "fleet.db"

        def make(job_latency: str = "off", read_only: bool = False) -> FleetApp:
            config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.3, diagnose=False,
                            job_latency=job_latency, read_only=read_only)
            return FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.3), inventory)

        yield make


async def probe_state(app: FleetApp, done: Callable[[ProbeState], bool], timeout: float = 15.0) -> ProbeState:
    """Wait (bounded) for a published probe state that satisfies ``done``."""
    if done(app.probes.state):
        return app.probes.state
    arrived: asyncio.Future[ProbeState] = asyncio.get_running_loop().create_future()

    def seen(state: ProbeState) -> None:
        if done(state) and not arrived.done():
            arrived.set_result(state)

    app.probes.changed.subscribe(app, seen)
    try:
        return await asyncio.wait_for(arrived, timeout)
    finally:
        app.probes.changed.unsubscribe(app)


async def test_latency_between_two_marked_nodes(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=15)
        table = app.screen.query_one(FleetTable)
        for name in ("gpu001", "gpu003"):
            table.move_cursor(row=list(table.order).index(name))
            await pilot.press("space")
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, ProbeDialog)
        await pilot.press("enter")  # the peer is the second marked node, the NIC mlx5_0
        state = await probe_state(app, lambda s: s.result is not None or bool(s.error))
        assert state.result is not None, state.error
        record = state.result.record
        assert record.ok and (record.kind, record.src, record.dst, record.src_nic) == ("lat", "gpu001", "gpu003",
                                                                                       "mlx5_0")
        assert 0 < record.result["t_typical_usec"] <= record.result["p99_usec"]
        assert state.result.previous is None
        panel = str(app.screen.query_one("#probe-text").render())
        assert "p99" in panel and "p99.9" in panel and "previous: none stored" in panel
        with StoreReader(app.config.db_path) as reader:
            stored = reader.probes(kind="lat")
        assert [(p.src, p.dst) for p in stored] == [("gpu001", "gpu003")] and stored[0].raw

        await pilot.press("t", "enter")  # again: now the first result is the previous one
        state = await probe_state(app, lambda s: s.result is not None and s.result.previous is not None)
        assert state.result is not None and state.result.previous is not None
        assert state.result.previous.ts == record.ts
        assert "previous: min" in str(app.screen.query_one("#probe-text").render())


async def test_a_probe_that_cannot_run_says_why(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=15)
        app.probes.start_pair("lat", "gpu001", "gpu002", nic="mlx5_9")  # no such device on the node
        state = await probe_state(app, lambda s: not s.running and bool(s.error))
        assert state.result is not None and not state.result.record.ok
        await pilot.pause()
        text = str(app.screen.query_one("#probe-text").render())
        assert "failed" in text and "mlx5_9" in text


async def test_read_only_hides_the_probe_keys_and_says_why(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app(read_only=True, job_latency="on")
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=15)
        await pilot.press("t", "b", "l", "a")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeDialog) and not app.probes.state.label
        assert not app.screen.query_one(ProbePanel).display
        said = [n.message for n in app._notifications]
        assert [m.split(" (", 1)[0] for m in said] == ["Latency", "Bandwidth", "Link test", "All-reduce"]
        assert all(m.endswith("refused, read-only mode sends nothing and changes nothing") for m in said)
        assert "starts ib_send_lat on two nodes" in said[0]
        await pilot.press("p", "l")  # the Probes screen's link test too
        await pilot.pause()
        assert [n.message for n in app._notifications][-1].startswith("Link test (l)")
        with pytest.raises(ProbeUnavailable, match="refused, read-only"):  # the palette's way in as well
            app.probes.start_pair("lat", "gpu001", "gpu002")
        await pilot.pause()
    with StoreReader(app.config.db_path) as reader:
        assert reader.probes() == []  # nothing sent: not even the job sampler, though job_latency = "on"


async def test_latency_defaults_to_the_worst_nic_and_carries_a_verdict(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: any(r.name == "gpu003" and r.worst_nic == "mlx5_2" for r in v.rows),
                         timeout=20)
        table = app.screen.query_one(FleetTable)
        table.move_cursor(row=list(table.order).index("gpu003"))
        await pilot.press("b")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ProbeDialog)
        assert dialog.query_one("#probe-nic", Select).value == "mlx5_2"  # where the trouble is, not mlx5_0
        await pilot.press("0", "0", "1", "enter")
        state = await probe_state(app, lambda s: s.result is not None or bool(s.error))
        assert state.result is not None and state.result.record.src_nic == "mlx5_2", state.error
        verdict = state.result.verdict
        assert verdict is not None and " % of 400G" in verdict.words and verdict.verdict in ("PASS", "FAIL")
        await pilot.pause()
        assert f"verdict: {verdict.words}" in str(app.screen.query_one("#probe-text").render())


async def test_allreduce_key_runs_on_the_marked_nodes(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=15)
        table = app.screen.query_one(FleetTable)
        for name in ("gpu001", "gpu002"):
            table.move_cursor(row=list(table.order).index(name))
            await pilot.press("space")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AllreduceDialog)
        assert app.screen.query_one("#allreduce-nodes", Input).value == "gpu[001-002]"
        await pilot.press("enter")
        state = await probe_state(app, lambda s: s.result is not None or bool(s.error), timeout=30)
        assert state.result is not None, state.error
        record = state.result.record
        assert record.kind == "allreduce" and record.params["nodes"] == ["gpu001", "gpu002"] and record.ok
        assert state.result.verdict is not None and "bus bandwidth" in state.result.verdict.words
        await pilot.pause()
        assert "peak bus bandwidth" in str(app.screen.query_one("#probe-text").render())


async def test_allreduce_key_on_the_jobs_screen_takes_the_jobs_nodes(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: any(j.job_id == "501" for j in v.jobs), timeout=20)
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AllreduceDialog)
        assert app.screen.query_one("#allreduce-nodes", Input).value == "gpu[001-004]"
        await pilot.press("escape")


async def test_link_test_fills_the_probes_screen(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=15)
        await pilot.press("l")
        await pilot.pause()
        app.screen.query_one("#linktest-rails").value = "0"  # type: ignore[attr-defined]
        await pilot.press("enter")
        progress = await probe_state(app, lambda s: s.total is not None or s.linktest is not None)
        state = await probe_state(app, lambda s: s.linktest is not None or bool(s.error), timeout=30)
        assert state.linktest is not None, state.error
        assert progress.total is None or progress.total == 6  # 4 nodes: 6 pairs on one rail
        report = state.linktest
        assert len(report.outcomes) == 6 and not report.unreachable
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProbesScreen)

        async def loaded() -> None:
            while screen.linktest is None:
                await app.next_view()

        await asyncio.wait_for(loaded(), 10)
        await pilot.pause()
        matrix = screen.query_one(PairMatrix).matrix
        assert matrix is not None and matrix["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004"]
        assert matrix["rail"] == 0 and all(c is not None for i, row in enumerate(matrix["p99_usec"])
                                           for j, c in enumerate(row) if i != j)
        assert screen.query_one("#probe-history", DataTable).row_count == 7  # 6 pairs and the summary


async def test_job_sampler_fills_job_latency(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app(job_latency="on")
    async with app.run_test(size=SIZE):
        await view_where(app, lambda v: any(j.job_id == "501" for j in v.snapshot.jobs), timeout=20)

        def sampled() -> list[tuple[float, float, float]]:
            with StoreReader(app.config.db_path) as reader:
                return reader.job_latency("501", 0.0, 4e9)

        async def filled() -> list[tuple[float, float, float]]:
            while not (buckets := sampled()):
                await app.next_view()
            return buckets

        buckets = await asyncio.wait_for(filled(), 20)
        assert all(0 < p50 <= p99 for _ts, p50, p99 in buckets)


async def test_bandwidth_from_the_node_screen_with_a_searched_peer(fleet_app: Callable[..., FleetApp]) -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 4, timeout=15)
        table = app.screen.query_one(FleetTable)
        table.move_cursor(row=list(table.order).index("gpu002"))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)
        await pilot.press("b")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ProbeDialog)
        await pilot.press("0", "0", "4")  # search: only gpu004 matches
        await pilot.pause()
        assert dialog.query_one("#probe-matches", OptionList).option_count == 1
        dialog.query_one("#probe-nic", Select).value = "mlx5_1"
        await pilot.press("enter")
        state = await probe_state(app, lambda s: s.result is not None or bool(s.error))
        assert state.result is not None, state.error
        record = state.result.record
        assert (record.kind, record.src, record.dst, record.src_nic, record.dst_nic) == (
            "bw", "gpu002", "gpu004", "mlx5_1", "mlx5_1")
        assert 0 < record.result["bw_avg_gbps"] <= record.result["bw_peak_gbps"]
        await pilot.pause()
        assert "Gb/s" in str(app.screen.query_one("#probe-text").render())
