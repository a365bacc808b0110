"""SONiC show renderers against the real portstat / queuestat captures."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders_gpu import fixture, make_port, make_switch, switch_ctx

from fleet.simulator.state import SwitchView
from fleet.simulator.tools.sonic import format_rate, format_util, show


def run(*args: str, switch: SwitchView | None = None) -> tuple[str, str, int]:
    out = show(
        switch_ctx(switch or make_switch(os="sonic", names=("Ethernet0", "Ethernet8"))),
        ["show", *args],
    )
    return out.stdout, out.stderr, out.exit_status


def arista_switch() -> SwitchView:
    """The two ports of the Arista 7050QX capture, 40G, under iperf load."""
    e4 = make_port(
        "Ethernet4",
        speed_gbps=40,
        rx_packets=2_580_140,
        rx_bps=6_190_340.0 * 8,
        rx_errors=0,
        rx_drops=3_783,
        tx_packets=51_263_535,
        tx_bps=2_086_640_000.0 * 8,
        tx_errors=0,
        tx_drops=0,
    )
    e12 = make_port(
        "Ethernet12",
        speed_gbps=40,
        rx_packets=51_261_888,
        rx_bps=2_086_790_000.0 * 8,
        rx_errors=0,
        rx_drops=1,
        tx_packets=2_580_317,
        tx_bps=6_191_000.0 * 8,
        tx_errors=0,
        tx_drops=0,
    )
    return make_switch(os="sonic", ports=(e12, e4))


def test_interfaces_counters_is_the_capture_byte_for_byte() -> None:
    real = fixture("switch", "sonicbook-arista7050qx-show-interfaces-counters-iperf.txt")
    # The capture's IFACE column is 11 wide for names of at most 10: the author
    # cut the other ports' rows (an 11-character name like Ethernet100 among them).
    switch = arista_switch()
    switch = replace(
        switch,
        ports=(
            *switch.ports,
            make_port("Ethernet100", speed_gbps=40, rx_bps=0.0, tx_bps=0.0),
        ),
    )
    out, _, rc = run("interfaces", "counters", switch=switch)
    assert rc == 0
    assert "".join(ln + "\n" for ln in out.splitlines() if "Ethernet100" not in ln) == real


def test_lossless_capture_units_b_and_kb() -> None:
    real = fixture("switch", "lolyu-sonic-portstat-i-lossless-txdrp.txt")
    e4 = make_port(
        "Ethernet4",
        speed_gbps=100,
        rx_packets=5,
        rx_bps=17.06 * 8,
        rx_errors=0,
        rx_drops=0,
        tx_packets=8_376,
        tx_bps=14_320.0 * 8,
        tx_errors=0,
        tx_drops=91_786,
    )
    e120 = make_port(
        "Ethernet120",
        speed_gbps=100,
        rx_packets=100_301,
        rx_bps=85.91 * 8,
        rx_errors=0,
        rx_drops=7,
        tx_packets=242,
        tx_bps=58.43 * 8,
        tx_errors=0,
        tx_drops=0,
    )
    out, _, _ = run("interfaces", "counters", switch=make_switch(os="sonic", ports=(e120, e4)))
    assert out == real


def test_rate_and_util_thresholds() -> None:
    assert format_rate(10_000.0) == "10000.00 B/s"
    assert format_rate(10_001.0) == "10.00 KB/s"
    assert format_rate(10_000_001.0) == "10.00 MB/s"
    assert format_util(50e9 / 8, 400) == "12.50%"


def test_state_column_down_and_disabled() -> None:
    ports = (
        make_port("Ethernet0", oper_up=False),
        make_port("Ethernet8", admin_up=False, oper_up=False),
    )
    out, _, _ = run("interfaces", "counters", switch=make_switch(os="sonic", ports=ports))
    assert [ln.split()[1] for ln in out.splitlines()[2:]] == ["D", "X"]


def test_queue_counters_layout_matches_the_captures() -> None:
    real = fixture(
        "switch", "sonic-utilities-issue2393-show-queue-counter-huge-drops-excerpt.txt"
    ).splitlines()
    lolyu = fixture("switch", "lolyu-sonic-show-queue-counters-uc3-drops.txt").splitlines()
    port = make_port("Ethernet196", tx_packets=8_193_000, tx_bytes=8_193_000 * 104)
    out, _, rc = run(
        "queue", "counters", "Ethernet196", switch=make_switch(os="sonic", ports=(port,))
    )
    lines = out.splitlines()
    assert rc == 0
    assert lines[0].split() == real[0].split()
    assert lines[1].split()[:5] == real[1].split()[:5]
    assert [ln.split()[1] for ln in lines[2:18]] == [f"UC{q}" for q in range(8)] + [
        f"MC{q}" for q in range(8, 16)
    ]
    assert lines[-1] == ""  # a blank line after each port's table
    uc3 = lines[5].split()
    assert uc3[:2] == ["Ethernet196", "UC3"]
    assert uc3[4:] == ["91786", str(91786 * 104)]  # plain numbers, as both captures print
    assert lolyu[1].split() == lines[0].split()
    assert all("," not in ln for ln in lines)


def test_pfc_counters_two_tables() -> None:
    out, _, _ = run("pfc", "counters")
    lines = out.splitlines()
    assert lines[0].split() == ["Port", "Rx", *(f"PFC{p}" for p in range(8))]
    assert lines[2].split() == ["Ethernet0", "0", "0", "0", "12,345", "0", "0", "0", "0"]
    assert lines[4] == ""
    assert lines[5].split() == ["Port", "Tx", *(f"PFC{p}" for p in range(8))]
    assert lines[7].split()[4] == "678"
    assert lines[1].split()[0] == "-" * len("Ethernet0") and lines[1].split()[1] == "------"
    assert lines[-1] == ""


def test_lldp_table() -> None:
    out, _, _ = run("lldp", "table")
    lines = out.splitlines()
    assert lines[0] == "Capability codes: (R) Router, (B) Bridge, (O) Other"
    assert lines[1].split() == [
        "LocalPort",
        "RemoteDevice",
        "RemotePortID",
        "Capability",
        "RemotePortDescr",
    ]
    assert lines[3].split() == ["Ethernet0", "gpu003", "ens2np0", "mlx5_2"]
    assert lines[-2] == "-" * 50
    assert lines[-1] == "Total entries displayed:  2"


def test_interfaces_status() -> None:
    out, _, _ = run("interfaces", "status")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["Interface", "Lanes", "Speed"]
    assert lines[3].split()[:5] == ["Ethernet8", "8,9,10,11,12,13,14,15", "400G", "9216", "rs"]


@pytest.mark.parametrize("args", [("interfaces", "bogus"), ("frobnicate",), ()])
def test_unknown_subcommands(args: tuple[str, ...]) -> None:
    out, err, rc = run(*args)
    assert rc == 2 and out == "" and err.startswith("Usage: show [OPTIONS] COMMAND [ARGS]...")


def test_unknown_port_and_cumulus_switch() -> None:
    assert run("queue", "counters", "Ethernet999")[2] == 1
    assert run("interfaces", "counters", switch=make_switch())[2] == 127


def test_counters_of_named_ports() -> None:
    out, _, rc = run("interfaces", "counters", "-i", "Ethernet8")
    assert rc == 0 and [ln.split()[0] for ln in out.splitlines()[2:]] == ["Ethernet8"]
    assert run("interfaces", "counters", "-i", "Ethernet9")[2] == 1
