"""An identity file that group or others may access is refused before connecting, in OpenSSH's words."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.commands import command
from fleet.collectors.identity_file import identity_file_problem
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.console.cli import main
from fleet.fabric.states import HostState


def _openssh_words(mode: int, path: Path) -> str:
    return (f"Permissions 0{mode:03o} for '{path}' are too open. "
            "It is required that your private key files are NOT accessible by others.")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o660, 0o601])
def test_any_group_or_other_bit_is_too_open(tmp_path: Path, mode: int) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("not read: the mode is judged first\n")
    key.chmod(mode)
    assert identity_file_problem(key) == _openssh_words(mode, key)


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_private_modes_are_fine(tmp_path: Path, mode: int) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("x\n")
    key.chmod(mode)
    assert identity_file_problem(key) is None


async def test_the_pool_refuses_before_it_connects(tmp_path: Path) -> None:
    """A port nobody listens on: had fleet connected first, the state would be `unreachable`."""
    key = tmp_path / "id_ed25519"
    key.write_text("x\n")
    key.chmod(0o644)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    host = InventoryHost("gpu001", "node", "127.0.0.1", port, "fleet", identity_file=key)
    pool = SshPool([host], known_hosts=tmp_path / "known_hosts", settings=PoolSettings(ssh_config=()))
    try:
        result = await pool.run("gpu001", command("hostname"), timeout_s=5)
    finally:
        await pool.close()
    assert result.state is HostState.AUTH_FAILED
    assert result.reason == _openssh_words(0o644, key)


@pytest.mark.timeout(120)
async def test_collect_names_the_mode_for_every_host_and_exits_non_zero(tmp_path: Path) -> None:
    import asyncio

    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory:
        key = tmp_path / "sim" / "id_ed25519"
        key.chmod(0o644)
        result = await asyncio.to_thread(
            CliRunner().invoke, main,
            ["collect", "--once", "--json", "--inventory", str(inventory), "--db", str(tmp_path / "fleet.db")])
    assert result.exit_code != 0, result.output
    hosts = json.loads(result.stdout)["hosts"]
    assert hosts and {entry["state"] for entry in hosts.values()} == {"auth_failed"}
    assert all(entry["reason"].startswith(_openssh_words(0o644, key)) for entry in hosts.values()), hosts
    assert "are too open" in result.stderr
