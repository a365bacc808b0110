"""Pure view of the fabric for the Topology screen: switches, their links, uplink balance, and
cables that differ from the plan.

The cabling plan is the inventory's (``CablingRow``s) when it has one, else the
naming convention of ``fleet.fabric.naming`` (NIC ``mlx5_r`` of a group-``g`` node goes to
``leaf_name(g, r)``), which is how the simulated and the reference fabrics are built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fleet.console.snapshot import Snapshot
from fleet.fabric.naming import RAILS_PER_NODE, leaf_name

_LEAF = re.compile(r"^leaf(\d+)$")
_NIC = re.compile(r"^mlx5_(\d+)$")


@dataclass(frozen=True, slots=True)
class PlannedCable:
    node: str
    nic: str
    switch: str
    port: str = ""  # "" when the plan names only the switch


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One switch port, what it reaches, and whether that agrees with the plan."""

    port: str
    peer_host: str
    peer_port: str
    oper_up: bool | None
    util_pct: float | None
    rx_gbps: float | None
    tx_gbps: float | None
    drops_delta: float
    pfc_pause: float | None
    uplink: bool
    cable: str
    """"" when as planned; else "miswired: plan says …" or "missing"."""


@dataclass(frozen=True, slots=True)
class SwitchRow:
    name: str
    role: str
    group: int
    rail: int
    ports_up: int
    ports_total: int
    max_util_pct: float | None
    uplink_utils: tuple[float, ...]
    """Utilization % of each uplink (leaves) in port order: the ECMP balance."""
    drops_delta: float
    cable_problems: int
    links: tuple[LinkRow, ...]

    @property
    def imbalance_pct(self) -> float | None:
        """Spread between the busiest and the idlest uplink, percentage points."""
        return max(self.uplink_utils) - min(self.uplink_utils) if len(self.uplink_utils) > 1 else None


@dataclass(frozen=True, slots=True)
class TopologyView:
    switches: tuple[SwitchRow, ...]
    cable_problems: tuple[str, ...]
    """Every miswired or missing cable in words, for the summary line."""


def plan_from_naming(snapshot: Snapshot) -> tuple[PlannedCable, ...]:
    """The plan the naming convention implies, for nodes whose leaf group is known."""
    plan = []
    for host in snapshot.hosts:
        if host.role != "node" or host.group < 0:
            continue
        for p in snapshot.ports:
            match = _NIC.match(p.device)
            if p.host == host.name and match:
                plan.append(PlannedCable(host.name, p.device, leaf_name(host.group, int(match.group(1)))))
    return tuple(plan)


def leaf_group_rail(name: str) -> tuple[int, int]:
    """(group, rail) of a leaf named by ``fleet.fabric.naming``; (-1, -1) for other names."""
    match = _LEAF.match(name)
    if not match:
        return (-1, -1)
    number = int(match.group(1)) - 1
    return divmod(number, RAILS_PER_NODE)


def build_topology(snapshot: Snapshot, plan: Sequence[PlannedCable] = ()) -> TopologyView:
    roles = {h.name: h.role for h in snapshot.hosts}

    def role(name: str) -> str:
        return roles.get(name) or ("spine" if name.startswith("spine") else
                                   "leaf" if name.startswith("leaf") else "node")

    switches = sorted({h.name for h in snapshot.hosts if h.role in ("leaf", "spine")}
                      | {p.host for p in snapshot.ports if role(p.host) in ("leaf", "spine")})
    actual = {(p.host, p.device): p for p in snapshot.ports}
    seen = {p.host for p in snapshot.ports if p.peer_host}
    cable_at: dict[tuple[str, str], str] = {}
    problems: list[str] = []
    for cable in plan or plan_from_naming(snapshot):
        if cable.node not in seen:
            continue  # no neighbour read from this node at all (down, hung, no LLDP yet): nothing to compare
        nic = actual.get((cable.node, cable.nic))
        if nic is None or not nic.peer_host:
            text = "missing"
            problems.append(f"{cable.node} {cable.nic}: no link seen (plan: {cable.switch} {cable.port})".strip())
            if cable.port:
                cable_at[(cable.switch, cable.port)] = text
        elif nic.peer_host != cable.switch or (cable.port and nic.peer_port and nic.peer_port != cable.port):
            text = f"miswired: plan says {cable.node} {cable.nic} → {cable.switch} {cable.port}".strip()
            problems.append(f"{cable.node} {cable.nic} reaches {nic.peer_host} {nic.peer_port}, "
                            f"plan says {cable.switch} {cable.port}".strip())
            cable_at[(nic.peer_host, nic.peer_port)] = text
            if cable.port:
                cable_at.setdefault((cable.switch, cable.port), f"missing: {cable.node} {cable.nic} went elsewhere")
    rows = []
    for name in switches:
        rows.append(_switch_row(name, role(name), snapshot, role, cable_at))
    rows.sort(key=lambda r: (r.role != "spine", r.group, r.rail, r.name))
    return TopologyView(tuple(rows), tuple(problems))


def _switch_row(name: str, role: str, snapshot: Snapshot, role_of: Callable[[str], str],
                cable_at: Mapping[tuple[str, str], str]) -> SwitchRow:
    values = snapshot.values.get(name, {})
    deltas = snapshot.error_deltas.get(name, {})
    ports = sorted((p for p in snapshot.ports if p.host == name), key=lambda p: _port_order(p.device))
    links = []
    for p in ports:
        def value(metric: str, device: str = p.device) -> float | None:
            return values.get((metric, device, ""))

        up = value("sw_oper_up")
        peer_role = role_of(p.peer_host) if p.peer_host else ""
        links.append(LinkRow(
            port=p.device, peer_host=p.peer_host, peer_port=p.peer_port,
            oper_up=None if up is None else up >= 1, util_pct=value("sw_util_pct"),
            rx_gbps=value("sw_rx_gbps"), tx_gbps=value("sw_tx_gbps"),
            drops_delta=sum(d for (m, dev, _), d in deltas.items() if dev == p.device and m.endswith("drops")),
            pfc_pause=value("sw_rx_pfc_pause"),
            uplink=role == "leaf" and peer_role == "spine",
            cable=cable_at.get((name, p.device), ""),
        ))
    group, rail = leaf_group_rail(name)
    utils = [link.util_pct for link in links if link.util_pct is not None]
    return SwitchRow(
        name=name, role=role, group=group, rail=rail,
        ports_up=sum(1 for link in links if link.oper_up), ports_total=len(links),
        max_util_pct=max(utils) if utils else None,
        uplink_utils=tuple(link.util_pct or 0.0 for link in links if link.uplink),
        drops_delta=sum(link.drops_delta for link in links),
        cable_problems=sum(1 for link in links if link.cable), links=tuple(links),
    )


def _port_order(port: str) -> tuple[str, int]:
    digits = re.search(r"(\d+)$", port)
    return (port[: digits.start()] if digits else port, int(digits.group(1)) if digits else 0)


BARS = " ▁▂▃▄▅▆▇█"


def balance_bars(utils: Sequence[float]) -> str:
    """One block per uplink, height by utilization: an unbalanced leaf is visibly ragged."""
    return "".join(BARS[min(len(BARS) - 1, max(0, round(u / 100 * (len(BARS) - 1))))] for u in utils)
