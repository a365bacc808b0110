"""The Topology screen's picture as data: spines above, leaves (or leaf groups) below, and one
cell per spine and leaf column for the uplinks between them, each with its utilisation and
its marks (down, hot, miswired, dropping). Pure: built from ``TopologyView``, the leaves'
ECMP balances and the open findings; the widget (``widgets/fabric_map.py``) only draws it.

A fabric of 1,024 nodes has hundreds of leaves: when one column per leaf does not fit the
width, a column stands for a leaf group (its eight rail leaves), its cells the worst of the
group's uplinks to that spine, and the details under the picture list the group's leaves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from fleet.console.topology_model import LinkRow, SwitchRow, TopologyView
from fleet.fabric.ecmp import LeafBalance
from fleet.fabric.events import Event, Severity

HOT_PCT = 80.0
"""A link above 80 % of its speed is hot: above it queues build and PFC starts (docs/domain.md)."""


class State(IntEnum):
    """Worse is larger; a column or a box takes its worst part's."""

    OK = 0
    UNKNOWN = 1
    WARN = 2
    BAD = 3


@dataclass(frozen=True, slots=True)
class LinkCell:
    """The uplinks between one spine and one leaf column (one leaf, or a group's leaves)."""

    spine: str
    links: tuple[tuple[str, LinkRow], ...]
    """(leaf, the leaf's port towards this spine) for every uplink in the cell."""
    util_pct: float | None
    """The busiest uplink's utilisation."""
    down: int
    """Uplinks not up."""
    hot: int
    miswired: int
    drops: float
    state: State

    @property
    def mark(self) -> str:
        """One glyph that says the worst thing in words a screen reader and a projector keep."""
        if self.down:
            return "×"
        if self.miswired:
            return "≠"
        if self.drops:
            return "!"
        if self.hot:
            return "▲"
        return ""


@dataclass(frozen=True, slots=True)
class LeafColumn:
    """One column of the picture: a leaf, or a leaf group when leaves do not fit."""

    key: str
    """The leaf's name, or ``group N``."""
    label: str
    """What the leaves row shows (``03`` for leaf03, ``g2`` for group 2)."""
    leaves: tuple[str, ...]
    group: int
    state: State
    node_ports_down: int
    cable_problems: int
    balance: LeafBalance | None
    """The leaf's ECMP balance (a single leaf only)."""


@dataclass(frozen=True, slots=True)
class SpineBox:
    name: str
    state: State
    util_pct: float | None
    ports_up: int
    ports_total: int
    drops: float
    findings: tuple[Event, ...]
    """Open findings on this spine (the diagnosis' events), newest first."""


@dataclass(frozen=True, slots=True)
class FabricPicture:
    spines: tuple[SpineBox, ...]
    columns: tuple[LeafColumn, ...]
    cells: Mapping[tuple[int, int], LinkCell]
    """(spine index, column index) -> the uplinks between them; absent: none cabled."""
    grouped: bool
    """Columns are leaf groups, not leaves."""
    findings: Mapping[str, tuple[Event, ...]]
    """Open findings per switch."""


def open_switch_findings(events: Iterable[Event]) -> dict[str, tuple[Event, ...]]:
    """Per switch, its findings that are open now: raised (warning or worse) and not cleared,
    newest first. ``events``: newest first, as the snapshot holds them."""
    closed: set[tuple[str, str, str]] = set()
    found: dict[str, list[Event]] = {}
    for event in events:
        switch = event.switch or ""
        if not switch or not event.data.get("finding"):
            continue
        key = (event.kind, switch, event.port)
        if event.data.get("cleared"):
            closed.add(key)
            continue
        if key in closed or event.severity is Severity.INFO:
            continue
        closed.add(key)  # an older raise of the same finding is the same finding
        found.setdefault(switch, []).append(event)
    return {switch: tuple(events) for switch, events in found.items()}


def _link_state(link: LinkRow) -> State:
    if link.oper_up is False or link.cable or link.drops_delta:
        return State.BAD
    if link.util_pct is not None and link.util_pct >= HOT_PCT:
        return State.WARN
    if link.oper_up is None:
        return State.UNKNOWN
    return State.OK


def _cell(spine: str, links: Sequence[tuple[str, LinkRow]]) -> LinkCell:
    utils = [link.util_pct for _leaf, link in links if link.util_pct is not None]
    return LinkCell(
        spine=spine, links=tuple(links), util_pct=max(utils) if utils else None,
        down=sum(1 for _l, link in links if link.oper_up is False),
        hot=sum(1 for _l, link in links if (link.util_pct or 0.0) >= HOT_PCT),
        miswired=sum(1 for _l, link in links if link.cable),
        drops=sum(link.drops_delta for _l, link in links),
        state=max((_link_state(link) for _l, link in links), default=State.UNKNOWN),
    )


def _leaf_state(leaf: SwitchRow, balance: LeafBalance | None, findings: Sequence[Event]) -> State:
    node_links = [link for link in leaf.links if not link.uplink]
    if findings and any(e.severity is Severity.CRITICAL for e in findings):
        return State.BAD
    if any(link.oper_up is False or link.cable for link in node_links) or leaf.drops_delta:
        return State.BAD
    if findings or (balance is not None and (balance.flagged or balance.warning)):
        return State.WARN
    return State.OK


def build_picture(topology: TopologyView, balances: Mapping[str, LeafBalance], events: Iterable[Event],
                  max_columns: int) -> FabricPicture:
    """The picture with one column per leaf when ``max_columns`` allows, else per leaf group."""
    findings = open_switch_findings(events)
    spines = [s for s in topology.switches if s.role == "spine"]
    leaves = [s for s in topology.switches if s.role == "leaf"]
    groups = sorted({leaf.group for leaf in leaves})
    grouped = len(leaves) > max_columns and len(groups) > 1
    by_name = {s.name: s for s in topology.switches}
    columns: list[LeafColumn] = []
    if grouped:
        for group in groups:
            members = [leaf for leaf in leaves if leaf.group == group]
            states = [_leaf_state(m, balances.get(m.name), findings.get(m.name, ())) for m in members]
            columns.append(LeafColumn(
                key=f"group {group}", label=f"g{group}", leaves=tuple(m.name for m in members), group=group,
                state=max(states, default=State.UNKNOWN),
                node_ports_down=sum(_node_ports_down(m) for m in members),
                cable_problems=sum(m.cable_problems for m in members), balance=None))
    else:
        for leaf in leaves:
            columns.append(LeafColumn(
                key=leaf.name, label=_short(leaf.name), leaves=(leaf.name,), group=leaf.group,
                state=_leaf_state(leaf, balances.get(leaf.name), findings.get(leaf.name, ())),
                node_ports_down=_node_ports_down(leaf), cable_problems=leaf.cable_problems,
                balance=balances.get(leaf.name)))
    spine_index = {s.name: i for i, s in enumerate(spines)}
    cells: dict[tuple[int, int], LinkCell] = {}
    for c, column in enumerate(columns):
        per_spine: dict[int, list[tuple[str, LinkRow]]] = {}
        for leaf_name in column.leaves:
            for link in by_name[leaf_name].links:
                if link.uplink and link.peer_host in spine_index:
                    per_spine.setdefault(spine_index[link.peer_host], []).append((leaf_name, link))
        for s, links in per_spine.items():
            cells[(s, c)] = _cell(spines[s].name, links)
    boxes = []
    for spine in spines:
        mine = findings.get(spine.name, ())
        state = State.OK
        if spine.drops_delta or any(e.severity is Severity.CRITICAL for e in mine):
            state = State.BAD
        elif mine or spine.ports_up < spine.ports_total:
            state = State.WARN
        boxes.append(SpineBox(spine.name, state, spine.max_util_pct, spine.ports_up, spine.ports_total,
                              spine.drops_delta, mine))
    return FabricPicture(tuple(boxes), tuple(columns), cells, grouped, findings)


def _node_ports_down(leaf: SwitchRow) -> int:
    return sum(1 for link in leaf.links if not link.uplink and link.oper_up is False)


def _short(leaf: str) -> str:
    """``leaf03`` -> ``03``: the leaves row has three cells a leaf."""
    digits = leaf[len(leaf.rstrip("0123456789")):]
    return digits[-3:] if digits else leaf[:3]
