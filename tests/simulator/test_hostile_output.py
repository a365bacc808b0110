"""The simulator's hostile machines: ``hostile_output`` faults and the ``[reported]`` names.

A fault replaces exactly the commands its pattern names on exactly its target;
``[reported]`` changes what the machines say about themselves, escape sequences
and all, in every tool that prints it.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from sim_helpers import small_model

from fleet.simulator.hostile import HUGE_BYTES, LONG_LINE_BYTES, hostile_output
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import ScenarioError, parse_scenario
from fleet.simulator.session import Machine, Rendezvous, StreamIO
from fleet.simulator.shell import Shell, run_collect

LLDP_DEEP = '[[faults]]\nkind = "hostile_output"\ntarget = "gpu002"\nform = "deep_json"\ncommand = "lldpctl *"\n'


def shell(model: FleetModel, host: str) -> Shell:
    return Shell(Machine(host, model.topology.role_of(host), model, Rendezvous()))


async def test_a_fault_replaces_only_the_commands_its_pattern_names_on_its_target() -> None:
    model, base = small_model(LLDP_DEEP), small_model()
    out, _, status = await run_collect(shell(model, "gpu002"), "lldpctl -f json")
    assert (out, status) == (hostile_output("deep_json"), 0)
    for host, line in (("gpu002", "uname -r"), ("gpu003", "lldpctl -f json")):
        got, _, _ = await run_collect(shell(model, host), line)
        expected, _, _ = await run_collect(shell(base, host), line)
        assert got == expected, (host, line)


@pytest.mark.parametrize("form", ["deep_json", "wrong_table", "binary", "long_line", "huge"])
def test_each_form_is_what_it_says(form: str) -> None:
    text = hostile_output(form)
    data = text.encode("utf-8", "surrogateescape")
    if form == "deep_json":
        with pytest.raises(RecursionError):
            json.loads(text)
    elif form == "binary":
        assert set(data) == set(range(256))
        with pytest.raises(UnicodeDecodeError):
            data.decode()
    elif form == "long_line":
        assert len(data) == LONG_LINE_BYTES + 1 and data.count(b"\n") == 1
    elif form == "huge":
        assert HUGE_BYTES - 100 < len(data) <= HUGE_BYTES
    else:
        assert text.splitlines()[1] == "-" * len(text.splitlines()[0])


async def test_the_agent_under_a_fault_prints_the_form_for_each_line() -> None:
    model = small_model(LLDP_DEEP.replace("deep_json", "binary").replace("lldpctl *", "python3 *"))
    lines: list[str] = []
    two = asyncio.Event()

    def line(text: str) -> None:
        lines.append(text)
        if len(lines) == 2:
            two.set()

    io = StreamIO(line, lambda _text: None)
    agent = asyncio.ensure_future(shell(model, "gpu002").run("python3 -u -c agent --interval 0.01", io))
    await asyncio.wait_for(two.wait(), 10)
    io.stdin_eof.set()
    await asyncio.wait_for(agent, 10)
    assert lines[:2] == [hostile_output("binary")] * 2


@pytest.mark.parametrize(("fault", "problem"), [
    ('form = "nonsense"', "key 'form': must be one of deep_json, wrong_table, binary, long_line, huge"),
    ("", "key 'form': missing (required)"),
    ('form = 3', "key 'form': must be a string"),
])
def test_a_wrong_fault_names_its_line_and_key(fault: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_with(f'[[faults]]\nkind = "hostile_output"\ntarget = "gpu001"\n{fault}\n'), source="s.toml")
    assert problem in str(caught.value)
    assert str(caught.value).startswith("s.toml:")


REPORTED = """
[reported]
gpu_name = "GPU \\u001b[2J<script>"
gpu_driver = "550\\u009b31m"
nic_firmware = "28.39\\u001b]0;title\\u0007"
kernel = "5.15[bold]"
switch_system_name = "{name}\\u001b]8;;https://evil.example/\\u001b\\\\"
switch_port_description = "{port}|`x`"
node_system_name = "[link=https://evil.example/]{name}[/link]"
"""


async def test_reported_names_reach_every_tool_that_prints_them() -> None:
    model = FleetModel(parse_scenario(_with(REPORTED), source="r.toml"))
    node = shell(model, "gpu001")
    gpus, _, _ = await run_collect(node, "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader")
    assert gpus.splitlines()[0] == "GPU \x1b[2J<script>, 550\x9b31m"
    firmware, _, _ = await run_collect(node, "cat /sys/class/infiniband/mlx5_0/fw_ver")
    assert firmware == "28.39\x1b]0;title\x07\n"
    kernel, _, _ = await run_collect(node, "uname -r")
    assert kernel == "5.15[bold]\n"
    lldp = json.loads((await run_collect(node, "lldpctl -f json"))[0])
    chassis = json.dumps(lldp)
    assert "leaf01\\u001b]8;;https://evil.example/\\u001b\\\\" in chassis
    assert "swp1|`x`" in chassis
    table, _, _ = await run_collect(shell(model, "leaf01"), "nv show interface")
    assert "[link=https://evil.example/]gpu001[/link]" in table


def _with(extra: str) -> str:
    return """
[fabric]
nodes = 8
nodes_per_leaf = 4
spines = 2
""" + extra
