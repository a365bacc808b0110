"""NCCL's INFO/WARN lines interleaved with nccl-tests output: the real all-to-all capture, other forms, hostile input."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.collectors.parsers.nccl import parse_nccl
from fleet.collectors.parsers.nccl_log import NcclComm, NcclNetDevice, parse_nccl_log
from fleet.collectors.parsers.registry import detect

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl"
ALLTOALL = FIXTURES / "nccl-tests-issue321-2node-h20-vm-alltoall_perf-roce-bond-rdma-plugin.txt"


def test_the_alltoall_capture_table_reads_through_the_interleaved_info_lines() -> None:
    text = ALLTOALL.read_text()
    table = parse_nccl(text)
    assert table.problems == () and table.unknown_lines == 0 and table.errors == ()
    assert len(table.rows) == 13 and table.nccl_log_lines == 230
    first, last = table.rows[0], table.rows[-1]
    assert (first.size_bytes, first.redop, first.root, first.oop_busbw_gbytes_s) == (1048576, "none", -1, 14.85)
    assert (last.size_bytes, last.oop_time_usec, last.oop_algbw_gbytes_s, last.oop_busbw_gbytes_s) == (
        4294967296, 64101.0, 67.0, 50.25)
    assert last.oop_wrong == 0 and last.ip_wrong is None  # in-place all-to-all is not validated: N/A
    assert [r.host for r in table.ranks] == ["vm-host40", "vm-host40", "vm-host38", "vm-host38"]
    assert detect(text) == "nccl"


def test_the_alltoall_capture_log_names_nics_network_and_settings() -> None:
    log = parse_nccl_log(ALLTOALL.read_text())
    assert log.problems == () and log.warnings == ()
    assert log.version == "2.26.5+cuda12.2" and log.info_lines == 230 and log.inits_complete == 4
    assert [n.host for n in log.nets] == ["vm-host40", "vm-host38"]
    net = log.nets[0]
    assert net.transport == "IB" and net.relaxed_ordering
    assert net.devices == (NcclNetDevice(0, "mlx5_bond_6", 1, "RoCE"), NcclNetDevice(1, "mlx5_bond_7", 1, "RoCE"))
    assert dict(log.networks) == {"vm-host40": "NCCL RDMA Plugin v6", "vm-host38": "NCCL RDMA Plugin v6"}
    assert NcclComm("vm-host38", 3, 4, 2, 2) in log.comms and len(log.comms) == 4
    env = dict(log.env)
    assert env["NCCL_IB_QPS_PER_CONNECTION"] == "4" and env["NCCL_IB_TC"] == "160" and env["NCCL_PXN_DISABLE"] == "0"
    assert dict(log.channels) == {"NET": 32, "P2P": 8}
    assert log.other_lines == 24  # the test's own lines: header, ranks, table


def test_socket_fallback_timestamped_warnings_and_ib_devices() -> None:
    text = (
        "node1:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
        "node1:100:100 [0] NCCL INFO Using network Socket\n"
        "[2026-01-02 03:04:05] node1:100:120 [0] NCCL WARN NET/IB : No device found.\n"
        "node2:7:7 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.1.0.2<0>\n"
        "node2:7:7 [3] NCCL INFO comm 0x1 rank 9 nRanks 4 nNodes 2 localRanks 2 localRank 1 MNNVL 0\n"
    )
    log = parse_nccl_log(text)
    assert [(n.host, n.transport) for n in log.nets] == [("node1", "Socket"), ("node2", "IB")]
    assert log.nets[0].devices[0].name == "eth0" and log.nets[1].devices[1] == NcclNetDevice(1, "mlx5_1", 1, "IB")
    assert len(log.warnings) == 1 and "No device found" in log.warnings[0]
    assert log.comms == () and "outside its communicator" in log.problems[0].reason


@pytest.mark.parametrize("text", ["", "\x00\x1b[31m" * 100, "a:1:1 [0] NCCL INFO " + "x" * 1_000_000,
                                  "h:1:2 [0] NCCL INFO NET/IB : Using " + "[0]a:1/RoCE " * 100_000,
                                  "h:1:2 [0] NCCL INFO comm 0x1 rank 99999999999 nRanks 1"])
def test_hostile_input_never_raises(text: str) -> None:
    log = parse_nccl_log(text)
    assert isinstance(log.problems, tuple)
    assert all(len(n.devices) <= 4096 for n in log.nets)
