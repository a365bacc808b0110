"""Every command follows the one table of docs/exit-codes.md; failures name their cause in one line.

The walk goes over every command the CLI offers (``SUBCOMMANDS`` and their
subcommands), so a new command that takes ``--inventory`` or ``--db`` is
checked without anyone remembering to add it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from helpers.sim_subprocess import sim_process
from helpers.simfleet import running_fleet, small_scenario

from fleet.console.cli import SUBCOMMANDS, main
from fleet.console.cli.exit_codes import ExitCode

DOC = Path(__file__).parents[2] / "docs" / "exit-codes.md"
CRITERIA = Path(__file__).parents[2] / "docs" / "acceptance-criteria.example.toml"

INVENTORY_COMMANDS: dict[str, list[str]] = {
    "accept": ["accept", "--criteria", str(CRITERIA)],
    "allreduce": ["allreduce"],
    "alltoall": ["alltoall"],
    "audit": ["audit"],
    "baseline take": ["baseline", "take"],
    "bw": ["bw", "gpu001", "gpu002"],
    "check": ["check"],
    "check fix": ["check", "fix", "--yes"],
    "collect": ["collect", "--once"],
    "console": ["console"],
    "diagnose": ["diagnose", "--collect", "1"],
    "drain": ["drain", "gpu001", "--reason", "link flapping on mlx5_1", "--yes"],
    "ecmp apply": ["ecmp", "apply", "--leaf", "leaf01", "--yes"],
    "ecmp plan": ["ecmp", "plan"],
    "ecmp status": ["ecmp", "status"],
    "ep-bench": ["ep-bench"],
    "export": ["export", "--collect", "--listen", "127.0.0.1:0"],
    "lat": ["lat", "gpu001", "gpu002"],
    "linktest": ["linktest"],
    "resume": ["resume", "gpu001", "--yes"],
}
"""Every command that takes --inventory, with the arguments it needs to get as far as reading it."""

HISTORY_COMMANDS: dict[str, list[str]] = {
    "audit": ["audit"],
    "audit verify": ["audit", "verify"],
    "baseline diff": ["baseline", "diff", "1", "2"],
    "baseline list": ["baseline", "list"],
    "db info": ["db", "info"],
    "db vacuum": ["db", "vacuum"],
    "diagnose": ["diagnose"],
    "export": ["export", "--listen", "127.0.0.1:0"],
}
"""Commands that read a history given with --db, with their arguments."""


def _commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(main)

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # `fleet audit` lists, `fleet audit verify` checks
                yield path, command
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, f"{path} {name}")
        else:
            yield path, command

    for name in SUBCOMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None, name
        yield from walk(command, name)


def _invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def test_the_table_is_the_code_s_and_names_every_command() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {int(code)} | `{code.name}` |" in doc, code
    for path, _command in _commands():
        top = path.split()[0]
        assert f"`{path}`" in doc or f"`{top}`" in doc or f"`{top} ...`" in doc, f"{path} missing from {DOC.name}"


def test_every_command_that_takes_an_inventory_is_walked() -> None:
    taking = {path for path, command in _commands() if any("inventory" in (p.name or "") for p in command.params)}
    assert taking == set(INVENTORY_COMMANDS)


@pytest.mark.parametrize("name", sorted(INVENTORY_COMMANDS))
def test_a_bad_inventory_is_2_in_one_line(tmp_path: Path, name: str) -> None:
    inventory = tmp_path / "inventory.toml"
    inventory.write_text('[[nodes]]\nnames = "gpu`reboot`"\n')
    result = _invoke(*INVENTORY_COMMANDS[name], "--inventory", str(inventory), "--db", str(tmp_path / "f.db"),
                     env={"XDG_CONFIG_HOME": str(tmp_path)})
    if name == "audit":  # the audit needs only the store: the inventory is accepted and not read
        assert result.exit_code == ExitCode.NO_DATA, result.output
        return
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"{inventory}:2: nodes[0].names:" in result.stderr
    if name != "console":  # click's own usage errors add a Usage line
        assert result.stderr.count("\n") == 1 and result.stdout == "", result.output


def _foreign_files(tmp_path: Path) -> dict[str, Path]:
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.commit()
    conn.close()
    return {"text": text, "sqlite of another program": other}


@pytest.mark.parametrize("name", sorted(HISTORY_COMMANDS))
def test_a_file_that_is_not_a_history_is_2_in_one_line(tmp_path: Path, name: str) -> None:
    for form, path in _foreign_files(tmp_path).items():
        before = path.read_bytes()
        result = _invoke(*HISTORY_COMMANDS[name], "--db", str(path))
        assert result.exit_code == ExitCode.USAGE, (form, result.output)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.output, (form, result.output)
        assert str(path) in result.stderr and ("not an SQLite database" in result.stderr
                                               or "another program" in result.stderr), result.stderr
        assert path.read_bytes() == before  # nothing added to someone else's file


@pytest.mark.parametrize("name", ["audit", "audit verify", "db info", "db vacuum", "export"])
def test_a_missing_history_is_3_in_one_line(tmp_path: Path, name: str) -> None:
    result = _invoke(*HISTORY_COMMANDS[name], "--db", str(tmp_path / "none.db"))
    assert result.exit_code == ExitCode.NO_DATA, result.output
    assert result.stderr.count("\n") == 1 and "none.db" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_writers_refuse_another_program_s_database_too(tmp_path: Path) -> None:
    other = _foreign_files(tmp_path)["sqlite of another program"]
    inventory = tmp_path / "inventory.toml"
    inventory.write_text('[[nodes]]\nnames = "gpu001"\naddress = "127.0.0.1"\nport = 9\n')
    result = _invoke("collect", "--once", "--inventory", str(inventory), "--db", str(other))
    assert result.exit_code == ExitCode.USAGE and "another program (tables: invoices)" in result.stderr
    conn = sqlite3.connect(other)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["invoices"]
    conn.close()


@pytest.mark.parametrize("command", [["ecmp", "status"], ["ecmp", "plan"], ["ecmp", "apply", "--leaf", "leaf01",
                                                                             "--yes"]])
def test_ecmp_without_a_leaf_says_so_at_once(tmp_path: Path, command: list[str]) -> None:
    """Nothing listens at the node's address: the command must not collect before it looks at the inventory."""
    inventory = tmp_path / "inventory.toml"
    inventory.write_text('[[nodes]]\nnames = "gpu001"\naddress = "127.0.0.1"\nport = 9\n\n'
                         '[[switches]]\nnames = "spine01"\nrole = "spine"\naddress = "127.0.0.1"\nport = 9\n')
    result = _invoke(*command, "--inventory", str(inventory), "--db", str(tmp_path / "f.db"),
                     env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.exit_code == ExitCode.USAGE, result.output
    assert result.stderr == (f"fleet: {inventory} names only spines (1): fleet {' '.join(command[:2])} needs at "
                             'least one leaf ([[switches]] role = "leaf")\n')
    assert not (tmp_path / "f.db").exists()


@pytest.mark.timeout(120)
async def test_collect_once_with_every_host_key_changed_is_3_and_blames_known_hosts(tmp_path: Path) -> None:
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory:
        known_hosts = tmp_path / "sim" / "known_hosts"
        other = tmp_path / "other_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=30)
        key = " ".join(other.with_suffix(".pub").read_text().split()[:2])
        lines = known_hosts.read_text().splitlines()
        known_hosts.write_text("".join(f"{line.split()[0]} {key}\n" for line in lines))
        result = await asyncio.to_thread(
            _invoke, "collect", "--once", "--inventory", str(inventory), "--db", str(tmp_path / "f.db"))
    hosts = len(lines)
    assert result.exit_code == ExitCode.NO_DATA, result.output
    assert result.stderr.splitlines() == [
        f"fleet: {hosts} host_key_mismatch: known_hosts holds other keys: host key CHANGED: refused before "
        "authentication; check for a reinstall or an impostor (gpu[001-008],head01,leaf[01-16],spine[01-02])",
        f"fleet: no host answered: all {hosts} failed",
    ]
    assert result.stdout.startswith(f"0 hosts ok, failed: {hosts} host_key_mismatch; 0 samples stored")


LINK_DOWN = """\
[fabric]
nodes = 4
nodes_per_leaf = 2
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 1

[[faults]]
kind = "link_down"
target = "gpu003:mlx5_0"
at = 0
"""


@pytest.mark.timeout(120)
def test_linktest_with_bad_pairs_is_1_and_names_the_suspect(tmp_path: Path) -> None:
    with sim_process(tmp_path, LINK_DOWN, timeout_s=60) as sim:
        result = _invoke("linktest", "--rails", "0", "--inventory", str(sim.inventory), "--db", str(tmp_path / "f.db"))
    assert result.exit_code == ExitCode.FAILED, result.output
    assert result.stderr.startswith("fleet: link test found ") and "bad pair(s)" in result.stderr
    assert "suspects: nic gpu003:mlx5_0" in result.stderr and result.stderr.count("\n") == 1
