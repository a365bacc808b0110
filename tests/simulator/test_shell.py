"""The simulated shell: splitting, dispatch, redirections, and dash's answer to unknown commands."""

from __future__ import annotations

import pytest
from sim_helpers import small_model

from fleet.collectors.parsers.ibstat import parse_ibstat
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, parse_line, run_collect


@pytest.fixture(scope="module")
def model() -> FleetModel:
    return small_model()


def shell(model: FleetModel, host: str) -> Shell:
    return Shell(Machine(host, model.topology.role_of(host), model, Rendezvous()))


async def test_unknown_command_is_127_with_dashs_message(model: FleetModel) -> None:
    out, err, status = await run_collect(shell(model, "gpu001"), "frobnicate --all")
    assert (out, err, status) == ("", "sh: 1: frobnicate: not found\n", 127)


async def test_sequence_runs_every_command_and_returns_the_last_status(model: FleetModel) -> None:
    out, err, status = await run_collect(shell(model, "gpu001"), "hostname; nosuch; echo done")
    assert out == "gpu001\ndone\n"
    assert err == "sh: 1: nosuch: not found\n"
    assert status == 0


async def test_and_or_and_last_status(model: FleetModel) -> None:
    sh = shell(model, "gpu001")
    assert (await run_collect(sh, "false && echo no || echo yes"))[0] == "yes\n"
    assert (await run_collect(sh, "nosuch; echo $?"))[0] == "127\n"
    assert (await run_collect(sh, "true && echo a; exit 3; echo b")) == ("a\n", "", 3)


async def test_redirections(model: FleetModel) -> None:
    sh = shell(model, "gpu001")
    assert await run_collect(sh, "nosuch 2>/dev/null") == ("", "", 127)
    assert await run_collect(sh, "nosuch 2>&1") == ("sh: 1: nosuch: not found\n", "", 127)
    assert await run_collect(sh, "hostname >/dev/null") == ("", "", 0)
    assert await run_collect(sh, "echo x >&2") == ("", "x\n", 0)
    assert await run_collect(sh, "echo x >&1") == ("x\n", "", 0)
    _out, err, status = await run_collect(sh, "hostname > /tmp/x")
    assert status == 2 and "cannot create /tmp/x" in err


async def test_quotes_and_env_prefixes(model: FleetModel) -> None:
    out, _, status = await run_collect(shell(model, "gpu001"), "LC_ALL=C echo 'a;b'  \"c d\"")
    assert (out, status) == ("a;b c d\n", 0)


async def test_pipes_into_text_filters(model: FleetModel) -> None:
    sh = shell(model, "gpu001")
    out, _, status = await run_collect(sh, "ethtool -S enp12s0np0 | grep -E 'prio3_pause(_duration)?:' | head -n 2")
    assert status == 0 and out.splitlines()[0].strip().startswith("rx_prio3_pause:")
    assert len(out.splitlines()) == 2
    assert await run_collect(sh, "ibstat | grep -c 'State: Active'") == ("8\n", "", 0)
    assert (await run_collect(sh, "hostname | grep nomatch"))[2] == 1
    assert await run_collect(sh, "echo b a | wc -w") == ("2\n", "", 0)
    assert (await run_collect(sh, "hostname | nosuch"))[2] == 127
    assert (await run_collect(sh, "hostname | true & x"))[2] == 2
    assert parse_line("echo 'unterminated").error.startswith("sh: 1: Syntax error")
    assert parse_line("| grep x").error


async def test_commands_follow_the_machine_role(model: FleetModel) -> None:
    assert (await run_collect(shell(model, "leaf01"), "ibstat"))[2] == 127
    assert (await run_collect(shell(model, "leaf01"), "show interfaces counters"))[2] == 127  # Cumulus
    assert (await run_collect(shell(model, "leaf09"), "nv show interface"))[2] == 127  # SONiC
    assert (await run_collect(shell(model, "head01"), "nvidia-smi"))[2] == 127
    assert (await run_collect(shell(model, "gpu001"), "perfquery -x"))[2] == 127  # RoCE: no IB diags
    assert (await run_collect(shell(small_model(link_layer="ib"), "gpu001"), "perfquery -x"))[2] == 0
    out, _, status = await run_collect(shell(model, "head01"), "scontrol show hostnames gpu[001-003]")
    assert (out, status) == ("gpu001\ngpu002\ngpu003\n", 0)


async def test_command_v_and_timeout(model: FleetModel) -> None:
    sh = shell(model, "gpu001")
    assert await run_collect(sh, "command -v python3") == ("/usr/bin/python3\n", "", 0)
    assert (await run_collect(sh, "command -v nv"))[2] == 127
    assert (await run_collect(sh, "timeout 5 hostname"))[0] == "gpu001\n"


async def test_ibstat_reads_like_a_real_one(model: FleetModel) -> None:
    out, _, status = await run_collect(shell(model, "gpu001"), "ibstat")
    assert status == 0
    result = parse_ibstat(out)
    assert [ca.name for ca in result.devices] == [f"mlx5_{i}" for i in range(8)]
    assert {ca.ca_type for ca in result.devices} == {"MT4129"}
    assert {port.rate_gbps for ca in result.devices for port in ca.ports} == {400}
    assert (result.problems, result.unknown_lines) == ((), 0)
