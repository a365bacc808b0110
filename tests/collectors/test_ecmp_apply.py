"""A leaf that drops the SSH session in the middle of `nv config apply` leaves an exact audit row,
and the next plan reads the configuration the switch really runs."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fleet.collectors.commands import command
from fleet.collectors.ecmp_apply import ApplySettings, EcmpApply
from fleet.collectors.ecmp_status import plan_leaf
from fleet.collectors.inventory import load_inventory
from fleet.collectors.sshpool import SshPool
from fleet.fabric.ecmp import EcmpThresholds
from fleet.fabric.records import ActionRecord
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.simulator.server import FleetServer
from fleet.simulator.session import StreamIO


@pytest.mark.timeout(60)
async def test_session_dropped_after_apply_sent_leaves_the_exact_audit_row(tmp_path: Path) -> None:
    server = FleetServer(FleetModel(load_scenario("ecmp")))
    await server.start()
    handle = server._handle
    dropped = asyncio.Event()

    async def dropping(host: str, process: Any) -> None:
        if host == "leaf01" and "config apply" in (process.command or ""):
            await server.shell(host).run(process.command, StreamIO(_discard, _discard))  # the switch applies it...
            server._close_listener(server.listeners[host])  # ...and goes away before answering
            process.channel.get_connection().abort()
            dropped.set()
            return
        await handle(host, process)

    server._handle = dropping  # type: ignore[method-assign]
    try:
        inventory = load_inventory(write_state(server, tmp_path / "sim"))
        host = inventory.host("leaf01")
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        plan = await plan_leaf(pool, host, None)
        remedy = next(r for r in plan.remedies if r.id == "hash-fields")
        rows: list[ActionRecord] = []
        settings = ApplySettings(window_s=2.0, interval_s=0.5, thresholds=EcmpThresholds(sustain_s=1.0),
                                 command_timeout_s=10.0)
        applier = EcmpApply(pool, host, remedy, spines={h.name for h in inventory.by_role("spine")},
                            actor="tester@host", put_action=rows.append, settings=settings)
        outcome = await asyncio.wait_for(applier.run(read_only=False), timeout=40)
        await pool.close()
        assert dropped.is_set()
        assert outcome.state == "unknown"
        last = rows[-1]
        assert last.step == "apply" and last.target == "leaf01" and last.actor == "tester@host"
        assert last.verdict.startswith("unknown: set staged, apply sent, no answer")
        assert "the switch may or may not run the new config" in last.verdict
        assert "run `fleet ecmp plan --leaf leaf01` to read it back" in last.verdict
        await server._listen(server.listeners["leaf01"])  # the switch is back, on the same address and port
        fresh = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        again = await plan_leaf(fresh, host, None)
        await fresh.close()
        assert again.snapshot.reachable
        assert "ingress-interface" in (again.snapshot.config.ecmp_fields or ())
        assert [r.id for r in again.remedies] == ["host-qps", "hash-seed", "adaptive-routing"]
    finally:
        await server.close()



def _discard(text: str) -> None:
    """The answer the client never gets."""
    del text


@pytest.mark.timeout(60)
async def test_a_command_the_switch_refuses_detaches_what_was_staged_and_changes_nothing(tmp_path: Path) -> None:
    server = FleetServer(FleetModel(load_scenario("ecmp")))
    await server.start()
    try:
        inventory = load_inventory(write_state(server, tmp_path / "sim"))
        host = inventory.host("leaf01")
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        plan = await plan_leaf(pool, host, None)
        good = next(r for r in plan.remedies if r.id == "hash-fields")
        bogus = dataclasses.replace(good, commands=(good.commands[0],
                                                    ("nv", "set", "system", "forwarding", "ecmp-hash", "bogus", "on"),
                                                    good.commands[1]))
        rows: list[ActionRecord] = []
        settings = ApplySettings(window_s=1.0, interval_s=0.5, command_timeout_s=10.0)
        applier = EcmpApply(pool, host, bogus, spines={h.name for h in inventory.by_role("spine")},
                            actor="tester@host", put_action=rows.append, settings=settings)
        outcome = await asyncio.wait_for(applier.run(read_only=False), timeout=40)
        diff = await pool.run("leaf01", command("nv", "config", "diff"), 10)
        after = await plan_leaf(pool, host, None)
        await pool.close()
    finally:
        await server.close()
    assert outcome.state == "failed"
    assert rows[-1].step == "apply" and rows[-1].commands[-1] == "nv config detach"
    assert "the switch refused `nv set system forwarding ecmp-hash bogus on`" in rows[-1].verdict
    assert rows[-1].verdict.endswith("staged changes detached; nothing was applied (the commands before only staged "
                                     "it): leaf01 runs the configuration of the snapshot")
    assert diff.ok and diff.stdout.strip() == ""
    assert after.snapshot.config == plan.snapshot.config


@pytest.mark.timeout(60)
async def test_cancelled_after_the_change_was_sent_leaves_an_audit_row(tmp_path: Path) -> None:
    server = FleetServer(FleetModel(load_scenario("ecmp")))
    await server.start()
    try:
        inventory = load_inventory(write_state(server, tmp_path / "sim"))
        host = inventory.host("leaf01")
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        plan = await plan_leaf(pool, host, None)
        remedy = next(r for r in plan.remedies if r.id == "hash-fields")
        rows: list[ActionRecord] = []
        applied = asyncio.Event()
        settings = ApplySettings(window_s=1.0, interval_s=0.5, command_timeout_s=10.0)
        applier = EcmpApply(pool, host, remedy, spines={h.name for h in inventory.by_role("spine")},
                            actor="tester@host", put_action=rows.append, settings=settings,
                            on_step=lambda step, _words: applied.set() if step == "apply" else None)
        task = asyncio.ensure_future(applier.run(read_only=False))
        await asyncio.wait_for(applied.wait(), timeout=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await pool.close()
    finally:
        await server.close()
    assert [r.step for r in rows] == ["snapshot", "measure", "apply", "verdict"]
    assert rows[-1].verdict.startswith("cancelled after `nv config apply -y -m")
    assert "may run hash-fields unverified and not rolled back" in rows[-1].verdict
    assert "nv set system forwarding ecmp-hash ingress-interface off" in rows[-1].verdict
