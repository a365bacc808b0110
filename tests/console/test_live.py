"""The console collecting live from the simulated fleet: a real SSH fleet on loopback, the
collector as the app's worker, the store in tmp_path, and the same screens as replay."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from console_waits import view_where

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.view_model import ConsoleView
from fleet.fabric.health import Health
from fleet.simulator.main import serve
from fleet.simulator.scenario import parse_scenario

SCENARIO = """
[fabric]
nodes = 4
nodes_per_leaf = 4
spines = 1
link_layer = "roce"
link_gbps = 400
seed = 3

[[jobs]]
id = 7
tenant = "acme"
nodes = "gpu[001-003]"
load = 0.6

[[faults]]
kind = "optics_attenuation"
target = "gpu002:mlx5_1"
db = 7.0
at = 0

[[faults]]
kind = "node_unreachable"
target = "gpu004"
at = 0
"""


async def test_live_console_shows_the_faulty_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    stop, ready = asyncio.Event(), asyncio.Event()
    state = tmp_path / "state"
    sim = asyncio.create_task(serve(parse_scenario(SCENARIO, source="live.toml"), state,
                                    ready=lambda _line: ready.set(), stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        inventory = load_inventory(state / "inventory.toml")
        db = tmp_path / "fleet.db"
        config = Config(db_path=db, inventory_path=state / "inventory.toml", refresh_s=0.5)
        app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5), inventory)
        async with app.run_test(size=(160, 40)):

            def settled(view: ConsoleView) -> bool:
                rows = {r.name: r for r in view.rows}
                return (rows.get("gpu004") is not None and rows["gpu004"].health is Health.DOWN
                        and rows.get("gpu002") is not None and rows["gpu002"].health is Health.DEGRADED
                        and rows.get("gpu001") is not None and rows["gpu001"].health is Health.OK)

            view = await view_where(app, settled, timeout=60)
            rows = {r.name: r for r in view.rows}
            assert rows["gpu004"].state == "unreachable"
            assert rows["gpu002"].worst_nic == "mlx5_1"
            assert any("optics" in reason for reason in rows["gpu002"].reasons)
            assert view.snapshot.live and view.summary.lag_s is not None
    finally:
        stop.set()
        await asyncio.wait_for(sim, 30)
