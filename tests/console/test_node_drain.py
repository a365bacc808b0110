"""Drain and resume from the Node screen (``d``, ``u``) against a real slurmctld, and the offer a
finding makes ("drain gpu017: link flapping on mlx5_1").

The console runs live on an inventory whose Slurm head is this host behind the system's sshd; what
the keys did is read back from Slurm and from the store's audit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from console_waits import view_where
from helpers.real_slurm import RealSlurm
from helpers.real_sshd import RealSshd
from textual.widgets import DataTable, Input

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.findings_text import drain_reason_for, finding_detail
from fleet.console.screens.help import HelpScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.node_change_confirm import ConfirmNodeChangeScreen
from fleet.fabric.events import Event, Severity
from fleet.store.reader import StoreReader

SIZE = (140, 40)


def _app(tmp_path: Path, sshd: RealSshd, *, read_only: bool = False) -> FleetApp:
    tmp_path.mkdir(exist_ok=True)
    inventory_path = sshd.inventory(tmp_path, head=True)
    db = tmp_path / "fleet.db"
    config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.5, read_only=read_only)
    return FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5), load_inventory(inventory_path))


async def test_drain_and_resume_keys(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    slurm, sshd = slurm_head
    monkeypatch.setenv("HOME", str(tmp_path))
    app = _app(tmp_path, sshd)
    async with app.run_test(size=SIZE) as pilot:
        screen = NodeScreen(slurm.node)
        await app.push_screen(screen)
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmNodeChangeScreen)
        await pilot.press(*"gpu fell off the bus, faulty riser")
        text = str(app.screen.query_one("#node-change-text").render())
        assert f"$ scontrol update NodeName={slurm.node} State=DRAIN 'Reason=gpu fell off the bus, faulty riser'" in text
        await pilot.press("enter")
        await asyncio.wait_for(screen.node_changed.wait(), 60)
        assert "DRAIN" in slurm.node_state()
        screen.node_changed.clear()
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmNodeChangeScreen)
        await pilot.press("y")
        await asyncio.wait_for(screen.node_changed.wait(), 60)
        assert "DRAIN" not in slurm.node_state()
    with StoreReader(tmp_path / "fleet.db") as reader:
        audit = reader.audit()
        assert reader.verify_audit().intact
    assert [(r.target, r.action) for r in audit] == [(slurm.node, "slurm.drain"), (slurm.node, "slurm.resume")]
    assert audit[0].after["reason"] == "gpu fell off the bus, faulty riser"


async def test_escape_changes_nothing_and_read_only_refuses(slurm_head: tuple[RealSlurm, RealSshd],
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slurm, sshd = slurm_head
    monkeypatch.setenv("HOME", str(tmp_path))
    app = _app(tmp_path, sshd)
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(NodeScreen(slurm.node))
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmNodeChangeScreen)
        assert app.screen.query_one(Input).value == ""  # no finding to offer a reason from
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)
    app = _app(tmp_path / "ro", sshd, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(NodeScreen(slurm.node))
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)
        said = [n.message for n in app._notifications]
        assert any("Drain (d) drains the node in Slurm" in m and "refused, read-only" in m for m in said), said
    assert "DRAIN" not in slurm.node_state()


async def test_help_on_the_node_screen_lists_drain_and_resume(make_app: Callable[..., FleetApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await app.push_screen(NodeScreen("gpu003"))
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one(DataTable)
        rows = {str(table.get_row_at(i)[2]): (str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1]))
                for i in range(table.row_count)}
        assert rows["node.drain"][0] == "d" and rows["node.resume"][0] == "u", rows


def _finding(kind: str, severity: Severity, host: str = "gpu017", device: str = "mlx5_1") -> Event:
    return Event(100.0, kind, severity, f"{kind} on {host}", host=host, device=device,
                 data={"finding": True, "next_step": "reseat the cable", "evidence": {}})


def test_a_critical_node_finding_offers_a_drain() -> None:
    flapping = _finding("link_flapping", Severity.CRITICAL)
    detail = str(finding_detail(flapping))
    assert "or: drain gpu017: link flapping on mlx5_1 (d on its Node screen" in detail
    assert "drain" not in str(finding_detail(_finding("link_flapping", Severity.WARNING)))
    assert "drain" not in str(finding_detail(_finding("pfc_storm", Severity.CRITICAL)))
    assert drain_reason_for([flapping], "gpu017") == "link flapping on mlx5_1"
    assert drain_reason_for([flapping], "gpu018") == ""
