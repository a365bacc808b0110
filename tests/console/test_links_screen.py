"""The NVLink-vs-network screen (`N`) at 80x24, 120x35 and 200x50 on a stored baseline: the node's NVLink beside its
NICs at every size, the other columns as the width allows, and never a column past the edge."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from console_waits import view_where
from tooldata import T_BASE, nvlink_baseline

from fleet.console.app import FleetApp
from fleet.console.screens.links import LinksScreen
from fleet.console.widgets.fit_table import FitTable
from fleet.store.writer import StoreWriter

MakeApp = Callable[..., FleetApp]
EVERY = ["where", "nvlink_allreduce", "nvlink_alltoall", "nvlink_errors", "rdma_allreduce", "rdma_alltoall",
         "rdma_nic"]


def _column(table: FitTable, key: str) -> list[str]:
    return [str(cell) for cell in table.get_column(key)]


async def open_on_baseline(app: FleetApp, pilot: object, label: str = "May") -> LinksScreen:
    """The Fleet screen read, then `N` and `b`: the figures of the newest stored baseline, ``label``."""
    await view_where(app, lambda v: len(v.rows) == 8)
    await pilot.press("N")  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, LinksScreen)
    await asyncio.wait_for(screen.loaded.wait(), 5)
    await pilot.press("b")  # type: ignore[attr-defined]
    await asyncio.wait_for(screen.loaded.wait(), 5)
    while not screen.from_baseline or screen.shown is None or screen.shown.source != f"baseline {label}":
        screen.loaded.clear()
        await asyncio.wait_for(screen.loaded.wait(), 5)
    await pilot.pause()  # type: ignore[attr-defined]
    return screen


@pytest.mark.parametrize(("size", "drawn"), [
    ((80, 24), ["where", "nvlink_allreduce", "rdma_nic"]),
    ((120, 35), ["where", "nvlink_allreduce", "nvlink_errors", "rdma_allreduce", "rdma_nic"]),
    ((200, 50), EVERY),
])
async def test_the_table_fits_every_terminal_and_keeps_nvlink_beside_the_nics(
        make_app: MakeApp, store: tuple[Path, StoreWriter], size: tuple[int, int], drawn: list[str]) -> None:
    writer = store[1]
    b = nvlink_baseline("May", T_BASE)
    writer.put_baseline(b.label, b.ts, b.to_json())
    assert writer.flush(timeout=10)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        screen = await open_on_baseline(app, pilot)
        table, ep = screen.query_one("#links-table", FitTable), screen.query_one("#links-ep", FitTable)
        assert [column.key for column, _width in table.drawn] == drawn
        for shown in (table, ep):
            assert shown.virtual_size.width <= shown.size.width, (shown.id, shown.virtual_size, shown.size)
        assert _column(table, "where") == ["gpu001", "gpu002", "across nodes"]
        assert _column(table, "nvlink_allreduce")[0] == "371.5 / 480.0 GB/s = 77 %"
        widths = {column.key: width for column, width in table.drawn}
        assert widths["rdma_nic"] >= len("311.0 / 400.0 Gb/s = 78 %")  # the slow NIC's ratio is read whole
        assert _column(table, "rdma_nic")[1].startswith("311.0 / 400.0 Gb/s = 78 %")
        assert ep.display and _column(ep, "kernel") == ["dispatch_fp8", "combine"]
