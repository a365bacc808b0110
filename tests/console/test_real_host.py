"""The console collecting live from this real Linux host through the system's sshd.

This host has neither RDMA devices nor an NVIDIA driver on the machines CI runs on; the Fleet table
must say so as the node's state (not "no data", not an error), and the Node screen must say what
the host has. Where the host has either, the test says it does not apply, and why.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from console_waits import view_where
from helpers.real_sshd import RealSshd
from textual.widgets import Static

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.cli import main
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.screens.node import NodeScreen
from fleet.console.view_model import ConsoleView
from fleet.fabric.health import Health


def _has_rdma_or_driver() -> str:
    if os.path.isdir("/sys/class/infiniband") and os.listdir("/sys/class/infiniband"):
        return "this host has RDMA devices"
    if os.path.isdir("/sys/module/nvidia"):
        return "this host has the NVIDIA driver loaded"
    return ""


async def test_a_node_without_rdma_and_gpu_shows_as_such(real_sshd: RealSshd, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if reason := _has_rdma_or_driver():
        pytest.skip(f"{reason}: the console shows its values instead")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    inventory_path = real_sshd.inventory(tmp_path)
    db = tmp_path / "fleet.db"
    config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.5)
    app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5), load_inventory(inventory_path))
    async with app.run_test(size=(160, 40)) as pilot:

        def described(view: ConsoleView) -> bool:
            rows = {row.name: row for row in view.rows}
            return "this-host" in rows and rows["this-host"].state == "no RDMA devices, no NVIDIA driver"

        view = await view_where(app, described, timeout=90)
        assert view.rows[0].health is Health.OK
        app.push_screen(NodeScreen("this-host"))
        await pilot.pause()

        async def title() -> str:
            while "GiB memory" not in (text := str(app.screen.query_one("#node-title", Static).render())):
                await app.next_view()
            return text

        text = await asyncio.wait_for(title(), 30)
        assert "no RDMA devices · no NVIDIA driver" in text
        assert f"{os.cpu_count()} CPU" in text


@pytest.mark.parametrize("mode", ["agent", "commands"])
def test_collect_once_names_the_node_states(real_sshd: RealSshd, tmp_path: Path, mode: str) -> None:
    """In both modes: the agent's empty lines and command mode's empty tick are what the host is."""
    if reason := _has_rdma_or_driver():
        pytest.skip(f"{reason}: no node state to name")
    inventory = real_sshd.inventory(tmp_path, mode=mode)
    args = ["collect", "--once", "--inventory", str(inventory), "--db", str(tmp_path / "fleet.db")]
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    host = json.loads(result.stdout)["hosts"]["this-host"]
    assert (host["state"], host["node_states"]) == ("ok", ["no RDMA devices", "no NVIDIA driver"])
    text = CliRunner().invoke(main, args, catch_exceptions=False)
    assert text.exit_code == 0, text.output
    assert "no NVIDIA driver: 1 node, this-host" in text.stdout
    assert "no RDMA devices: 1 node, this-host" in text.stdout
