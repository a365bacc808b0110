"""The simulated fabric's machines, addresses and cables, as designed.

Rail-optimized: NIC ``mlx5_r`` of every node in leaf group ``g`` is cabled to
leaf ``leaf_name(g, r)``, on the port whose number is the node's position in
its group; every leaf has one uplink to every spine, after its node ports.
Switch ports are named as the switch OS names them: ``swp1..`` on Cumulus
(NVUE), ``Ethernet0, Ethernet4..`` on SONiC (4 SerDes lanes per port).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from fleet.fabric.naming import (
    HEAD_NAME,
    RAILS_PER_NODE,
    leaf_name,
    nic_name,
    node_name,
    spine_name,
)
from fleet.simulator.scenario import FabricSpec

ADDRESS_BASE = ipaddress.IPv4Address("127.42.0.0")
"""Loopback block the simulator's listeners use: host k (nodes, leaves, spines, head) gets base + k + 1."""


@dataclass(frozen=True, slots=True)
class Cable:
    """One row of the cabling plan: a node NIC and the switch port it plugs into."""

    node: str
    nic: str
    switch: str
    port: str


@dataclass(frozen=True, slots=True)
class Uplink:
    leaf: str
    leaf_port: str
    spine: str
    spine_port: str


def switch_port_name(os_name: str, index: int) -> str:
    """Port ``index`` (from 0) as the switch OS names it."""
    return f"Ethernet{4 * index}" if os_name == "sonic" else f"swp{index + 1}"


class Topology:
    """Names, addresses and designed cabling of one fabric (pure; miswires live in faults)."""

    def __init__(self, fabric: FabricSpec, switch_os: Mapping[str, str]) -> None:
        self.fabric = fabric
        self.nodes: tuple[str, ...] = tuple(node_name(i + 1) for i in range(fabric.nodes))
        self.leaves: tuple[str, ...] = tuple(
            leaf_name(g, r) for g in range(fabric.groups) for r in range(RAILS_PER_NODE)
        )
        self.spines: tuple[str, ...] = tuple(spine_name(i + 1) for i in range(fabric.spines))
        self.head = HEAD_NAME
        self._os = dict(switch_os)
        self._node_index = {name: i for i, name in enumerate(self.nodes)}
        self._leaf_index = {name: i for i, name in enumerate(self.leaves)}
        self._port_names: dict[str, tuple[str, ...]] = {}
        self._port_numbers: dict[str, dict[str, int]] = {}
        self._cables: dict[tuple[str, int], Cable] = {}

    # ------------------------------------------------------------------ machines

    @property
    def switches(self) -> tuple[str, ...]:
        return self.leaves + self.spines

    @property
    def hosts(self) -> tuple[str, ...]:
        """Every machine with an SSH listener, in address order."""
        return (*self.nodes, *self.leaves, *self.spines, self.head)

    def os_of(self, switch: str) -> str:
        return self._os.get(switch, "cumulus")

    def role_of(self, host: str) -> str:
        if host in self._node_index:
            return "node"
        if host in self._leaf_index:
            return "leaf"
        if host == self.head:
            return "head"
        return "spine"

    def node_index(self, node: str) -> int:
        """Position of ``node`` in the fleet, from 0."""
        return self._node_index[node]

    def group_of(self, node: str) -> int:
        return self._node_index[node] // self.fabric.nodes_per_leaf

    def leaf_index(self, leaf: str) -> int:
        return self._leaf_index[leaf]

    def leaf_group_rail(self, leaf: str) -> tuple[int, int]:
        index = self._leaf_index[leaf]
        return index // RAILS_PER_NODE, index % RAILS_PER_NODE

    @cached_property
    def addresses(self) -> dict[str, str]:
        """Loopback address of every machine."""
        return {host: str(ADDRESS_BASE + k + 1) for k, host in enumerate(self.hosts)}

    # ------------------------------------------------------------------ ports and cables

    def port_name(self, switch: str, index: int) -> str:
        return switch_port_name(self.os_of(switch), index)

    def switch_port_names(self, switch: str) -> tuple[str, ...]:
        names = self._port_names.get(switch)
        if names is None:
            names = tuple(self.port_name(switch, i) for i in range(self.port_count(switch)))
            self._port_names[switch] = names
        return names

    def port_count(self, switch: str) -> int:
        if switch in self._leaf_index:
            return self.fabric.nodes_per_leaf + self.fabric.spines
        return len(self.leaves)

    def port_index(self, switch: str, port: str) -> int:
        """Position of ``port`` among the switch's ports, from 0; ValueError for a port it lacks."""
        numbers = self._port_numbers.get(switch)
        if numbers is None:
            numbers = {name: i for i, name in enumerate(self.switch_port_names(switch))}
            self._port_numbers[switch] = numbers
        if port not in numbers:
            raise ValueError(f"{switch} has no port {port}")
        return numbers[port]

    def designed_cable(self, node: str, rail: int) -> Cable:
        """Where NIC ``rail`` of ``node`` is cabled in the design (worked out once per NIC: views ask often)."""
        cable = self._cables.get((node, rail))
        if cable is None:
            index = self._node_index[node]
            group, position = divmod(index, self.fabric.nodes_per_leaf)
            leaf = leaf_name(group, rail)
            cable = self._cables[(node, rail)] = Cable(node, nic_name(rail), leaf, self.port_name(leaf, position))
        return cable

    @cached_property
    def cabling_plan(self) -> tuple[Cable, ...]:
        """Every node NIC's cable as designed, node-major."""
        return tuple(self.designed_cable(n, r) for n in self.nodes for r in range(RAILS_PER_NODE))

    @cached_property
    def uplinks(self) -> dict[str, tuple[Uplink, ...]]:
        """Each leaf's uplinks, one per spine, in spine order."""
        result: dict[str, tuple[Uplink, ...]] = {}
        for leaf in self.leaves:
            result[leaf] = tuple(
                Uplink(
                    leaf=leaf,
                    leaf_port=self.port_name(leaf, self.fabric.nodes_per_leaf + s),
                    spine=spine,
                    spine_port=self.port_name(spine, self._leaf_index[leaf]),
                )
                for s, spine in enumerate(self.spines)
            )
        return result

    def downlink_node(self, leaf: str, port_index: int) -> str | None:
        """The node a leaf's node port ``port_index`` is designed to reach (None: unused port)."""
        group, _ = self.leaf_group_rail(leaf)
        index = group * self.fabric.nodes_per_leaf + port_index
        if port_index >= self.fabric.nodes_per_leaf or index >= len(self.nodes):
            return None
        return self.nodes[index]

    def spine_port_leaf(self, spine: str, port_index: int) -> Uplink:
        leaf = self.leaves[port_index]
        return self.uplinks[leaf][self.spines.index(spine)]

    def cabling_csv(self) -> str:
        """The cabling plan as CSV with a header ``node,nic,switch,port``."""
        rows = ["node,nic,switch,port"]
        rows += [f"{c.node},{c.nic},{c.switch},{c.port}" for c in self.cabling_plan]
        return "\n".join(rows) + "\n"
