"""The console's diagnosis worker: a fault injected in a simulated fleet, collected over SSH into a real
store, judged by the app's worker, stored once as an event, shown on the Events screen, and enter on it
opens the node."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from console_waits import view_where
from helpers.simfleet import running_fleet
from textual.widgets import DataTable

from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.console.app import FleetApp
from fleet.console.cli.diagnose import collect_for
from fleet.console.config import Config
from fleet.console.diagnosis_watch import DiagnosisWatch
from fleet.console.feed import Feed, open_store_loader
from fleet.console.screens.events import EventsScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.widgets.summary_bar import SummaryBar
from fleet.simulator.scenario import parse_scenario
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

SIZE = (160, 40)
SETTINGS = CollectSettings(interval_s=1.0, hung_after_s=10.0, slow_after_s=2.0, facts_every_s=60.0, optics_every=2)
SCENARIO = """
[fabric]
nodes = 4
nodes_per_leaf = 4
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 3

[[faults]]
kind = "link_down"
target = "gpu002:mlx5_1"
at = 0
"""


@pytest.fixture
async def collected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding a few seconds of the faulty fleet, as the collector wrote them."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    writer = StoreWriter(db).start()
    try:
        async with running_fleet(parse_scenario(SCENARIO, source="diag.toml"), tmp_path / "sim") as inventory_path:
            inventory = load_inventory(inventory_path)
            await asyncio.wait_for(collect_for(inventory, writer, 3.0, SETTINGS), timeout=60)
        assert writer.flush(timeout=30)
    finally:
        writer.close()
    return db


def link_down_events(db: Path) -> list[tuple[str, str, bool]]:
    with StoreReader(db) as reader:
        return [(e.host, e.device, bool(e.data.get("cleared"))) for e in reader.events(kind="link_down")]


async def test_the_worker_stores_a_finding_once_and_the_events_screen_jumps_to_it(collected: Path) -> None:
    db = collected
    config = Config(db_path=db, refresh_s=0.3, diagnose=True)
    with StoreReader(db) as reader:
        newest = reader.time_span()
    assert newest is not None
    app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.3, now=lambda: newest[1] + 1.0))
    async with app.run_test(size=SIZE) as pilot:
        view = await view_where(app, lambda v: any(e.kind == "link_down" for e in v.snapshot.events), timeout=15)
        event = next(e for e in view.snapshot.events if e.kind == "link_down")
        assert (event.host, event.device, event.data.get("finding")) == ("gpu002", "mlx5_1", True)
        assert view.summary.open_findings >= 1
        assert "findings (1 h) 0" not in str(app.screen.query_one(SummaryBar).render())

        runs = app.probes.diagnosis_runs
        app.probes.diagnose_now()  # the same fault again: nothing new is stored

        async def ran() -> None:
            while app.probes.diagnosis_runs == runs:
                await app.next_view()

        await asyncio.wait_for(ran(), 15)
        assert link_down_events(db) == [("gpu002", "mlx5_1", False)]

        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        table = screen.query_one("#events-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        index = next(i for i, r in enumerate(rows) if r[2] == "link_down")
        assert rows[index][3] == "gpu002" and "mlx5_1" in rows[index][4]
        table.move_cursor(row=index)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "gpu002"


def test_the_watch_raises_once_keeps_the_life_and_resumes_from_the_store(collected: Path) -> None:
    """Raised once with its opened_at, seen again without a new event; a new watch (a restarted console, the
    next `fleet diagnose`) reads the open finding back from the stored events and keeps its opened_at."""
    with StoreReader(collected) as reader:
        span = reader.time_span()
    assert span is not None
    now = span[1] + 1.0
    watch = DiagnosisWatch(collected, window_s=300.0)
    first = watch.run(now_ts=now)
    assert first.raised >= 1 and not first.cleared
    [raised] = [e for e in first.events if e.kind == "link_down" and e.host == "gpu002"]
    assert raised.data["opened_at"] == now and raised.data["active"] is True
    again = watch.run(now_ts=now + 1)
    assert (again.raised, again.cleared, again.events) == (0, 0, ())
    life = next(f for f in again.findings if f.finding.kind == "link_down")
    assert (life.opened_at, life.last_seen, life.active) == (now, now + 1, True)
    with StoreWriter(collected) as writer:
        for event in first.events:
            writer.put_event(event)
    resumed = DiagnosisWatch(collected, window_s=300.0).run(now_ts=now + 2)
    assert resumed.raised == 0
    assert next(f for f in resumed.findings if f.finding.kind == "link_down").opened_at == now
