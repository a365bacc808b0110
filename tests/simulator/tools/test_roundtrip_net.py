"""Round trip: the collectors' parsers read back what the network renderers print from a view."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from builders_net import make_nic, make_node, make_switch, node_ctx

from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats
from fleet.collectors.parsers.iblinkinfo import parse_iblinkinfo
from fleet.collectors.parsers.ibnetdiscover import parse_ibnetdiscover
from fleet.collectors.parsers.ibstat import parse_ibstat, parse_ibstatus
from fleet.collectors.parsers.ibv_devinfo import parse_ibv_devinfo
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.parsers.perfquery import parse_ibqueryerrors, parse_perfquery
from fleet.collectors.parsers.rdma_qp import parse_rdma_qp
from fleet.collectors.parsers.rdma_statistic import parse_rdma_statistic
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.simulator.state import NodeView
from fleet.simulator.tools import ToolContext, ToolFn
from fleet.simulator.tools.ethtool import ethtool
from fleet.simulator.tools.ib import (
    iblinkinfo,
    ibnetdiscover,
    ibqueryerrors,
    ibstat,
    ibstatus,
    ibv_devinfo,
    perfquery,
)
from fleet.simulator.tools.lldp import lldpctl
from fleet.simulator.tools.rdma import rdma, show_gids
from fleet.simulator.tools.sysfs import grep


def text(fn: ToolFn, ctx: ToolContext, *argv: str) -> str:
    out = fn(ctx, list(argv))
    assert out.exit_status == 0, out.stderr
    return out.stdout


@pytest.fixture
def node() -> NodeView:
    return make_node(3)


def test_ibstat(node: NodeView) -> None:
    parsed = parse_ibstat(text(ibstat, node_ctx(node), "ibstat"))
    assert not parsed.problems and parsed.unknown_lines == 0
    for dev, nic in zip(parsed.devices, node.nics, strict=True):
        assert (dev.name, dev.ca_type, dev.firmware_version) == (
            nic.name,
            nic.hca_type,
            nic.fw_version,
        )
        port = dev.ports[0]
        assert port.rate_gbps == nic.rate_gbps and port.link_layer == nic.link_layer
        assert port.port_guid == nic.port_guid and port.base_lid == nic.lid


def test_ibstatus(node: NodeView) -> None:
    parsed = parse_ibstatus(text(ibstatus, node_ctx(node), "ibstatus"))
    assert not parsed.problems
    assert len(parsed.ports) == 3
    first = parsed.ports[0]
    assert first.device == "mlx5_0"
    assert first.rate_gbps == 400


def test_ibv_devinfo_plain_and_verbose(node: NodeView) -> None:
    # Lines the parser does not place yet, all printed by the real devinfo.c -v:
    # flag-list continuations without a key and "tag matching not supported".
    known_gaps = {
        "\t\t\t\t\tNO SUPPORT",
        "\t\t\t\t\tC-VLAN stripping offload",
        "\t\t\t\t\tScatter FCS offload",
        "\t\t\t\t\tIP csum offload",
        "\t\t\t\t\tDelay drop",
        "\ttag matching not supported",
    }
    for argv in (("ibv_devinfo",), ("ibv_devinfo", "-v")):
        parsed = parse_ibv_devinfo(text(ibv_devinfo, node_ctx(node), *argv))
        assert {p.text for p in parsed.problems} <= known_gaps
        assert [d.hca_id for d in parsed.devices] == [n.name for n in node.nics]
        port = parsed.devices[0].ports[0]
        assert (
            port.state == "PORT_ACTIVE"
            and port.active_mtu_bytes == 4096
            and port.link_layer == "Ethernet"
        )
    verbose = (
        parse_ibv_devinfo(text(ibv_devinfo, node_ctx(node), "ibv_devinfo", "-v"))
        .devices[0]
        .ports[0]
    )
    assert verbose.rate_gbps == 400 and len(verbose.gids) == 4


def test_sysfs_grep(node: NodeView) -> None:
    out = text(
        grep,
        node_ctx(node),
        "grep",
        "-H",
        ".",
        "/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}",
        "/sys/class/infiniband/*/ports/*/counters/*",
        "/sys/class/infiniband/*/ports/*/hw_counters/*",
    )
    parsed = parse_sysfs(out)
    assert not parsed.problems
    by_dev = {p.device: p for p in parsed.ports}
    for nic in node.nics:
        port = by_dev[nic.name]
        assert port.counters == nic.counters
        assert {k: v for k, v in port.hw_counters.items() if k != "lifespan"} == nic.hw_counters
        assert (port.state, port.phys_state, port.rate_gbps, port.link_layer) == (
            "ACTIVE",
            "LinkUp",
            400,
            "Ethernet",
        )


def test_ethtool_stats(node: NodeView) -> None:
    parsed = parse_ethtool_stats(text(ethtool, node_ctx(node), "ethtool", "-S", "ens2np0"))
    assert parsed.has_header and not parsed.problems
    assert parsed.counters == node.nics[1].ethtool
    assert list(parsed.counters) == list(node.nics[1].ethtool)


@pytest.mark.parametrize("identifier", ["0x18 (QSFP-DD)", "0x11 (QSFP28)"])
def test_ethtool_module(node: NodeView, identifier: str) -> None:
    nic = node.nics[0]
    assert nic.optics is not None
    optics = replace(nic.optics, identifier=identifier)
    ctx = node_ctx(replace(node, nics=(replace(nic, optics=optics),)))
    parsed = parse_ethtool_module(text(ethtool, ctx, "ethtool", "-m", "ens1np0"))
    assert not parsed.problems and parsed.unknown_lines == 0
    assert parsed.identifier_code == int(identifier.split()[0], 16)
    assert parsed.vendor_pn == optics.vendor_pn and parsed.vendor_sn == optics.vendor_sn
    assert parsed.temp_c == pytest.approx(optics.temp_c, abs=0.01)
    assert parsed.voltage_v == pytest.approx(optics.voltage_v, abs=0.0001)
    for lane, view in zip(parsed.lanes, optics.lanes, strict=False):
        assert lane.rx_power_mw == pytest.approx(view.rx_power_mw, abs=0.0001)
        assert lane.tx_power_mw == pytest.approx(view.tx_power_mw, abs=0.0001)
        assert lane.tx_bias_ma == pytest.approx(view.tx_bias_ma, abs=0.002)
    assert parsed.thresholds["rx_power_low_alarm_dbm"] == pytest.approx(
        optics.rx_power_thresholds_dbm[1], abs=0.01
    )
    dark = parsed.lanes[-1]
    if len(parsed.lanes) > len(optics.lanes):
        assert dark.rx_power_dbm is not None and math.isinf(dark.rx_power_dbm)


def test_rdma_qp_text_and_json(node: NodeView) -> None:
    for argv in (("rdma", "res", "show", "qp"), ("rdma", "-j", "res", "show", "qp")):
        parsed = parse_rdma_qp(text(rdma, node_ctx(node), *argv))
        assert not parsed.problems
        expected = [
            (n.name, q.lqpn, q.type, q.state)
            for n in node.nics
            for q in sorted(n.qps, key=lambda q: q.lqpn)
        ]
        assert [(q.device, q.lqpn, q.type, q.state) for q in parsed.qps] == expected
        user = [q for q in parsed.qps if not q.kernel]
        assert all(q.pid == 4242 and q.comm == "python3" and q.rqpn is not None for q in user)
        assert all(q.comm == "ib_core" and q.pid is None for q in parsed.qps if q.kernel)


def test_rdma_statistic(node: NodeView) -> None:
    for argv in (("rdma", "statistic", "show"), ("rdma", "-j", "statistic", "show")):
        parsed = parse_rdma_statistic(text(rdma, node_ctx(node), *argv))
        assert not parsed.problems
        assert {p.device: p.counters for p in parsed.ports} == {
            n.name: n.hw_counters for n in node.nics
        }


def test_show_gids(node: NodeView) -> None:
    parsed = parse_show_gids(text(show_gids, node_ctx(node), "show_gids"))
    assert not parsed.problems and parsed.n_gids_found == 12
    expected = [
        (n.name, g.index, g.gid, g.ipv4, g.roce_version, g.netdev)
        for n in node.nics
        for g in n.gids
    ]
    assert [
        (g.device, g.index, g.gid, g.ipv4, g.roce_version, g.netdev) for g in parsed.gids
    ] == expected


@pytest.mark.parametrize("argv", [("lldpctl", "-f", "json"), ("lldpcli", "show", "neighbors")])
def test_lldp(node: NodeView, argv: tuple[str, ...]) -> None:
    parsed = parse_lldp(text(lldpctl, node_ctx(node), *argv))
    assert not parsed.problems
    got = [
        (n.local_interface, n.chassis_name, n.port_id, n.chassis_id, n.ttl_s)
        for n in parsed.neighbors
    ]
    assert got == [
        (nic.netdev, nic.lldp.switch, nic.lldp.switch_port, nic.lldp.chassis_mac, 120)
        for nic in node.nics
        if nic.lldp is not None
    ]


def ib_ctx() -> tuple[ToolContext, NodeView]:
    nodes = []
    for i, name in enumerate(("gpu001", "gpu002")):
        nic = make_nic(0, link_layer="InfiniBand", lid=10 + i, port_guid=f"0xa088c20300e1e3{i:02x}")
        assert nic.lldp is not None
        nic = replace(nic, lldp=replace(nic.lldp, switch="leaf01", switch_port=f"swp{i + 1}"))
        nodes.append(replace(make_node(0, name=name), nics=(nic,)))
    leaf = make_switch("leaf01", peers=(("gpu001", "ibp24s0"), ("gpu002", "ibp24s0")))
    return node_ctx(nodes[0], nodes=tuple(nodes), switches=(leaf,)), nodes[0]


def test_perfquery_x() -> None:
    ctx, node = ib_ctx()
    parsed = parse_perfquery(text(perfquery, ctx, "perfquery", "-x"))
    block = parsed.blocks[0]
    assert block.extended and block.lid == 10 and block.port == 1
    assert block.counters["PortXmitData"] == node.nics[0].counters["port_xmit_data"]
    assert block.counters["SymbolErrorCounter"] == node.nics[0].counters["symbol_error"]


def test_ibnetdiscover_both_layouts_and_iblinkinfo() -> None:
    ctx, _ = ib_ctx()
    ports = parse_ibnetdiscover(text(ibnetdiscover, ctx, "ibnetdiscover", "-p"))
    assert ports.layout == "ports" and not ports.problems
    linked = [link for link in ports.links if link.peer_kind]
    assert len(linked) == 4
    topo = parse_ibnetdiscover(text(ibnetdiscover, ctx, "ibnetdiscover"))
    assert topo.layout == "topology" and not topo.problems
    assert {n.description for n in topo.nodes} == {
        "gpu001 mlx5_0",
        "gpu002 mlx5_0",
        "MF0;leaf01:MQM9700/U1",
    }
    links = parse_iblinkinfo(text(iblinkinfo, ctx, "iblinkinfo"))
    assert not links.problems
    up = [p for p in links.ports if p.state == "Active"]
    assert len(up) == 4 and all(p.lane_speed_gbps == 106.25 for p in up)


def test_ibqueryerrors() -> None:
    ctx, node = ib_ctx()
    parsed = parse_ibqueryerrors(text(ibqueryerrors, ctx, "ibqueryerrors"))
    assert not parsed.problems
    assert (
        parsed.nodes_checked,
        parsed.bad_nodes,
        parsed.ports_checked,
        parsed.ports_with_errors,
    ) == (3, 2, 4, 2)
    first = parsed.nodes[0]
    assert first.description == "gpu001 mlx5_0"
    assert first.ports[0].counters["LinkDownedCounter"] == node.nics[0].counters["link_downed"]


def test_lldp_statistics(node: NodeView) -> None:
    parsed = parse_lldp(text(lldpctl, node_ctx(node), "lldpcli", "show", "statistics"))
    assert not parsed.problems
    frames = 1 + 1_764_435_600 % 86400 // 30
    assert [(s.interface, s.transmitted, s.received, s.inserted) for s in parsed.statistics] == [
        (nic.netdev, frames, frames, 1) for nic in node.nics
    ]
