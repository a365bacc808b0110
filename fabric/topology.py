"""The fabric as discovered, and how it differs from the cabling plan.

Input is what the collectors recorded about cables (``PortRecord``: LLDP
neighbours seen from nodes and from switches, ``ibnetdiscover`` links for
InfiniBand) and, when there is one, the cabling plan (rows node, nic, switch,
port). Output is one graph of nodes, NICs, leaves, spines and links, and a
comparison with the plan: cables that land on another switch port than planned
(*miswired*), planned cables nobody sees (*missing*: link down, or the far end
never answered) and cables seen but not planned (*unexpected*). Leaf-to-spine
uplinks come from the switches' own LLDP: the plan only covers node cables.

Endpoints are named as engineers name them: a node end by its RDMA device
(``gpu001``/``mlx5_0``), a switch end by its port (``leaf01``/``swp1``). A
switch sees a node's netdev (``enp12s0np0``) in LLDP; it is turned into the
RDMA device with the node's own port records when those are known.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from fleet.fabric.records import PortRecord

SWITCH_ROLES = frozenset({"leaf", "spine"})


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    """One end of a cable: ``port`` is the RDMA device on a node, the port name on a switch."""

    host: str
    port: str


@dataclass(frozen=True, slots=True)
class Link:
    """A cable between two ends (``a`` < ``b``), with who reported it (``node``, ``switch``, ``ib``)."""

    a: Endpoint
    b: Endpoint
    seen_from: frozenset[str]
    link_layer: str = ""

    def other(self, end: Endpoint) -> Endpoint:
        return self.b if end == self.a else self.a


@dataclass(frozen=True, slots=True)
class PlannedCable:
    """A cable of the plan: NIC ``nic`` of ``node`` goes to ``switch`` port ``port``."""

    node: str
    nic: str
    switch: str
    port: str


@dataclass(frozen=True, slots=True)
class FabricGraph:
    """Hosts by role and the links between them, as discovered."""

    nodes: tuple[str, ...]
    nics: tuple[Endpoint, ...]
    leaves: tuple[str, ...]
    spines: tuple[str, ...]
    links: tuple[Link, ...]

    def peer(self, end: Endpoint) -> Endpoint | None:
        """Who the cable at ``end`` reaches, or None when no link is known there."""
        for link in self.links:
            if end in (link.a, link.b):
                return link.other(end)
        return None

    def uplinks(self) -> tuple[Link, ...]:
        """Leaf-to-spine links, as (leaf end, spine end) ordered links."""
        leaves, spines = set(self.leaves), set(self.spines)
        found = []
        for link in self.links:
            if link.a.host in leaves and link.b.host in spines:
                found.append(link)
            elif link.b.host in leaves and link.a.host in spines:
                found.append(Link(link.b, link.a, link.seen_from, link.link_layer))
        return tuple(sorted(found, key=lambda link: (link.a, link.b)))


@dataclass(frozen=True, slots=True)
class Miswire:
    """A planned cable that lands elsewhere: ``seen`` is where it was found (None: not seen)."""

    planned: PlannedCable
    seen: Endpoint
    seen_from: frozenset[str]


@dataclass(frozen=True, slots=True)
class TopologyComparison:
    miswired: tuple[Miswire, ...] = ()
    missing: tuple[PlannedCable, ...] = ()
    unexpected: tuple[Link, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.miswired or self.missing or self.unexpected)


class IbLinkLike(Protocol):
    """What :func:`ib_port_records` reads of an ``ibnetdiscover`` link (collectors' ``IbLink``)."""

    @property
    def kind(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def peer_kind(self) -> str: ...
    @property
    def peer_description(self) -> str: ...
    @property
    def peer_port(self) -> int | None: ...


_CA_DESC = re.compile(r"^(\S+)\s+(\S+)$")
"""mlx5 sets a CA's node description to ``<hostname> <device>`` (``gpu001 mlx5_0``, ``n01 HCA-1``)."""


def _ib_end(kind: str, description: str, port: int) -> Endpoint:
    if kind == "CA":
        match = _CA_DESC.match(description.strip())
        if match:
            return Endpoint(match.group(1), match.group(2))
        return Endpoint(description.strip(), str(port))
    return Endpoint(description.strip(), str(port))


def ib_port_records(links: Iterable[IbLinkLike]) -> list[PortRecord]:
    """``ibnetdiscover`` links as port records: a CA end is ``(host, device)``, a switch end ``(name, port)``."""
    records = []
    for link in links:
        if not link.peer_kind or link.peer_port is None:
            continue
        local = _ib_end(link.kind, link.description, link.port)
        peer = _ib_end(link.peer_kind, link.peer_description, link.peer_port)
        records.append(PortRecord(local.host, local.port, "1" if link.kind == "CA" else "",
                                  link_layer="InfiniBand", peer_host=peer.host, peer_port=peer.port))
    return records


def build_graph(ports: Sequence[PortRecord], roles: Mapping[str, str]) -> FabricGraph:
    """One graph from every port record; ``roles`` maps host -> node/leaf/spine (HostRecord.role).

    A host without a role is a node when it reports RDMA devices (``mlx5_*``)
    and a leaf otherwise; spines are only known from roles.
    """
    netdev_owner = {(p.host, p.netdev): p.device for p in ports if p.netdev and p.device}
    seen: dict[tuple[Endpoint, Endpoint], set[str]] = {}
    layer: dict[tuple[Endpoint, Endpoint], str] = {}
    hosts: dict[str, str] = dict(roles)
    for record in ports:
        if not record.peer_host:
            continue
        role = hosts.get(record.host) or _guess_role(record)
        hosts.setdefault(record.host, role)
        local = Endpoint(record.host, record.device)
        peer_port = netdev_owner.get((record.peer_host, record.peer_port), record.peer_port)
        peer = Endpoint(record.peer_host, peer_port)
        if record.peer_host not in hosts:
            hosts[record.peer_host] = "leaf" if role == "node" else "node" if peer_port.startswith("mlx") else "leaf"
        key = (local, peer) if local < peer else (peer, local)
        source = "ib" if record.link_layer == "InfiniBand" else "node" if role == "node" else "switch"
        seen.setdefault(key, set()).add(source)
        layer.setdefault(key, record.link_layer)
    links = tuple(Link(a, b, frozenset(src), layer[(a, b)]) for (a, b), src in sorted(seen.items()))
    # NICs the nodes reported themselves: a switch's view names only a netdev, which is not a device.
    nics = sorted({Endpoint(p.host, p.device) for p in ports if hosts.get(p.host) == "node" and p.device})
    return FabricGraph(
        nodes=tuple(sorted(h for h, r in hosts.items() if r == "node")),
        nics=tuple(nics),
        leaves=tuple(sorted(h for h, r in hosts.items() if r == "leaf")),
        spines=tuple(sorted(h for h, r in hosts.items() if r == "spine")),
        links=links,
    )


def _guess_role(record: PortRecord) -> str:
    return "node" if record.port == "1" or record.device.startswith("mlx") else "leaf"


def compare(graph: FabricGraph, plan: Sequence[PlannedCable], *, silent: Iterable[str] = ()) -> TopologyComparison:
    """The graph against the plan.

    A planned cable is *miswired* when either end sees something else than the
    plan's other end, *missing* when neither end sees anything there. Hosts in
    ``silent`` (unreachable or hung: no LLDP from them) are not used to call a
    cable missing; their cables are judged from the switch end alone.
    Links between a node and a switch that no plan row names at either end are
    *unexpected*. Switch-to-switch links are never judged: the plan has none.
    """
    if not plan:
        return TopologyComparison()
    silent_hosts = set(silent)
    nodes = set(graph.nodes)
    peers: dict[Endpoint, tuple[Endpoint, frozenset[str]]] = {}
    for link in graph.links:
        peers[link.a] = (link.b, link.seen_from)
        peers[link.b] = (link.a, link.seen_from)
    known_nics = set(graph.nics)
    planned_ends = {Endpoint(c.node, c.nic) for c in plan} | {Endpoint(c.switch, c.port) for c in plan}
    miswired: list[Miswire] = []
    missing: list[PlannedCable] = []
    for cable in plan:
        nic, sw = Endpoint(cable.node, cable.nic), Endpoint(cable.switch, cable.port)
        at_nic, at_sw = peers.get(nic), peers.get(sw)
        if at_nic is not None and at_nic[0] != sw:
            miswired.append(Miswire(cable, at_nic[0], at_nic[1]))
        elif at_nic is None and at_sw is not None and _other_nic(at_sw[0], nic, known_nics):
            miswired.append(Miswire(cable, at_sw[0], at_sw[1]))
        elif at_nic is None and at_sw is None and cable.node not in silent_hosts:
            missing.append(cable)
    unexpected = tuple(
        link for link in graph.links
        if (link.a.host in nodes) != (link.b.host in nodes)
        and link.a not in planned_ends and link.b not in planned_ends
    )
    return TopologyComparison(tuple(miswired), tuple(missing), unexpected)


def _other_nic(seen: Endpoint, planned: Endpoint, known_nics: set[Endpoint]) -> bool:
    """Whether a switch port's neighbour is not the planned NIC: another host, or another known device
    of the same host (a netdev name not yet mapped to its device proves nothing)."""
    if seen.host != planned.host:
        return True
    return seen in known_nics and seen != planned
