"""Inventory loading: hostlists, defaults, relative paths, and errors that name file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.collectors.inventory import (
    CablingRow,
    InventoryError,
    default_inventory_path,
    load_inventory,
)

EXAMPLE = """\
# a small fleet
[defaults]
user = "fleet"
port = 2222
identity_file = "id_ed25519"
known_hosts = "known_hosts"
mode = "agent"
interval = 2

[[nodes]]
names = "gpu[001-003]"

[[nodes]]
names = "gpu004"
address = "127.0.0.14"
port = 22
mode = "commands"

[[switches]]
names = "leaf[01-02]"
os = "sonic"
role = "leaf"

[[switches]]
names = "spine01"
role = "spine"
address = "10.0.0.1"

[slurm]
host = "head01"
address = "127.0.0.200"

[cabling]
plan = "cabling.csv"
"""


def write(tmp_path: Path, text: str, cabling: str | None = "node,nic,switch,port\ngpu001,mlx5_0,leaf01,swp1\n") -> Path:
    path = tmp_path / "inventory.toml"
    path.write_text(text)
    if cabling is not None:
        (tmp_path / "cabling.csv").write_text(cabling)
    return path


def test_example_loads(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, EXAMPLE))
    assert [host.name for host in inventory.nodes] == ["gpu001", "gpu002", "gpu003", "gpu004"]
    gpu001, gpu004 = inventory.host("gpu001"), inventory.host("gpu004")
    assert (gpu001.address, gpu001.port, gpu001.user, gpu001.mode, gpu001.role) == ("", 2222, "fleet", "agent", "node")
    assert gpu001.identity_file == tmp_path / "id_ed25519"
    assert gpu001.connect_address == "gpu001"
    assert (gpu004.address, gpu004.port, gpu004.mode) == ("127.0.0.14", 22, "commands")
    leaf = inventory.host("leaf02")
    assert (leaf.role, leaf.os, leaf.mode) == ("leaf", "sonic", "commands")
    assert inventory.host("spine01").os == "cumulus"
    assert inventory.head is not None and inventory.head.address == "127.0.0.200"
    assert inventory.known_hosts == tmp_path / "known_hosts"
    assert inventory.interval_s == 2.0
    assert inventory.cabling == (CablingRow("gpu001", "mlx5_0", "leaf01", "swp1"),)
    assert len(inventory.switches) == 3


def test_minimal_inventory_uses_openssh_defaults(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, '[[nodes]]\nnames = "n1,n2"\n', None))
    host = inventory.host("n2")
    assert (host.port, host.user, host.identity_file, host.mode) == (None, None, None, "agent")
    assert inventory.known_hosts is None and inventory.interval_s == 1.0 and inventory.cabling == ()


@pytest.mark.parametrize(
    ("text", "line", "key", "words"),
    [
        ('[defaults]\nuser = "a"\nadress = "x"\n', 3, "defaults.adress", "unknown key"),
        ('[[nodes]]\nnames = "a"\n[[nodes]]\nnames = "gpu[1-2]"\naddress = "10.0.0.1"\n', 5, "nodes[1].address", "one host"),
        ('[[nodes]]\nnames = "gpu[001-"\n', 2, "nodes[0].names", "bad hostlist"),
        ('[[nodes]]\nnames = "a"\n\n[[nodes]]\n# again\nnames = "b,a"\n', 6, "nodes[1].names", "already defined on line 2"),
        ('[[switches]]\nnames = "leaf01"\nos = "eos"\nrole = "leaf"\n', 3, "switches[0].os", "cumulus, sonic"),
        ('[[switches]]\nnames = "leaf01"\n', 1, "switches[0].role", "missing"),
        ('[defaults]\nport = 70000\n', 2, "defaults.port", "1-65535"),
        ('[defaults]\nmode = "ssh"\n', 2, "defaults.mode", "agent, commands"),
        ('[defaults]\ninterval = 0\n', 2, "defaults.interval", "positive"),
        ('[nodez]\nx = 1\n', 1, "nodez", "unknown table"),
        ('[slurm]\nhost = "head[01-02]"\n', 2, "slurm.host", "exactly one"),
        ('[[nodes]]\nnames = """\nport = 1\n"""\nprt = 3\n', 5, "nodes[0].prt", "unknown key"),
        ('[[nodes]]\nnames = "-oProxyCommand=x"\n', 2, "nodes[0].names", "not a usable host name"),
        ('[cabling]\nplan = "missing.csv"\n', 2, "cabling.plan", "cannot read"),
        ('# inline\n\nnodes = [{names = "a", port = "22"}]\n', 3, "nodes[0].port", "1-65535"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path: Path, text: str, line: int, key: str, words: str) -> None:
    path = write(tmp_path, text, None)
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    error = caught.value
    assert (error.path, error.line, error.key) == (path, line, key)
    assert words in error.problem
    assert str(error).startswith(f"{path}:{line}: {key}: ")


def test_toml_syntax_error_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[defaults]\nuser = "a"\nport = = 3\n', None)
    with pytest.raises(InventoryError, match=r"inventory.toml:3: TOML syntax"):
        load_inventory(path)


def test_cabling_errors_name_the_csv_line(tmp_path: Path) -> None:
    path = write(tmp_path, '[cabling]\nplan = "cabling.csv"\n', "gpu001,mlx5_0,leaf01,swp1\ngpu002,mlx5_0,leaf01\n")
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    assert (caught.value.path, caught.value.line) == (tmp_path / "cabling.csv", 2)


def test_default_path_follows_xdg(tmp_path: Path) -> None:
    assert default_inventory_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "fleet" / "inventory.toml"
    assert default_inventory_path({"HOME": "/home/x"}) == Path("/home/x/.config/fleet/inventory.toml")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="cannot read the inventory"):
        load_inventory(tmp_path / "nope.toml")


def test_the_documented_example_loads(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "inventory.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "ssh_config").write_text("Host bastion\n  User ops\n")  # the file it names must exist
    inventory = load_inventory(write(tmp_path, example))
    assert len(inventory.nodes) == 129 and len(inventory.switches) == 20
    assert inventory.host("gpu129").mode == "commands" and inventory.host("gpu001").jump_host == "ops@bastion:22"
    assert inventory.host("spine04").os == "sonic"
