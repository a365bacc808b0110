"""`fleet sim --list-scenarios` and the simulator launcher `fleet demo` uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fleet.console.cli.sim import sim
from fleet.console.cli.sim_process import SimulatorFailed, scaled_line, start_sim


def test_list_scenarios() -> None:
    result = CliRunner().invoke(sim, ["--list-scenarios"])
    assert result.exit_code == 0
    names = [line.split()[0] for line in result.output.splitlines()]
    assert names == sorted(names)
    assert {"acceptance", "ecmp", "healthy", "incident"} <= set(names)
    assert all("(invalid" not in line for line in result.output.splitlines())


def test_launcher_waits_for_ready_and_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # away from the checkout: the child imports the installed ``fleet``
    process = start_sim("acceptance", tmp_path / "state", nodes=2, timeout_s=60)
    try:
        assert process.inventory == tmp_path / "state" / "inventory.toml"
        assert process.inventory.is_file()
        assert process.process.poll() is None
    finally:
        assert process.stop() == 0


def test_launcher_reports_why_the_simulator_failed(tmp_path: Path) -> None:
    with pytest.raises(SimulatorFailed, match="no such scenario file or built-in scenario"):
        start_sim(str(tmp_path / "missing.toml"), tmp_path / "state", timeout_s=60)


def test_demo_opens_the_console_on_a_live_simulator_and_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import asyncssh
    import click

    from fleet.collectors.inventory import load_inventory
    from fleet.console.cli import console_cmd
    from fleet.console.cli.demo import demo

    seen: dict[str, object] = {}

    async def hostname(address: str, port: int, key: str, known_hosts: str) -> str:
        async with asyncssh.connect(
            address, port, username="fleet", client_keys=[key], known_hosts=known_hosts, agent_path=None, config=[]
        ) as conn:
            return str((await conn.run("hostname")).stdout)

    @click.command()
    @click.option("--inventory", type=click.Path(path_type=Path))
    @click.option("--db", type=click.Path(path_type=Path))
    def fake_console(inventory: Path, db: Path) -> None:
        loaded = load_inventory(inventory)
        host = loaded.host("gpu002")
        assert host.port is not None
        seen["endpoint"] = (host.address, host.port)
        seen["hostname"] = asyncio.run(
            hostname(host.address, host.port, str(host.identity_file), str(loaded.known_hosts))
        )
        seen["db_parent_exists"] = db.parent.is_dir()

    monkeypatch.setattr(console_cmd, "console", fake_console)
    result = CliRunner().invoke(demo, ["--scenario", "acceptance", "--nodes", "2"])
    assert result.exit_code == 0, result.output
    assert seen["hostname"] == "gpu002\n" and seen["db_parent_exists"] is True
    endpoint = seen["endpoint"]
    assert isinstance(endpoint, tuple)
    address, port = endpoint

    async def refused() -> None:
        with pytest.raises(OSError):
            await asyncio.open_connection(address, port)

    asyncio.run(refused())  # the simulator is gone once the console returns


def test_a_smaller_fleet_starts_and_says_in_one_line_what_it_left_out(tmp_path: Path) -> None:
    process = start_sim("incident", tmp_path / "state", nodes=4, timeout_s=60)
    try:
        said = [line for line in process.log_path.read_text().splitlines() if line.startswith("fleet sim: ")]
        assert len(said) == 1 and "incident fitted to 4 nodes: job 4101 runs on gpu[001-004]" in said[0]
        assert scaled_line(process) == said[0]
    finally:
        assert process.stop() == 0
