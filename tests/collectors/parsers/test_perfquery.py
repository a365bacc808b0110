"""perfquery (-x, -E, plain) and ibqueryerrors: counters, capability masks, saturation."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.perfquery import parse_ibqueryerrors, parse_perfquery

FIXTURES = Path(__file__).parents[2] / "fixtures" / "perfquery"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_extended_switch_two_ports() -> None:
    r = parse_perfquery(_read("infiniband_exporter-perfquery-x-switch-2ports.txt"))
    assert r.problems == () and r.unknown_lines == 0
    assert [(b.kind, b.lid, b.port) for b in r.blocks] == [
        ("Port extended counters", 1719, 1),
        ("Port extended counters", 1719, 2),
    ]
    b1 = r.blocks[0]
    assert (b1.cap_mask, b1.cap_mask2, b1.extended) == (0x5300, 0x2, True)
    assert b1.selectors == {"PortSelect": 1, "CounterSelect": 0, "CounterSelect2": 0}
    assert len(b1.counters) == 22
    assert (b1.counters["PortXmitData"], b1.counters["PortRcvData"]) == (36298026860928, 12279028775751)
    assert b1.counters["PortXmitWait"] == 22730501 and b1.saturated == ()
    assert r.blocks[1].counters["PortXmitWait"] == 36510964


def test_extended_all_zero_fresh_port() -> None:
    r = parse_perfquery(_read("infiniband-diags-issue16-perfquery-x-rhel75.txt"))
    assert r.problems == ()
    (b,) = r.blocks
    assert (b.lid, b.port, b.cap_mask2) == (10, 1, 2)
    assert set(b.counters.values()) == {0} and "QP1Dropped" in b.counters


def test_rcv_error_details_block() -> None:
    r = parse_perfquery(_read("infiniband_exporter-perfquery-E-rcverrdetails.txt"))
    assert r.problems == ()
    (b,) = r.blocks
    assert (b.kind, b.lid, b.port, b.cap_mask, b.extended) == ("PortRcvErrorDetails counters", 1719, 1, None, False)
    assert list(b.counters) == [
        "PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
        "PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors",
    ]  # fmt: skip


def test_plain_block_flags_saturated_16_and_32_bit_counters() -> None:
    text = (
        "# Port counters: Lid 3 port 1 (CapMask: 0x1400)\n"
        "PortSelect:......................1\n"
        "SymbolErrorCounter:..............65535\n"
        "LinkDownedCounter:...............255\n"
        "PortXmitData:....................4294967295\n"
        "PortXmitWait:....................4294967295\n"
        "PortRcvErrors:...................12\n"
    )
    (b,) = parse_perfquery(text).blocks
    assert not b.extended
    assert b.saturated == ("LinkDownedCounter", "PortXmitData", "PortXmitWait", "SymbolErrorCounter")


def test_extended_block_is_64_bit() -> None:
    text = (
        "# Port extended counters: Lid 3 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)\n"
        "PortXmitData:....................4294967295\n"
        "SymbolErrorCounter:..............65535\n"
        "PortRcvData:.....................18446744073709551615\n"
    )
    (b,) = parse_perfquery(text).blocks
    assert b.saturated == ("PortRcvData",)


def test_newer_version_extra_counter_is_kept() -> None:
    text = _read("infiniband-diags-issue16-perfquery-x-rhel75.txt").replace(
        "QP1Dropped:......................0\n", "QP1Dropped:......................0\nPortNewCounter:..................7\n"
    )
    r = parse_perfquery(text)
    assert r.problems == () and r.blocks[0].counters["PortNewCounter"] == 7


def test_ibqueryerrors_saturated_port_xmit_wait_and_symbol_errors() -> None:
    r = parse_ibqueryerrors(_read("linux-rdma-ibqueryerrors-sx6036-saturated.txt"))
    assert r.problems == () and r.unknown_lines == 0
    assert (r.nodes_checked, r.bad_nodes, r.ports_checked, r.ports_with_errors) == (4, 4, 43, 14)
    assert [(n.guid, n.description, len(n.ports)) for n in r.nodes] == [
        ("", "dl380g7 mlx4_0", 2),
        ("", "server mlx4_0", 1),
        ("0x2c903006e29b0", "MF0;ys23ib4:SX6036/U1", 10),
        ("", "rd240 mlx4_0", 2),
    ]
    hca = r.nodes[0].ports[0]
    assert (hca.guid, hca.port, hca.counters) == ("0x7cfe900300179b31", 1, {"VL15Dropped": 14, "PortXmitWait": 4294967295})
    assert hca.saturated == ("PortXmitWait",)
    switch = r.nodes[2]
    aggregate = switch.ports[0]
    assert aggregate.port is None and aggregate.counters["PortXmitDiscards"] == 15854
    port5 = switch.ports[6]
    assert port5.port == 5 and port5.counters["SymbolErrorCounter"] == 65535
    assert port5.saturated == ("SymbolErrorCounter",)  # PortXmitWait 84704351 is a real count
    saturated_ports = [(p.guid, p.port) for n in r.nodes for p in n.ports if "PortXmitWait" in p.saturated]
    assert len(saturated_ports) == 8
    assert switch.ports[1].port == 0 and switch.ports[1].saturated == ()


def test_ibqueryerrors_link_info_and_data_suffix() -> None:
    text = (
        'Errors for 0x0002c90300002aa0 "SW1"\n'
        "   GUID 0x0002c90300002aa0 port 3: [LinkDownedCounter == 1] [PortXmitData == 1234 (4.8KB)]\n"
        "      Link info:     2    3[  ] ==( 4X 10.0 Gbps Active/  LinkUp)==>  4  1[  ] \"n1 HCA-1\" ( )\n"
    )
    r = parse_ibqueryerrors(text)
    assert r.problems == ()
    (port,) = r.nodes[0].ports
    assert port.counters == {"LinkDownedCounter": 1, "PortXmitData": 1234}
    assert port.link_info.startswith("2    3[  ] ==( 4X 10.0 Gbps")


def test_perfquery_text_is_not_ibqueryerrors() -> None:
    r = parse_ibqueryerrors(_read("infiniband_exporter-perfquery-x-switch-2ports.txt"))
    assert r.nodes == () and r.unknown_lines == 52  # every non-empty line
