"""Inventory names OpenSSH would refuse are refused at load, with FILE:LINE, the key and the reason.

Each hostile form is written the way a TOML file can carry it (escapes for
control characters and NUL); the error must point at the line of the key that
holds it, so the engineer fixes the right entry.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fleet.collectors.inventory import InventoryError, load_inventory
from fleet.collectors.ssh_names import hostname_problem, jump_host_problem, username_problem
from fleet.console.cli import main

HOSTILE_NAMES = {
    "command substitution": "gpu$(reboot)",
    "backticks": "gpu`id`",
    "escape sequence": "gpu\\u001b[2J",
    "NUL": "gpu\\u0000x",
    "newline": "gpu\\nProxyCommand x",
    "tab": "gpu\\t01",
    "space": "gpu 01",
    "leading dash": "-oProxyCommand=sh",
    "semicolon": "gpu;reboot",
    "pipe": "gpu|sh",
    "ampersand": "gpu&",
    "redirect": "gpu>x",
    "quote": "gpu'x",
    "double quote": 'gpu\\"x',
    "backslash": "gpu\\\\x",
    "braces": "gpu{a}",
    "user inside": "root@gpu01",
    "path": "../gpu01",
    "C1 control": "gpu\\u009b2J",
    "right-to-left override": "gpu\\u202e10",
    "line separator": "gpu\\u2028x",
}


@pytest.mark.parametrize("form", sorted(HOSTILE_NAMES))
def test_each_hostile_node_name_is_refused_at_its_line(tmp_path: Path, form: str) -> None:
    path = tmp_path / "inventory.toml"
    path.write_text(f'[defaults]\nuser = "fleet"\n\n[[nodes]]\nnames = "gpu001"\n\n[[nodes]]\n'
                    f'names = "{HOSTILE_NAMES[form]}"\n')
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    error = caught.value
    assert (error.path, error.line, error.key) == (path, 8, "nodes[1].names"), str(error)
    assert str(error).startswith(f"{path}:8: nodes[1].names: ")
    assert "\n" not in str(error) and "\x1b" not in str(error) and "\x00" not in str(error)


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ('[[switches]]\nnames = "leaf$(id)"\nrole = "leaf"\n', 2, "switches[0].names"),
        ('[[nodes]]\nnames = "gpu01"\naddress = "10.0.0.1;reboot"\n', 3, "nodes[0].address"),
        ('[[nodes]]\nnames = "gpu01"\naddress = "-oProxyCommand=x"\n', 3, "nodes[0].address"),
        ('[[switches]]\nnames = "spine01"\nrole = "spine"\naddress = "`x`"\n', 4, "switches[0].address"),
        ('[slurm]\nhost = "head`id`"\n', 2, "slurm.host"),
        ('[slurm]\nhost = "head01"\naddress = "a b"\n', 3, "slurm.address"),
        ('[defaults]\nuser = "-oProxyCommand=x"\n', 2, "defaults.user"),
        ('[defaults]\n\nuser = "fleet\\u001b]0;owned\\u0007"\n', 3, "defaults.user"),
        ('[defaults]\nuser = "a|b"\n', 2, "defaults.user"),
        ('[defaults]\njump_host = "ops@bastion$(id)"\n', 2, "defaults.jump_host"),
        ('[defaults]\njump_host = "o;ps@bastion"\n', 2, "defaults.jump_host"),
        ('[defaults]\njump_host = "bastion:22x"\n', 2, "defaults.jump_host"),
    ],
)
def test_addresses_users_and_jump_hosts_are_checked_too(tmp_path: Path, text: str, line: int, key: str) -> None:
    path = tmp_path / "inventory.toml"
    path.write_text(text)
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    assert (caught.value.line, caught.value.key) == (line, key), str(caught.value)
    assert "usable" in caught.value.problem


def test_ordinary_names_still_load(tmp_path: Path) -> None:
    path = tmp_path / "inventory.toml"
    path.write_text('[defaults]\nuser = "svc.fleet_1"\njump_host = "ops@bastion-1.example.net:2222"\n\n'
                    '[[nodes]]\nnames = "rack[1-2]-gpu[001-002]"\n\n[[nodes]]\nnames = "gpu9"\naddress = "fe80::1"\n\n'
                    '[[switches]]\nnames = "leaf01.dc_a"\nrole = "leaf"\naddress = "10.0.0.1"\n')
    inventory = load_inventory(path)
    assert [h.name for h in inventory.nodes] == ["rack1-gpu001", "rack1-gpu002", "rack2-gpu001", "rack2-gpu002",
                                                 "gpu9"]


def test_the_rules_are_openssh_s() -> None:
    """Every character OpenSSH's valid_hostname() / valid_ruser() refuse is refused; ordinary ones are not."""
    for char in "'`\"$\\;&<>|(){},":
        assert hostname_problem(f"a{char}b") is not None, char
    for char in "'`\";&<>|(){}":
        assert username_problem(f"a{char}b") is not None, char
    assert username_problem("a\\") is not None and username_problem("a\\b") is None  # a trailing backslash only
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]:
        assert hostname_problem(f"a{chr(code)}b") is not None and username_problem(f"a{chr(code)}b") is not None
    for good in ("gpu001", "10.1.0.7", "fe80::1", "leaf-01.dc_a.example.net", "GPU_7"):
        assert hostname_problem(good) is None, good
    assert jump_host_problem("ops@bastion:22") is None and jump_host_problem("bastion") is None


def test_the_cli_says_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "inventory.toml"
    path.write_text('[[nodes]]\nnames = "gpu$(touch pwned)"\n')
    result = CliRunner().invoke(main, ["collect", "--once", "--inventory", str(path), "--db", str(tmp_path / "f.db")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and f"{path}:2: nodes[0].names:" in result.stderr
    assert not (tmp_path / "pwned").exists()
