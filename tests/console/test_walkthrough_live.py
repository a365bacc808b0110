"""The acceptance walkthrough against the simulator's healthy `acceptance` scenario (8 nodes)
over real SSH: the example criteria measured once, then every check turns PASS with its
evidence, and the suite is stored as a baseline as `fleet accept` does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet
from textual.widgets import DataTable, Static

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.screens.baselines import stored_baselines
from fleet.console.screens.walkthrough import WalkthroughScreen
from fleet.simulator.scenario import load_scenario

SIZE = (160, 45)
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"


@pytest.mark.timeout(120)
async def test_every_check_passes_on_the_healthy_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("acceptance", nodes=8), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        app = FleetApp(Config(db_path=db, refresh_s=0.5), Feed(lambda: open_store_loader(db), refresh_s=0.5))
        async with app.run_test(size=SIZE) as pilot:
            screen = WalkthroughScreen(EXAMPLE, inventory=inventory)
            await app.push_screen(screen)
            await asyncio.wait_for(screen.measured.wait(), 100)
            checks = screen.query_one("#walk-checks", DataTable)
            for _ in range(checks.row_count):
                await pilot.press("space")
            await pilot.pause()
            verdicts = {str(checks.get_row_at(i)[1]): str(checks.get_row_at(i)[0]) for i in range(checks.row_count)}
            assert set(verdicts.values()) == {"PASS"}, verdicts
            assert len(verdicts) == 9
            summary = str(screen.query_one("#walk-summary", Static).render())
            assert summary.startswith("ACCEPTED: all 9 checks pass")
            bandwidth = str(checks.get_row_at(list(verdicts).index("bandwidth"))[3])
            assert bandwidth.endswith("Gb/s") and " / " in bandwidth
    labels = [b.label for b in stored_baselines(db)]
    assert labels == ["Acceptance of the 64-node H100 RoCE cluster"]
