"""OpenSSH client config, read by asyncssh, against the system's real sshd used as its own bastion.

Nodes named only by the inventory (no address, port, user or key there) are reached through Host
patterns, HostName, Port, User and IdentityFile, behind a ProxyJump: the inventory's own config file
(``ssh_config``, as ``ssh -F``) or ``~/.ssh/config``. The bastion is the same sshd, so each node's
connection is tunnelled through it; its log says how many logins there were.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.real_sshd import RealSshd

from fleet.collectors.commands import command
from fleet.collectors.inventory import InventoryError, load_inventory
from fleet.collectors.sshpool import SshPool
from fleet.fabric.states import HostState

NODES = ("gpu001", "gpu002")


def _config(sshd: RealSshd) -> str:
    login = f"  HostName {sshd.address}\n  Port {sshd.port}\n  User {sshd.user}\n  IdentityFile {sshd.client_key_path}\n"
    return f"Host bastion\n{login}\nHost gpu*\n{login}  ProxyJump bastion\n"


def _inventory(folder: Path, sshd: RealSshd, ssh_config: Path | None) -> Path:
    known = sshd.write_known_hosts(folder / "known_hosts")
    path = folder / "inventory.toml"
    line = f'ssh_config = "{ssh_config}"\n' if ssh_config is not None else ""
    path.write_text(f'[defaults]\nknown_hosts = "{known}"\nmode = "commands"\n{line}\n[[nodes]]\nnames = "gpu[001-002]"\n',
                    encoding="utf-8")
    return path


def _logins(sshd: RealSshd) -> int:
    return sshd.log().count("Accepted publickey for ")


async def _uname_everywhere(inventory_path: Path) -> list[str]:
    inventory = load_inventory(inventory_path)
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        results = [await pool.run(name, command("uname", "-n"), timeout_s=30) for name in NODES]
    finally:
        await pool.close()
    assert all(r.state in (HostState.OK, HostState.SLOW) for r in results), [r.reason for r in results]
    return [r.stdout.strip() for r in results]


async def test_the_inventory_names_its_config_file(real_sshd: RealSshd, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(_config(real_sshd), encoding="utf-8")
    hostnames = await _uname_everywhere(_inventory(tmp_path, real_sshd, config))
    assert len(set(hostnames)) == 1 and hostnames[0]
    assert _logins(real_sshd) == 3, "one login on the bastion, shared, then one per node through it"


async def test_the_users_own_config(real_sshd: RealSshd, tmp_path: Path, clean_home: Path) -> None:
    (clean_home / ".ssh").mkdir()
    (clean_home / ".ssh" / "config").write_text(_config(real_sshd), encoding="utf-8")
    await _uname_everywhere(_inventory(tmp_path, real_sshd, None))
    assert _logins(real_sshd) == 3


async def test_a_jump_host_that_refuses_names_itself(real_sshd: RealSshd, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(_config(real_sshd).replace(f"Host bastion\n  HostName {real_sshd.address}\n  Port {real_sshd.port}",
                                                 f"Host bastion\n  HostName {real_sshd.address}\n  Port 1"),
                      encoding="utf-8")
    inventory = load_inventory(_inventory(tmp_path, real_sshd, config))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        result = await pool.run("gpu001", command("uname", "-n"), timeout_s=30)
    finally:
        await pool.close()
    assert (result.state, result.reason) == (HostState.UNREACHABLE, "jump host bastion: connection refused")


def test_a_missing_config_file_is_an_inventory_error(tmp_path: Path) -> None:
    path = tmp_path / "inventory.toml"
    path.write_text('[defaults]\nssh_config = "nope"\n', encoding="utf-8")
    with pytest.raises(InventoryError, match=r"inventory.toml:2: defaults.ssh_config: .*nope is not a readable file"):
        load_inventory(path)
