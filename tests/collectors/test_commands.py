"""Commands: allow-listed tools, every argument quoted, hostile text never reaches a shell as code."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from fleet.collectors.commands import Command, CommandError, Glob, agent_command, command, sequence

HOSTILE = ["eth0; rm -rf /", "$(reboot)", "`id`", "a'b\"c", "x && touch pwned", "-rf", "a\nb", "|cat /etc/shadow", "*"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_argument_is_one_literal_word(name: str) -> None:
    built = command("ethtool", "-S", name)
    assert shlex.split(built.text) == ["ethtool", "-S", name]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_argument_never_runs_in_a_real_shell(name: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    built = sequence(command("cat", "--", name), command("grep", "-H", f"x; touch {marker}", "/dev/null"))
    completed = subprocess.run(["sh", "-c", built.text], cwd=tmp_path, capture_output=True, text=True, timeout=10)
    assert not marker.exists()
    assert completed.returncode != 0  # the odd file names simply do not exist


def test_tools_outside_the_allow_list_are_refused() -> None:
    with pytest.raises(CommandError, match="allow-list"):
        command("rm", "-rf", "/")
    with pytest.raises(CommandError, match="allow-list"):
        command("ethtool; reboot")
    with pytest.raises(CommandError, match="allow-list"):
        command("python3", "-c", "import os")  # only the agent, through agent_command


def test_command_cannot_be_built_directly() -> None:
    with pytest.raises(CommandError):
        Command((("reboot",),))


def test_glob_is_left_for_the_shell_but_only_safe_characters() -> None:
    built = command("grep", "-H", ".", Glob("/sys/class/infiniband/*/ports/*/counters/*"))
    assert built.text == "grep -H . /sys/class/infiniband/*/ports/*/counters/*"
    for bad in ("/sys/$(reboot)/*", "/sys/*; rm", "/sys/{a,b}", "-r"):
        with pytest.raises(CommandError):
            Glob(bad)


def test_nul_byte_refused() -> None:
    with pytest.raises(CommandError, match="NUL"):
        command("cat", "a\x00b")


def test_sequence_and_agent_command() -> None:
    both = sequence(command("ibstat"), command("ethtool", "-S", "ens1np0"))
    assert both.text == "ibstat; ethtool -S ens1np0"
    assert both.tools == ("ibstat", "ethtool")
    source = "import sys\nprint('it''s')\n"
    agent = agent_command(source, 1.0, sysfs="/sys", optics_every=30)
    assert shlex.split(agent.text) == ["python3", "-u", "-c", source, "--interval", "1", "--sysfs", "/sys", "--optics-every", "30"]
    changed = agent_command(source, 1.0, full_every=60, optics_readings=True)
    assert shlex.split(changed.text)[4:] == ["--interval", "1", "--optics-readings", "--changed-only", "--full-every",
                                             "60"]
