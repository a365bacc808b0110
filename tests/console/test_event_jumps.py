"""Enter on an event about a switch opens the Topology screen on that switch (node events open the node)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from console_waits import NOW, view_where
from textual.widgets import DataTable

from fleet.console.app import FleetApp
from fleet.console.screens.topology import TopologyScreen
from fleet.fabric.events import Event, Severity
from fleet.store.writer import StoreWriter

SIZE = (160, 40)


async def test_a_switch_event_jumps_to_the_switch(make_app: Callable[..., FleetApp],
                                                  store: tuple[Path, StoreWriter]) -> None:
    writer = store[1]
    writer.put_event(Event(NOW - 5, "spine_loss", Severity.CRITICAL, "spine loss: leaf02 swp31", host="leaf02",
                           port="swp31", switch="leaf02", data={"finding": True, "kind": "spine_loss"}))
    assert writer.flush(timeout=10)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: any(e.kind == "spine_loss" for e in v.snapshot.events))
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one("#events-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        table.move_cursor(row=next(i for i, r in enumerate(rows) if r[2] == "spine_loss"))
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TopologyScreen)
        assert screen.selected_leaf() == "leaf02"
