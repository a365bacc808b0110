"""The incident demo's Events screen shows every critical finding open now on its first screen.

The `incident` scenario, started in the past (as if it had been running for 200 s), collected over
SSH, judged by the console's diagnosis, then shown: the criticals (an XID 79, a pause storm, hosts
that refuse or hang, a GPU throttling) must not sit under the collector's state changes of busy
switches or under the findings that came and went.
"""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet
from textual.widgets import DataTable

import fleet.simulator.main
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.console.app import FleetApp
from fleet.console.cli.diagnose import collect_for
from fleet.console.config import Config
from fleet.console.diagnosis_watch import DiagnosisWatch
from fleet.console.feed import Feed, open_store_loader
from fleet.console.screens.events import EventsScreen
from fleet.fabric.events import Severity
from fleet.fabric.finding_life import open_findings
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

SIZE = (160, 40)
SETTINGS = CollectSettings(interval_s=1.0, hung_after_s=10.0, slow_after_s=2.0, facts_every_s=60.0, optics_every=2)


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_the_incidents_criticals_are_on_the_first_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet.simulator.main, "FleetModel",
                        functools.partial(FleetModel, start_unix=time.time() - 200.0))
    db = tmp_path / "fleet.db"
    writer = StoreWriter(db).start()
    try:
        async with running_fleet(load_scenario("incident"), tmp_path / "sim") as inventory_path:
            inventory = load_inventory(inventory_path)
            await asyncio.wait_for(collect_for(inventory, writer, 8.0, SETTINGS), timeout=90)
        assert writer.flush(timeout=30)
        for event in DiagnosisWatch(db, cabling=inventory.cabling).run().events:
            writer.put_event(event)
        assert writer.flush(timeout=30)
    finally:
        writer.close()
    with StoreReader(db) as reader:
        span = reader.time_span()
        critical = {(e.kind, e.host) for e in open_findings(reader.events(limit=100_000)).values()
                    if e.severity is Severity.CRITICAL}
    assert span is not None
    assert {("pfc_storm", "gpu024"), ("gpu_xid", "gpu007"), ("node_unreachable", "gpu031"),
            ("node_unresponsive", "gpu032")} <= critical
    app = FleetApp(Config(db_path=db, refresh_s=0.3), Feed(lambda: open_store_loader(db), refresh_s=0.3,
                                                            now=time.time))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        table = screen.query_one("#events-table", DataTable)

        async def drawn() -> None:
            while table.row_count == 0:
                await app.next_view()
                await pilot.pause()

        await asyncio.wait_for(drawn(), 15)
        visible = table.size.height - 1  # the header row
        first = {(str(table.get_row_at(i)[2]), str(table.get_row_at(i)[3])) for i in range(min(visible,
                                                                                               table.row_count))}
        assert critical <= first, f"criticals below the first screen: {critical - first}"
