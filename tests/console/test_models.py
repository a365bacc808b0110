"""The pure parts under the screens: the `/` filter and the topology model."""

from __future__ import annotations

import pytest

from fleet.console.filtering import FilterError, parse_filter
from fleet.console.snapshot import Snapshot
from fleet.console.topology_model import PlannedCable, balance_bars, build_topology, leaf_group_rail
from fleet.console.view_model import NodeRow
from fleet.fabric.health import Health
from fleet.fabric.records import HostRecord, PortRecord


def node(name: str, health: Health = Health.OK, state: str = "ok", group: int = 0,
         jobs: tuple[str, ...] = (), tenants: tuple[str, ...] = (), worst_nic: str = "mlx5_0") -> NodeRow:
    return NodeRow(name, health, state, (), group, worst_nic, None, None, None, None, 0.0, None,
                   None, None, (), jobs, tenants)


ROWS = [
    node("gpu001", jobs=("7",), tenants=("acme",)),
    node("gpu002", Health.DEGRADED, "degraded", worst_nic="mlx5_3", jobs=("7",), tenants=("acme",)),
    node("gpu010", Health.DOWN, "host_key_mismatch", group=1),
    node("gpu011", Health.DOWN, "unreachable", group=1, jobs=("8",), tenants=("globex",)),
]


def names(text: str) -> list[str]:
    predicate = parse_filter(text)
    return [r.name for r in ROWS if predicate.matches(r)]


def test_filter_words() -> None:
    assert names("") == ["gpu001", "gpu002", "gpu010", "gpu011"]
    assert names("gpu[001-002,011]") == ["gpu001", "gpu002", "gpu011"]
    assert names("state:down") == ["gpu010", "gpu011"]
    assert names("state:host_key_mismatch") == ["gpu010"]
    assert names("job:7 state:degraded") == ["gpu002"]
    assert names("tenant:GLOBEX") == ["gpu011"]
    assert names("group:1 !state:unreachable") == ["gpu010"]
    assert names("mlx5_3") == ["gpu002"]
    assert names("01") == ["gpu001", "gpu010", "gpu011"]


def test_filter_errors_say_what_is_wrong() -> None:
    with pytest.raises(FilterError, match="unknown field"):
        parse_filter("rack:3")
    with pytest.raises(FilterError, match="group is a number"):
        parse_filter("group:a")
    with pytest.raises(FilterError, match=r"gpu\[001-"):
        parse_filter("gpu[001-")


def snapshot(ports: list[PortRecord], values: dict[str, dict[tuple[str, str, str], float]]) -> Snapshot:
    hosts = (HostRecord("gpu001", "node", group=0), HostRecord("gpu002", "node", group=0),
             HostRecord("leaf01", "leaf"), HostRecord("leaf02", "leaf"), HostRecord("spine01", "spine"))
    return Snapshot(moment_ts=0.0, live=True, hosts=hosts, statuses={}, values=values, error_deltas={},
                    jobs=(), events=(), ports=tuple(ports), newest_sample_ts=None)


def test_topology_balance_and_cabling_against_the_naming_plan() -> None:
    ports = [
        PortRecord("gpu001", "mlx5_0", "1", peer_host="leaf01", peer_port="swp1"),
        PortRecord("gpu001", "mlx5_1", "1", peer_host="leaf01", peer_port="swp2"),  # plan: leaf02
        PortRecord("gpu001", "mlx5_2", "1"),  # no neighbour seen, where its node's others are
        PortRecord("gpu002", "mlx5_0", "1"),  # no neighbour read from this node at all (down, or no LLDP yet)
        PortRecord("leaf01", "swp31", "", peer_host="spine01", peer_port="swp1"),
        PortRecord("leaf01", "swp32", "", peer_host="spine01", peer_port="swp2"),
        PortRecord("leaf01", "swp2", "", peer_host="gpu001", peer_port="mlx5_1"),
    ]
    values = {"leaf01": {("sw_util_pct", "swp31", ""): 90.0, ("sw_util_pct", "swp32", ""): 10.0,
                         ("sw_oper_up", "swp31", ""): 1.0, ("sw_oper_up", "swp32", ""): 1.0}}
    view = build_topology(snapshot(ports, values))
    assert [s.name for s in view.switches] == ["spine01", "leaf01", "leaf02"]
    leaf = view.switches[1]
    assert leaf.uplink_utils == (90.0, 10.0) and leaf.imbalance_pct == 80.0
    assert balance_bars(leaf.uplink_utils) == "▇▁"
    assert leaf.cable_problems == 1
    swp2 = next(link for link in leaf.links if link.port == "swp2")
    assert swp2.cable.startswith("miswired: plan says gpu001 mlx5_1 → leaf02")
    assert any("gpu001 mlx5_2: no link seen" in p for p in view.cable_problems)
    assert not any(p.startswith("gpu002") for p in view.cable_problems)


def test_an_inventory_plan_with_ports_wins_over_naming() -> None:
    ports = [PortRecord("gpu001", "mlx5_0", "1", peer_host="leaf01", peer_port="swp7"),
             PortRecord("leaf01", "swp7", "", peer_host="gpu001", peer_port="mlx5_0")]
    view = build_topology(snapshot(ports, {}), [PlannedCable("gpu001", "mlx5_0", "leaf01", "swp1")])
    assert view.cable_problems == ("gpu001 mlx5_0 reaches leaf01 swp7, plan says leaf01 swp1",)


def test_leaf_names_give_group_and_rail() -> None:
    assert leaf_group_rail("leaf11") == (1, 2)
    assert leaf_group_rail("leaf01") == (0, 0)
    assert leaf_group_rail("tor-a") == (-1, -1)
