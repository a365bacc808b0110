"""sysfs counter dumps: grep -H lines, the === loop, show_counters, ttar; saturation."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.sysfs import parse_sysfs

FIXTURES = Path(__file__).parents[2] / "fixtures" / "sysfs"

# What command mode runs: grep -H . /sys/class/infiniband/*/ports/*/{state,phys_state,
# rate,link_layer,counters/*,hw_counters/*} (file layout as in the kernel's sysfs ABI;
# values invented, two devices).
GREP_H = """/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data:205128687774249
/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:205143497464492
/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait:4294967295
/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:0
/sys/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent:1052612505
/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence:1811101
/sys/class/infiniband/mlx5_0/ports/1/link_layer:InfiniBand
/sys/class/infiniband/mlx5_0/ports/1/phys_state:5: LinkUp
/sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)
/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE
/sys/class/infiniband/mlx5_1/ports/1/counters/port_rcv_data:17
/sys/class/infiniband/mlx5_1/ports/1/link_layer:Ethernet
/sys/class/infiniband/mlx5_1/ports/1/phys_state:3: Disabled
/sys/class/infiniband/mlx5_1/ports/1/rate:40 Gb/sec (4X QDR)
/sys/class/infiniband/mlx5_1/ports/1/state:1: DOWN
/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/0:IB/RoCE v1
/sys/class/infiniband/mlx5_1/fw_ver:22.38.1002
"""


def test_grep_h_lines_per_device_and_port() -> None:
    r = parse_sysfs(GREP_H)
    assert r.problems == () and r.unknown_lines == 0
    assert [(p.device, p.port) for p in r.ports] == [("mlx5_0", 1), ("mlx5_1", 1)]
    p0 = r.port("mlx5_0", 1)
    assert p0 is not None
    assert p0.counters == {
        "port_rcv_data": 205128687774249,
        "port_xmit_data": 205143497464492,
        "port_xmit_wait": 4294967295,
        "symbol_error": 0,
    }
    assert p0.hw_counters == {"np_cnp_sent": 1052612505, "out_of_sequence": 1811101}
    assert (p0.state_code, p0.state, p0.phys_state_code, p0.phys_state) == (4, "ACTIVE", 5, "LinkUp")
    assert (p0.rate_gbps, p0.width, p0.speed, p0.link_layer) == (400.0, "4X", "NDR", "InfiniBand")
    assert p0.saturated == ("port_xmit_wait",)
    p1 = r.port("mlx5_1", 1)
    assert p1 is not None and (p1.state, p1.phys_state, p1.rate_gbps) == ("DOWN", "Disabled", 40.0)
    assert p1.attributes == {"gid_attrs/types/0": "IB/RoCE v1"}
    assert r.device_attributes == {"mlx5_1": {"fw_ver": "22.38.1002"}}


def test_grep_error_lines_are_listed() -> None:
    text = GREP_H + "grep: /sys/class/infiniband/mlx5_0/ports/1/hw_counters/lifespan: Invalid argument\n"
    r = parse_sysfs(text)
    assert r.unknown_lines == 1 and r.problems[0].line == 18
    assert len(r.ports) == 2


def test_gpud_loop_saturated_counters_are_flagged() -> None:
    r = parse_sysfs((FIXTURES / "gpud-pr943-mlx5_1-counters-saturated.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    (port,) = r.ports
    assert (port.device, port.port) == ("", None)  # the loop ran inside ports/1/counters
    assert len(port.counters) == 21 and port.hw_counters == {}
    assert port.counters["port_xmit_wait"] == 4294967295
    assert port.counters["port_xmit_data"] == 205143497464492
    assert port.counters["excessive_buffer_overrun_errors"] == 15
    # 32-bit PortXmitWait, 16-bit PortXmitDiscards, 8-bit LinkDowned, 4-bit ExcessiveBufferOverrun
    assert port.saturated == (
        "excessive_buffer_overrun_errors", "link_downed", "port_xmit_discards", "port_xmit_wait",
    )  # fmt: skip


def test_show_counters_hw_counters_of_a_roce_bond() -> None:
    r = parse_sysfs((FIXTURES / "cn-notes-show_counters-mlx5_bond_0-hw_counters-ecn.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    (port,) = r.ports
    assert port.port == 1 and port.counters == {} and len(port.hw_counters) == 30
    hw = port.hw_counters
    assert hw["np_ecn_marked_roce_packets"] == 21278189006 and hw["np_cnp_sent"] == 1052612505
    assert hw["out_of_sequence"] == 1811101 and hw["resp_cqe_error"] == 3293504 and hw["lifespan"] == 10
    assert hw["rp_cnp_handled"] == 0  # ECN marks and CNPs sent, but no CNP handled here


def test_procfs_ttar_archive() -> None:
    r = parse_sysfs((FIXTURES / "procfs-ttar-mlx5_0-cx4lx.ttar.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    assert r.device_attributes == {
        "mlx5_0": {
            "board_id": "SM_2001000001034",
            "fw_ver": "14.28.2006",
            "hca_type": "MT4118",
            "node_guid": "0a7f:bc12:45ef:d23b",  # ttar's "EOF" no-newline marker removed
        }
    }
    (port,) = r.ports
    assert (port.device, port.port, port.link_layer, port.rate_gbps, port.width, port.speed) == (
        "mlx5_0", 1, "InfiniBand", 25.0, "1X", "EDR",
    )  # fmt: skip
    assert (port.state, port.phys_state_code) == ("ACTIVE", 4)  # phys_state "4: ACTIVE" kept as published
    assert len(port.counters) == 21 and len(port.hw_counters) == 25
    assert port.counters["port_xmit_data"] == 2880761508848 and port.counters["port_rcv_data"] == 18126345378
    hw = port.hw_counters
    assert (hw["req_cqe_error"], hw["resp_cqe_error"], hw["roce_adp_retrans"], hw["local_ack_timeout_err"]) == (
        3481, 8109, 99, 131,
    )  # fmt: skip
    assert port.saturated == ()


def test_non_integer_counter_is_a_problem() -> None:
    r = parse_sysfs("/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:N/A\n")
    assert r.ports == () and r.problems[0].reason == "counters/symbol_error: value is not an integer"


def test_newer_kernel_files_are_kept() -> None:
    text = GREP_H + (
        "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/rx_icrc_encapsulated_v2:3\n"
        "/sys/class/infiniband/mlx5_0/ports/1/link_width_ext:4X\n"
    )
    r = parse_sysfs(text)
    p0 = r.port("mlx5_0", 1)
    assert r.problems == () and p0 is not None
    assert p0.hw_counters["rx_icrc_encapsulated_v2"] == 3 and p0.attributes["link_width_ext"] == "4X"
