"""Read-only mode on the command line: every command that puts traffic on the fabric or changes a machine
refuses with the reason before it reads the inventory, whichever way read-only was asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fleet.console.cli import main

ACTIONS = [
    ["lat", "gpu001", "gpu002"],
    ["bw", "gpu001", "gpu002"],
    ["linktest"],
    ["allreduce"],
    ["baseline", "take"],
    ["accept", "--criteria", "CRITERIA"],
    ["ecmp", "apply", "--leaf", "leaf01", "--yes"],
    ["collect", "--job-latency", "--duration", "1"],
]


def _how(tmp_path: Path, how: str) -> tuple[list[str], dict[str, str]]:
    config = tmp_path / "config"
    env = {"XDG_CONFIG_HOME": str(config), "XDG_DATA_HOME": str(tmp_path / "data")}
    if how == "flag":
        return ["--read-only"], env
    if how == "env":
        return [], env | {"FLEET_READ_ONLY": "1"}
    (config / "fleet").mkdir(parents=True)
    (config / "fleet" / "config.toml").write_text("read_only = true\n", encoding="utf-8")
    return [], env


@pytest.mark.parametrize("how", ["flag", "env", "file"])
@pytest.mark.parametrize("words", ACTIONS, ids=lambda words: " ".join(words[:2]))
def test_every_traffic_or_change_command_is_refused(tmp_path: Path, words: list[str], how: str) -> None:
    criteria = tmp_path / "criteria.toml"
    criteria.write_text('[[check]]\nkind = "cabling_matches_plan"\n', encoding="utf-8")
    extra, env = _how(tmp_path, how)
    args = [criteria.as_posix() if w == "CRITERIA" else w for w in words]
    result = CliRunner().invoke(main, [*args, "--inventory", str(tmp_path / "absent.toml"),
                                       "--db", str(tmp_path / "fleet.db"), *extra], env=env)
    assert result.exit_code == 2, result.output  # USAGE: docs/exit-codes.md
    assert "refused: read-only mode" in result.stderr
    assert "sends nothing and changes nothing" in result.stderr
    assert "no inventory" not in result.stderr  # refused before anything was read or reached
    assert not (tmp_path / "fleet.db").exists()


def test_reading_commands_still_run_in_read_only_mode(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["baseline", "list", "--db", str(tmp_path / "fleet.db")],
                                env={"FLEET_READ_ONLY": "1", "XDG_CONFIG_HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output
