"""The node agent sends each netdev's ``/sys/class/net/<netdev>/carrier_changes`` among its ``ethtool``
counters (docs/agent-schema.md), and the collector keeps it under the netdev's RDMA device and port.

Run as a real subprocess on the fixture tree of agent_harness, with the file written where the kernel
has it (Documentation/ABI/testing/sysfs-class-net); hostile contents send nothing and change nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_harness import build_sysfs, run_agent

from fleet.collectors.agent_reader import (
    ETHTOOL_COUNTERS,
    AgentStream,
    decode_agent_line,
    host_sample,
)


def with_carrier(root: Path, content: bytes | None, netdev: str = "bond0") -> Path:
    """The harness tree, with ``class/net/<netdev>/carrier_changes`` holding ``content`` (None: no file)."""
    sysfs = build_sysfs(root)
    if content is not None:
        folder = sysfs / "class" / "net" / netdev
        folder.mkdir(parents=True)
        (folder / "carrier_changes").write_bytes(content)
    return sysfs


def one_line(tmp_path: Path, content: bytes | None, *args: str) -> dict[str, Any]:
    sysfs = with_carrier(tmp_path / "sys", content)
    return run_agent(tmp_path, "--optics-every", "0", *args, sysfs=sysfs)[0]


def test_the_netdev_carrier_changes_comes_after_its_ethtool_counters(tmp_path: Path) -> None:
    without = one_line(tmp_path / "without", None)["netdevs"]["bond0"]["ethtool"]
    line = one_line(tmp_path / "with", b"7\n")
    ethtool = line["netdevs"]["bond0"]["ethtool"]
    assert "carrier_changes" not in without
    assert list(ethtool) == [*without, "carrier_changes"] and ethtool["carrier_changes"] == 7
    assert not any("carrier_changes" in error for error in line["errors"])


def test_ethtool_keep_filters_it_as_any_counter(tmp_path: Path) -> None:
    kept = one_line(tmp_path / "kept", b"7\n", "--ethtool-keep", ",".join(sorted(ETHTOOL_COUNTERS)))
    assert kept["netdevs"]["bond0"]["ethtool"]["carrier_changes"] == 7
    left_out = one_line(tmp_path / "left_out", b"7\n", "--ethtool-keep", "tx_global_pause")
    assert list(left_out["netdevs"]["bond0"]["ethtool"]) == ["tx_global_pause"]


def test_sent_also_when_ethtool_fails(tmp_path: Path) -> None:
    """A driver or node without a working ``ethtool -S`` still has the netdev's sysfs."""
    sysfs = with_carrier(tmp_path / "sys", b"4\n")
    (tmp_path / "bin").mkdir()  # an empty PATH: no ethtool, no rdma
    line = run_agent(tmp_path, "--optics-every", "0", sysfs=sysfs)[0]
    assert "ethtool: not installed" in line["errors"]
    assert line["netdevs"]["bond0"]["ethtool"] == {"carrier_changes": 4}


def test_the_collector_stores_it_under_the_rdma_device_and_port(tmp_path: Path) -> None:
    line = one_line(tmp_path, b"5\n", "--ethtool-keep", ",".join(sorted(ETHTOOL_COUNTERS)))
    sample = host_sample(decode_agent_line(json.dumps(line)), "gpu001")
    assert sample.values[("carrier_changes", "mlx5_bond_0", "1")] == 5.0
    read = AgentStream("gpu001").read(json.dumps(line))
    assert read.sample.values[("carrier_changes", "mlx5_bond_0", "1")] == 5.0


@pytest.mark.parametrize("content", [
    b"", b"\n", b"-1\n", b"3 flaps\n", b"0x10\n", b"1e3\n", b"+5\n", b"1" * 30 + b"\n",
    "\u0663\n".encode(), b"\xff\xfe\x00\n", b"7\n8\n",
])
def test_garbage_sends_nothing_and_changes_nothing_else(tmp_path: Path, content: bytes) -> None:
    """A file that holds no whole number: no key, one error naming the file, the rest of the line as without it."""
    without = one_line(tmp_path / "without", None)
    line = one_line(tmp_path / "garbage", content)
    assert "carrier_changes" not in line["netdevs"]["bond0"]["ethtool"]
    before = [error.replace(str(tmp_path / "without"), "") for error in without["errors"]]
    after = [error.replace(str(tmp_path / "garbage"), "") for error in line["errors"]]
    extra = [error for error in after if error not in before]
    assert len(extra) == 1 and extra[0].startswith("/sys/class/net/bond0/carrier_changes: not a whole number")
    assert len(after) == len(before) + 1
    for key in ("ports", "netdevs", "qp_count", "gpus", "gpu_error"):
        assert line[key] == without[key], key


def test_a_netdev_without_the_file_sends_nothing_and_reports_nothing(tmp_path: Path) -> None:
    """Kernels before 3.15 have no carrier_changes: a normal node, not a read error."""
    line = one_line(tmp_path, None)
    assert "carrier_changes" not in line["netdevs"]["bond0"]["ethtool"]
    assert not any("carrier_changes" in error or "class/net" in error for error in line["errors"])
