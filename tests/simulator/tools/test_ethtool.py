"""ethtool -S / -m / DEV against the real mlx5 captures and the driver's counter order."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from builders_net import fixture, make_nic, make_node, make_optics, node_ctx

from fleet.simulator.state import NodeView, OpticsLane
from fleet.simulator.tools import ToolOutput
from fleet.simulator.tools.ethtool import ethtool, mlx5_ethtool_counter_names


def run(*argv: str, node: NodeView | None = None) -> ToolOutput:
    return ethtool(node_ctx(node or make_node(2)), ["ethtool", *argv])


def names_in(text: str) -> list[str]:
    return re.findall(r"^\s*(\w+): -?\d+$", text, re.M)


def is_subsequence(part: list[str], whole: tuple[str, ...]) -> bool:
    it = iter(whole)
    return all(name in it for name in part)


# --- -S ---------------------------------------------------------------------


def test_stats_header_indent_and_order_follow_the_view() -> None:
    node = make_node(1)
    out = run("-S", "ens1np0", node=node)
    lines = out.stdout.splitlines()
    assert lines[0] == "NIC statistics:"
    assert all(re.match(r"^ {5}\w+: \d+$", line) for line in lines[1:])
    assert names_in(out.stdout) == list(node.nics[0].ethtool)
    assert f"     rx_prio3_pause: {node.nics[0].ethtool['rx_prio3_pause']}" in lines


@pytest.mark.parametrize(
    ("capture", "global_pause"),
    [
        ("cn-notes-ethtool-S-grep-pause-cx4lx-tx-global-pause.txt", True),
        ("cn-notes-ethtool-S-grep-discards-cx4lx-prio-discards.txt", False),
    ],
)
def test_counter_list_keeps_the_real_relative_order(capture: str, global_pause: bool) -> None:
    real = fixture("ethtool", capture)
    assert all(re.match(r"^ {5}\w+: \d+$", line) for line in real.splitlines())
    names = mlx5_ethtool_counter_names(pfc_priorities=(), global_pause=global_pause)
    assert is_subsequence(names_in(real), names)


def test_counter_list_matches_the_full_kernel_capture_order() -> None:
    # Since kernel 4.15 link_down_events_phy moved from the software group to the
    # PHY group and tx_queue_wake behind tx_cqes: the two names allowed to differ.
    moved = {"link_down_events_phy", "tx_queue_wake"}
    real = [
        n
        for n in names_in(fixture("ethtool", "ethq-mlx5-cx4-ethtool-S-kernel4.15.txt"))
        if n not in moved
    ]
    names = mlx5_ethtool_counter_names(pfc_priorities=(), global_pause=True)
    known = [n for n in real if n in names]
    assert len(known) >= 100
    assert is_subsequence(known, names)


def test_counter_list_has_the_roce_signals_only_for_pfc_priorities() -> None:
    names = mlx5_ethtool_counter_names()
    for wanted in (
        "rx_prio3_pause",
        "rx_prio3_pause_duration",
        "tx_prio3_pause",
        "tx_prio3_pause_duration",
        "rx_prio3_pause_transition",
        "rx_discards_phy",
        "tx_discards_phy",
        "rx_corrected_bits_phy",
        "rx_bits_phy",
        "rx_pcs_symbol_err_phy",
        "link_down_events_phy",
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
        "rx_prio3_marked",
    ):
        assert wanted in names
    assert "rx_prio4_pause" not in names and "rx_global_pause" not in names
    assert len(names) == len(set(names))
    assert (
        names.index("rx_prio7_packets")
        < names.index("rx_prio3_pause")
        < names.index("tx_pause_storm_warning_events")
    )


def test_stats_of_an_unknown_netdev() -> None:
    out = run("-S", "eth9")
    assert (out.stdout, out.stderr, out.exit_status) == (
        "",
        "Cannot get stats strings information: No such device\n",
        96,
    )
    assert run("-S").exit_status == 1
    silent = replace(make_node(0), nics=(make_nic(0, ethtool={}),))
    assert run("-S", "ens1np0", node=silent).stderr == "no stats available\n"


# --- -m ---------------------------------------------------------------------


def labels(text: str) -> list[str]:
    return [line.split(" : ")[0].strip() for line in text.splitlines()]


def test_qsfp28_module_has_the_real_labels_in_order() -> None:
    real = fixture("ethtool", "cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt")
    optics = replace(make_optics(lanes=4, identifier="0x11 (QSFP28)"), vendor_pn="FTLC1152RGPL6-FB")
    node = replace(make_node(0), nics=(make_nic(0, optics=optics),))
    out = run("-m", "ens1np0", node=node).stdout
    assert labels(out) == labels(real)
    assert all(line.startswith("\t") and line[42:45] == " : " for line in out.splitlines())
    measured = ("Laser", "Transmit", "Rcvr", "Module temperature", "Module voltage")
    for ours, theirs in zip(out.splitlines(), real.splitlines(), strict=True):
        if theirs.startswith(measured):
            shape = re.sub(r"-?\d+", "9", theirs.split(" : ")[1])
            assert re.sub(r"-?\d+", "9", ours.split(" : ")[1]) == shape


def test_power_and_register_quantization_print_like_ethtool() -> None:
    lanes = (OpticsLane(1.0778, 0.0, 42.0679), OpticsLane(0.0, 0.9198, 0.0))
    optics = replace(
        make_optics(identifier="0x11 (QSFP28)"), lanes=lanes, temp_c=33.7617, voltage_v=3.25049
    )
    out = run(
        "-m", "ens1np0", node=replace(make_node(0), nics=(make_nic(0, optics=optics),))
    ).stdout
    assert "\tRcvr signal avg optical power(Channel 1)  : 1.0778 mW / 0.33 dBm\n" in out
    assert "\tRcvr signal avg optical power(Channel 2)  : 0.0000 mW / -inf dBm\n" in out
    assert "\tTransmit avg optical power (Channel 2)    : 0.9198 mW / -0.36 dBm\n" in out
    assert "\tLaser tx bias current (Channel 1)         : 42.068 mA\n" in out
    assert (
        "\tModule temperature                        : 33.76 degrees C / 92.77 degrees F\n" in out
    )
    assert "\tModule voltage                            : 3.2505 V\n" in out
    assert "\tLaser rx power low alarm    (Channel 2)   : On\n" in out
    assert "\tLaser rx power low alarm    (Channel 1)   : Off\n" in out


def test_cmis_module_prints_eight_channels_and_flags_channel_by_channel() -> None:
    dim = make_optics(lanes=4, rx_mw=0.03)
    out = run("-m", "ens1np0", node=replace(make_node(0), nics=(make_nic(0, optics=dim),))).stdout
    lines = out.splitlines()
    assert (
        lines[0]
        == "\tIdentifier                                : 0x18 (QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628))"
    )
    assert len([line for line in lines if "Rcvr signal avg optical power (Channel" in line]) == 8
    assert "\tRcvr signal avg optical power (Channel 5) : 0.0000 mW / -inf dBm" in lines
    first_flags = [
        line.split(" : ")[0].strip()
        for line in lines
        if "(Chan" in line and ("alarm" in line or "warning" in line)
    ][:12]
    assert first_flags[0] == "Laser bias current high alarm   (Chan 1)"
    assert first_flags[4] == "Laser tx power high alarm   (Channel 1)"
    assert first_flags[11] == "Laser rx power low warning  (Channel 1)"
    # -15.2 dBm is below the module's own -13.31 dBm low alarm and -10.3 dBm low warning
    assert "\tLaser rx power low alarm    (Channel 1)   : On" in lines
    assert lines[-1].startswith("\tLaser rx power low warning threshold      : ")
    assert all(len(line) > 44 and line[42:45] == " : " for line in lines)


def test_module_errors() -> None:
    assert run("-m", "eth9").exit_status == 1
    no_module = replace(make_node(0), nics=(make_nic(0, optics=None),))
    out = run("-m", "ens1np0", node=no_module)
    assert out.exit_status == 1 and out.stderr == "netlink error: Input/output error\n"


# --- ethtool DEV ----------------------------------------------------------------


def test_link_settings() -> None:
    out = run("ens1np0").stdout.splitlines()
    assert out[0] == "Settings for ens1np0:"
    assert "\tSpeed: 400000Mb/s" in out and "\tLink detected: yes" in out
    assert "\tSupported link modes:   400000baseKR4/Full" in out
    down = replace(make_node(0), nics=(make_nic(0, state="DOWN", phys_state="Disabled"),))
    assert "\tLink detected: no" in run("ens1np0", node=down).stdout.splitlines()
    assert run("eth9").exit_status == 75


# Labels of a real CMIS 4.0 `ethtool -m` (Arista QDD-400G-XDR4, posted to netdev
# in 2024 with an ethtool JSON RFC), up to the per-lane monitors.
REAL_CMIS_HEAD = [
    "Identifier", "Power class", "Max power", "Connector", "Cable assembly length",
    "Tx CDR bypass control", "Rx CDR bypass control", "Tx CDR", "Rx CDR", "Transmitter technology",
    "Laser wavelength", "Laser wavelength tolerance", "Length (SMF)", "Length (OM5)", "Length (OM4)",
    "Length (OM3 50/125um)", "Length (OM2 50/125um)", "Vendor name", "Vendor OUI", "Vendor PN",
    "Vendor rev", "Vendor SN", "Date code", "Revision compliance", "Rx loss of signal",
    "Tx loss of signal", "Rx loss of lock", "Tx loss of lock", "Tx fault", "Module State",
    "LowPwrAllowRequestHW", "LowPwrRequestSW", "Module temperature", "Module voltage",
]  # fmt: skip


def test_cmis_head_follows_the_real_cmis_capture() -> None:
    optics = replace(make_optics(lanes=4), vendor_pn="MMS4X00-NS400")
    out = run(
        "-m", "ens1np0", node=replace(make_node(0), nics=(make_nic(0, optics=optics),))
    ).stdout
    lines = out.splitlines()
    assert labels(out)[: len(REAL_CMIS_HEAD)] == REAL_CMIS_HEAD
    assert "\tTransmitter technology                    : 0x06 (1310 nm EML)" in lines
    assert "\tRx loss of signal                         : None" in lines
    # 8 bias + 8 tx + 8 rx monitors, 8 module flags, 8 x 12 lane flags, 20 thresholds
    assert len(lines) == len(REAL_CMIS_HEAD) + 24 + 8 + 96 + 20


def test_cmis_dark_lane_in_use_raises_loss_of_signal() -> None:
    lanes = (*make_optics(lanes=4).lanes[:3], OpticsLane(0.0, 1.1, 7.5))
    optics = replace(make_optics(lanes=4), lanes=lanes)
    out = run(
        "-m", "ens1np0", node=replace(make_node(0), nics=(make_nic(0, optics=optics),))
    ).stdout
    assert (
        "\tRx loss of signal                         : [ No, No, No, Yes, No, No, No, No ]\n" in out
    )
    assert "\tTx loss of signal                         : None\n" in out
