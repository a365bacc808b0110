"""Command mode reads each netdev's ``/sys/class/net/<netdev>/carrier_changes`` into the key the agent
sends it under (the netdev's ``ethtool`` counters), so a node without python3 shows its link flaps too.

Against a simulated node (its shell answering the tick's compound command at one instant), and against
hostile ``grep -H`` output.
"""

from __future__ import annotations

import time

import pytest
from helpers.simfleet import small_scenario

from fleet.collectors.agent_reader import ETHTOOL_COUNTERS, decode_agent_line, host_sample
from fleet.collectors.command_mode import CommandModeNode, carrier_changes, carrier_path
from fleet.simulator.agent_stream import AgentLines, AgentOptions
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell

FLAP = '[[faults]]\nkind = "link_flap"\ntarget = "gpu002:mlx5_1"\nperiod = 20\nat = 10\n'


def tick(node: CommandModeNode, shell: Shell) -> str:
    answer = shell.run_now(node.tick_command().text)
    assert answer is not None
    chunks, _ = answer
    return "".join(text for stream, text in chunks if stream == 1)


def test_command_mode_reads_what_the_agent_sends() -> None:
    model = FleetModel(small_scenario(FLAP), start_unix=1_764_430_000.0)
    node = CommandModeNode("gpu002")
    shell = Shell(Machine("gpu002", "node", model, Rendezvous()))
    model.now = lambda: 5.0  # type: ignore[method-assign]
    node.read(tick(node, shell), time.time())  # the first tick learns the netdevs
    for t in (12.0, 37.0):  # in the first flap's down window; up again after the second
        model.now = lambda t=t: t  # type: ignore[method-assign]
        line = node.read(tick(node, shell), model.unix(t))
        assert not [problem for problem in line.errors if "carrier" in problem]
        agent = decode_agent_line(AgentLines(model, "gpu002", AgentOptions(ethtool_keep=ETHTOOL_COUNTERS))
                                  .line(model.node_parts("gpu002", t), model.unix(t), 1))
        for name, netdev in line.netdevs.items():
            assert list(netdev.ethtool)[-1] == "carrier_changes"  # after the ethtool -S counters, as the agent
            assert netdev.ethtool["carrier_changes"] == agent.netdevs[name].ethtool["carrier_changes"]
        commands, streamed = host_sample(line, "gpu002"), host_sample(agent, "gpu002")
        assert {key: value for key, value in commands.values.items() if key[0] == "carrier_changes"} == \
            {key: value for key, value in streamed.values.items() if key[0] == "carrier_changes"}
    assert commands.values[("carrier_changes", "mlx5_1", "1")] == 5.0  # up once, then two flaps
    assert commands.values[("carrier_changes", "mlx5_0", "1")] == 1.0


def test_the_tick_asks_for_the_known_netdevs_only() -> None:
    node = CommandModeNode("n1")
    assert "carrier_changes" not in node.tick_command().text  # no netdev known yet
    node.netdevs = {"mlx5_0": "ens1np0", "mlx5_1": "ens2np0", "mlx5_bond_0": "ens1np0"}
    text = node.tick_command().text
    assert "grep -H . /sys/class/net/ens1np0/carrier_changes /sys/class/net/ens2np0/carrier_changes" in text
    node.netdevs = {"mlx5_0": "eth0;reboot"}
    assert "'/sys/class/net/eth0;reboot/carrier_changes'" in node.tick_command().text  # quoted, never shell code


def test_values_of_the_asked_netdevs() -> None:
    text = (f"{carrier_path('ens1np0')}:3\n{carrier_path('ens2np0')}:18446744073709551615\n"
            f"{carrier_path('other0')}:9\n/sys/class/net/ens1np0/carrier:1\n")
    assert carrier_changes(text, ["ens1np0", "ens2np0"]) == ({"ens1np0": 3, "ens2np0": 2**64 - 1}, [])


@pytest.mark.parametrize("value", ["-1", "3 flaps", "0x10", "+5", "1" * 21, "\u0663", "\ufffd\ufffd", " 4", "1e3"])
def test_garbage_is_left_out_and_named(value: str) -> None:
    values, problems = carrier_changes(f"{carrier_path('ens1np0')}:{value}\n{carrier_path('ens2np0')}:2\n",
                                       ["ens1np0", "ens2np0"])
    assert values == {"ens2np0": 2}
    assert len(problems) == 1 and problems[0].startswith("/sys/class/net/ens1np0/carrier_changes: not a whole number")


def test_hostile_output_leaves_out_what_it_cannot_place() -> None:
    """Two lines for one file, another netdev's path, binary noise, a missing file's error: one value, one problem."""
    path = carrier_path("ens1np0")
    text = (f"{path}:7\n{path}:8\n\x00\xff garbage\n{carrier_path('ens2np0')}\n"
            f"grep: {carrier_path('ens3np0')}: No such file or directory\n{carrier_path('ens4np0')}:5\n")
    values, problems = carrier_changes(text, ["ens1np0", "ens2np0", "ens3np0", "ens4np0"])
    assert values == {"ens4np0": 5}
    assert problems == [f"{path}: not a whole number: '7\\n8'"]


def test_a_netdev_without_the_file_keeps_its_other_counters() -> None:
    """A kernel before 3.15 has no carrier_changes: grep prints only its error; the ethtool counters stay."""
    node = CommandModeNode("n1", netdevs={"mlx5_0": "ens1np0"})
    text = ("@@fleet-section:ethtool:ens1np0@@\nNIC statistics:\n     rx_prio3_pause: 4\n"
            "@@fleet-section:carrier@@\n")
    line = node.read(text, 0.0)
    assert dict(line.netdevs["ens1np0"].ethtool) == {"rx_prio3_pause": 4}
    assert not [problem for problem in line.errors if "carrier" in problem]
