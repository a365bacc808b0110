"""Command mode reads each netdev's ``/sys/class/net/<netdev>/carrier_changes`` into the key the agent
sends it under (the netdev's ``ethtool`` counters), so a node without python3 shows its link flaps too.

Against hostile ``grep -H`` output.
"""

from __future__ import annotations

import pytest

from fleet.collectors.command_mode import CommandModeNode, carrier_changes, carrier_path


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
