"""The discovered fabric graph and its comparison with the cabling plan."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.ibnetdiscover import parse_ibnetdiscover
from fleet.fabric.records import PortRecord
from fleet.fabric.topology import Endpoint, PlannedCable, build_graph, compare, ib_port_records

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"

ROLES = {"gpu001": "node", "gpu002": "node", "leaf01": "leaf", "leaf02": "leaf", "spine01": "spine",
         "spine02": "spine"}
PLAN = [
    PlannedCable("gpu001", "mlx5_0", "leaf01", "swp1"),
    PlannedCable("gpu001", "mlx5_1", "leaf02", "swp1"),
    PlannedCable("gpu002", "mlx5_0", "leaf01", "swp2"),
    PlannedCable("gpu002", "mlx5_1", "leaf02", "swp2"),
]
NETDEV = {"mlx5_0": "enp12s0np0", "mlx5_1": "enp13s0np0"}


def _node_side(cables: list[tuple[str, str, str, str]]) -> list[PortRecord]:
    return [PortRecord(node, nic, "1", NETDEV[nic], "Ethernet", switch, port) for node, nic, switch, port in cables]


def _switch_side(cables: list[tuple[str, str, str, str]]) -> list[PortRecord]:
    return [PortRecord(switch, port, "", "", "Ethernet", node, NETDEV[nic]) for node, nic, switch, port in cables]


AS_PLANNED = [(c.node, c.nic, c.switch, c.port) for c in PLAN]
UPLINKS = [PortRecord(leaf, f"swp{9 + s}", "", "", "Ethernet", f"spine0{s + 1}", f"swp{int(leaf[-1])}")
           for leaf in ("leaf01", "leaf02") for s in range(2)]


def test_graph_joins_both_ends_maps_netdevs_and_finds_uplinks_from_switch_lldp() -> None:
    graph = build_graph(_node_side(AS_PLANNED) + _switch_side(AS_PLANNED) + UPLINKS, ROLES)
    assert graph.nodes == ("gpu001", "gpu002")
    assert graph.leaves == ("leaf01", "leaf02") and graph.spines == ("spine01", "spine02")
    assert len(graph.links) == 4 + 4  # each node cable once, though both ends reported it
    cable = next(link for link in graph.links if Endpoint("gpu001", "mlx5_0") in (link.a, link.b))
    assert cable.seen_from == frozenset({"node", "switch"})  # the leaf's "enp12s0np0" became mlx5_0
    assert graph.peer(Endpoint("leaf02", "swp2")) == Endpoint("gpu002", "mlx5_1")
    uplinks = graph.uplinks()
    assert sorted((u.a.host, u.b.host) for u in uplinks) == [("leaf01", "spine01"), ("leaf01", "spine02"),
                                                        ("leaf02", "spine01"), ("leaf02", "spine02")]
    assert compare(graph, PLAN).clean


def test_swapped_cables_are_miswired_at_both_nics() -> None:
    seen = [("gpu001", "mlx5_0", "leaf01", "swp2"), ("gpu002", "mlx5_0", "leaf01", "swp1"),
            *AS_PLANNED[1:2], *AS_PLANNED[3:]]
    result = compare(build_graph(_node_side(seen) + _switch_side(seen), ROLES), PLAN)
    assert {(m.planned.node, m.planned.nic, m.seen) for m in result.miswired} == {
        ("gpu001", "mlx5_0", Endpoint("leaf01", "swp2")), ("gpu002", "mlx5_0", Endpoint("leaf01", "swp1"))}
    assert not result.missing and not result.unexpected


def test_a_miswire_seen_only_from_the_switch_names_who_is_really_there() -> None:
    seen = [("gpu001", "mlx5_0", "leaf01", "swp2"), ("gpu002", "mlx5_0", "leaf01", "swp1")]
    result = compare(build_graph(_switch_side(seen), ROLES), PLAN[::2])
    assert {(m.planned.node, m.seen.host) for m in result.miswired} == {("gpu001", "gpu002"), ("gpu002", "gpu001")}


def test_an_unmapped_netdev_of_the_right_node_is_not_a_miswire() -> None:
    # The node never reported its ports, so "enp12s0np0" cannot be told from mlx5_0: no verdict.
    result = compare(build_graph(_switch_side(AS_PLANNED[:1]), ROLES), PLAN[:1])
    assert result.clean


def test_missing_cable_unless_its_node_is_silent_and_unexpected_cables() -> None:
    ports = _node_side(AS_PLANNED[:3]) + _switch_side([("gpu002", "mlx5_1", "leaf02", "swp7")])
    plan = [*PLAN[:3], PlannedCable("gpu002", "mlx5_1", "leaf02", "swp2")]
    result = compare(build_graph(ports, ROLES), plan)
    # gpu002 mlx5_1 has no LLDP of its own; the leaf sees an unmapped netdev of gpu002 on swp7 only.
    assert result.missing == (PlannedCable("gpu002", "mlx5_1", "leaf02", "swp2"),)
    assert [(u.a, u.b) for u in result.unexpected] == [(Endpoint("gpu002", "enp13s0np0"), Endpoint("leaf02", "swp7"))]
    silent = compare(build_graph(ports, ROLES), plan, silent=["gpu002"])
    assert not silent.missing


def test_no_plan_no_verdict() -> None:
    assert compare(build_graph(_node_side(AS_PLANNED), ROLES), []).clean


def test_ibnetdiscover_ports_become_one_graph_with_hosts_and_switch_ports() -> None:
    parsed = parse_ibnetdiscover((FIXTURES / "infiniband_exporter-ibnetdiscover-p-edr.txt").read_text())
    records = ib_port_records(parsed.links)
    assert PortRecord("o0001", "HCA-1", "1", link_layer="InfiniBand", peer_host="ib-i1l1s01",
                      peer_port="10") in records
    roles = {"o0001": "node", "o0002": "node", "p0001": "node", "ib-i1l1s01": "leaf", "ib-i1l2s01": "spine",
             "ib-i4l1s01": "leaf"}
    graph = build_graph(records, roles)
    assert graph.peer(Endpoint("ib-i1l1s01", "11")) == Endpoint("o0002", "HCA-1")
    assert [(u.a, u.b) for u in graph.uplinks()] == [(Endpoint("ib-i1l1s01", "1"), Endpoint("ib-i1l2s01", "1"))]
    cable = next(link for link in graph.links if Endpoint("o0001", "HCA-1") in (link.a, link.b))
    assert cable.seen_from == frozenset({"ib"}) and cable.link_layer == "InfiniBand"
    plan = [PlannedCable("o0001", "HCA-1", "ib-i1l1s01", "10"), PlannedCable("p0001", "HCA-1", "ib-i4l1s01", "36")]
    result = compare(graph, plan)
    assert [(m.planned.node, m.seen) for m in result.miswired] == [("p0001", Endpoint("ib-i4l1s01", "35"))]
