"""`fleet check fix` end to end over real SSH against the simulator: the canary goes first and the fix
restores the profile, verified by checking again and audited on the hash chain; a fix that does not take
is rolled back and stops the run; read-only mode refuses before anything connects."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from fleet.console.cli import main
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.simulator.server import FleetServer
from fleet.store.reader import StoreReader

PFC_FIX = "--pfc 0,0,0,1,0,0,0,0"


async def fleet(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, main, list(args), catch_exceptions=False)


@asynccontextmanager
async def misconfigured(tmp_path: Path, ignore: str = "") -> AsyncIterator[list[str]]:
    """``roce-misconfig`` served; a command line holding ``ignore`` is answered 'done' and not run
    (a NIC that acknowledges a setting it does not take). Yields ``--inventory``/``--db`` options."""
    server = FleetServer(FleetModel(load_scenario("roce-misconfig")))
    await server.start()
    handle = server._handle

    async def handler(host: str, process: Any) -> None:
        if ignore and ignore in (process.command or ""):
            process.exit(0)
            return
        await handle(host, process)

    server._handle = handler  # type: ignore[method-assign]
    try:
        inventory = write_state(server, tmp_path / "sim")
        yield ["--inventory", str(inventory), "--db", str(tmp_path / "fleet.db")]
    finally:
        await server.close()


@pytest.mark.timeout(180)
async def test_the_canary_goes_first_and_every_fix_is_verified_kept_and_audited(tmp_path: Path) -> None:
    async with misconfigured(tmp_path) as where:
        hosts = ["--nodes", "gpu003", "--switches", "leaf03,leaf12"]
        result = await fleet("check", "fix", *hosts, "--canary", "leaf12", "--yes", "--json", *where)
        again = await fleet("check", *hosts, "--json", *where)
        verified = await fleet("audit", "verify", "--db", where[-1])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [(h["host"], h["state"], h["canary"]) for h in document["hosts"]] == [
        ("leaf12", "kept", True), ("gpu003", "kept", False), ("leaf03", "kept", False)]
    assert "$ mlnx_qos -i enp31s0np0 " + PFC_FIX in result.stderr  # shown before it ran
    assert again.exit_code == 0, again.output  # the profile again
    assert verified.exit_code == 0, verified.output
    with StoreReader(where[-1]) as reader:
        rows = reader.audit()
    assert [(r.target, r.step) for r in rows] == [
        (host, step) for host in ("leaf12", "gpu003", "leaf03") for step in ("snapshot", "apply", "verify", "verdict")]
    gpu003 = [r for r in rows if r.target == "gpu003"]
    assert {r.action for r in gpu003} == {"check.fix"}
    assert gpu003[1].commands == ("mlnx_qos -i enp31s0np0 " + PFC_FIX,)
    assert gpu003[2].verdict == "verified: checked again: nic_pfc pass on gpu003"
    assert gpu003[2].before["results"] != gpu003[2].after["results"]
    assert [r.commands for r in rows if r.target == "leaf03" and r.step == "apply"] == [(
        "nv set qos congestion-control default-global traffic-class 3 ecn enable", "nv config apply -y")]


@pytest.mark.timeout(180)
async def test_a_fix_that_does_not_take_is_rolled_back_and_the_hosts_after_it_are_left_alone(tmp_path: Path) -> None:
    async with misconfigured(tmp_path, ignore=PFC_FIX) as where:
        hosts = ["--nodes", "gpu003,gpu006", "--switches", ""]
        result = await fleet("check", "fix", *hosts, "--canary", "gpu003", "--yes", "--json", *where)
        again = await fleet("check", *hosts, "--json", *where)
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    [canary, rest] = document["hosts"]
    assert (canary["host"], canary["state"]) == ("gpu003", "rolled-back")
    assert "nic_pfc on gpu003:mlx5_1 still fails (on priorities none)" in canary["verdict"]
    assert "read back: gpu003 runs the snapshot's configuration again" in canary["verdict"]
    assert (rest["host"], rest["state"], rest["verdict"]) == (
        "gpu006", "not-attempted", "not attempted: the canary gpu003 ended rolled-back")
    failed = {r["target"] for r in json.loads(again.stdout)["results"] if r["verdict"] == "fail"}
    assert {"gpu003:mlx5_1", "gpu006:mlx5_4"} <= failed  # neither changed
    with StoreReader(where[-1]) as reader:
        rows = reader.audit()
    assert [(r.step, r.action) for r in rows] == [
        ("snapshot", "check.fix"), ("apply", "check.fix"), ("verify", "check.fix"),
        ("rollback", "check.rollback"), ("verdict", "check.rollback")]
    assert rows[3].commands == ("mlnx_qos -i enp31s0np0 --pfc 0,0,0,0,0,0,0,0",)


@pytest.mark.timeout(120)
async def test_read_only_mode_refuses_before_anything_connects(tmp_path: Path) -> None:
    async with misconfigured(tmp_path) as where:
        result = await fleet("check", "fix", "--nodes", "gpu003", "--yes", "--read-only", *where)
        again = await fleet("check", "--nodes", "gpu003", "--switches", "", *where)
    assert result.exit_code == 2
    assert "refused: read-only mode" in result.output and "changes the RoCE" in result.output
    assert again.exit_code == 1  # still misconfigured
    assert not Path(where[-1]).exists() or StoreReader(where[-1]).audit() == []
