"""Parser for ``ibnetdiscover`` (infiniband-diags): the IB fabric as the SM sees it.

Two layouts:

- the default topology file: per node ``vendid=``/``devid=``/``*guid=`` lines, a
  node line (``Switch 36 "S-<guid>" # "desc" base port 0 lid 2 lmc 0`` or
  ``Ca 2 "H-<guid>" # "desc"``) and one line per connected port
  (``[1] "H-<guid>"[1](<portguid>) # "peer desc" lid 3 4xEDR`` on switches,
  ``[1](<portguid>) "S-<guid>"[3] # lid 4 lmc 0 "peer desc" lid 2 4xEDR`` on CAs);
- ``-p`` (ports): one line per port,
  ``CA 134 1 0x<guid> 4x EDR - SW 1719 10 0x<guid> ( 'desc' - 'peer desc' )``,
  or without a peer (``4x ???`` or a bare speed) for ports with no link.

Every port line becomes an :class:`IbLink` from the local port to its peer, so
each cable appears twice (once from each end), as the tool prints it. Rates are
nominal data rates in Gb/s (``4x EDR`` = 100), see ``ibfields.LANE_GBPS``.
Node descriptions may contain ``#`` (``"Voltaire 4036 # v4036"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.ibfields import link_rate_gbps
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import LID, LMC, PORT, U8, Range

_KIND = {"Switch": "SW", "Ca": "CA", "Rt": "RT", "S": "SW", "H": "CA", "R": "RT"}

# Numbers are ASCII and bounded (a LID has 5 digits, a port 3): a 5,000-digit "LID" is no
# line of ibnetdiscover's. Values past their field's width are refused below (``_fits``).
_NODE_RE = re.compile(
    r'^(Switch|Ca|Rt)\s+([0-9]{1,3})\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"(.*)"\s*(.*))?$', re.ASCII
)
_PORT_RE = re.compile(
    r"^\[([0-9]{1,3})\](?:\[ext ([0-9]{1,3})\])?(?:\(([0-9a-fA-F]{1,16})\))?\s+"
    r'"([SHR])-([0-9a-fA-F]{1,16})"\[([0-9]{1,3})\](?:\[ext ([0-9]{1,3})\])?(?:\(([0-9a-fA-F]{1,16})\))?'
    r"\s*(?:#\s*(.*))?$",
    re.ASCII,
)
_PORT_COMMENT_RE = re.compile(
    r'^(?:lid\s+([0-9]{1,5})\s+lmc\s+([0-9]{1,3})\s+)?"(.*)"\s+lid\s+([0-9]{1,5})\s+([0-9]{1,2}x)(\w+)', re.ASCII
)
_LID_RE = re.compile(r"\blid\s+([0-9]{1,5})\b", re.ASCII)
# -p: the fixed head of a port line; the rest (peer, descriptions) is read by _ports_fields.
_PORTS_HEAD_RE = re.compile(
    r"^(CA|SW|RT)\s+([0-9]{1,5})\s+([0-9]{1,3})\s+(0x[0-9a-fA-F]{1,16})\s+([0-9]{1,2}x)\s+(\S+)", re.ASCII
)
_PORTS_PEER_RE = re.compile(
    r"^-\s+(CA|SW|RT)\s+([0-9]{1,5})\s+([0-9]{1,3})\s+(0x[0-9a-fA-F]{1,16})\s+\((.*)\)$", re.ASCII
)
_DESCRIPTIONS_SEPARATOR_RE = re.compile(r"'\s+-\s+'")


class _PortsLine(NamedTuple):
    """One ``ibnetdiscover -p`` port line read apart (``peer_kind`` "" when there is no peer)."""

    kind: str
    lid: int
    port: int
    guid: str
    width: str
    speed: str
    description: str
    peer_kind: str
    peer_lid: int | None
    peer_port: int | None
    peer_guid: str
    peer_description: str


def _ports_fields(stripped: str) -> _PortsLine | None:
    """``CA 134 1 0x... 4x EDR - SW 1719 10 0x... ( 'desc' - 'peer desc' )``, or with
    ``'desc'`` (or nothing) after the speed for a port without a peer; None for anything else."""
    head = _PORTS_HEAD_RE.match(stripped)
    if head is None:
        return None
    kind, lid, port, guid, width, speed = head.groups()
    rest = stripped[head.end() :].strip()
    if not rest or (len(rest) >= 2 and rest[0] == rest[-1] == "'"):
        line = _PortsLine(kind, int(lid), int(port), guid, width, speed, rest[1:-1], "", None, None, "", "")
    else:
        peer = _PORTS_PEER_RE.match(rest)
        inner = peer.group(5).strip() if peer else ""
        separators = list(_DESCRIPTIONS_SEPARATOR_RE.finditer(inner))
        if peer is None or len(inner) < 2 or inner[0] != "'" or inner[-1] != "'" or not separators:
            return None
        cut = separators[-1]  # as a greedy "'(.*)' - '(.*)'": the last separator splits
        line = _PortsLine(
            kind, int(lid), int(port), guid, width, speed, inner[1 : cut.start()],
            peer.group(1), int(peer.group(2)), int(peer.group(3)), peer.group(4), inner[cut.end() : -1],
        )  # fmt: skip
    fits = LID.holds(line.lid) and PORT.holds(line.port)
    if line.peer_kind:
        fits = fits and LID.holds(line.peer_lid or 0) and PORT.holds(line.peer_port or 0)
    return line if fits else None


def _fits(m: re.Match[str], groups: dict[int, Range]) -> bool:
    """True when every matched numeric group is within its field's range."""
    return all(m.group(g) is None or where.holds(int(m.group(g))) for g, where in groups.items())


@dataclass(frozen=True, slots=True)
class IbNode:
    kind: str  # "SW" | "CA" | "RT"
    guid: str  # "0x0002c9020046c588": node GUID (topology file) / printed GUID (-p)
    description: str  # node description: "MF0;SB7700:MSB7700/U1", "n01 HCA-1"
    lid: int | None  # switch base LID; None for CAs in the topology file (per port)
    ports_count: int | None  # "Switch 36" -> 36
    vendor_id: str = ""  # "0x2c9"
    device_id: str = ""  # "0xc738"
    sys_image_guid: str = ""


@dataclass(frozen=True, slots=True)
class IbLink:
    kind: str  # local node kind
    guid: str  # local node GUID (topology) / printed GUID (-p)
    description: str
    lid: int | None
    port: int
    port_guid: str  # CA port GUID when printed, else ""
    peer_kind: str  # "" when the port has no peer
    peer_guid: str
    peer_description: str
    peer_lid: int | None
    peer_port: int | None
    peer_port_guid: str
    width: str  # "4x"
    speed: str  # "EDR"; "???" as printed for a port without link
    rate_gbps: float | None  # nominal: lanes x per-lane rate

    @property
    def connected(self) -> bool:
        return bool(self.peer_guid)


@dataclass(frozen=True, slots=True)
class IbnetdiscoverResult:
    nodes: tuple[IbNode, ...]
    links: tuple[IbLink, ...]
    layout: str  # "topology" | "ports" | "" (nothing recognised)
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _guid(hex_digits: str) -> str:
    """Normalise to ``0x`` + 16 lowercase hex digits."""
    return "0x" + hex_digits.lower().removeprefix("0x").rjust(16, "0")


class _Topology:
    """State while reading the default layout."""

    def __init__(self, log: ProblemLog) -> None:
        self.log = log
        self.nodes: list[IbNode] = []
        self.links: list[IbLink] = []
        self.header: dict[str, str] = {}
        self.node: IbNode | None = None

    def node_line(self, m: re.Match[str]) -> None:
        rest = m.group(6) or ""
        lid = _LID_RE.search(rest)
        self.node = IbNode(
            kind=_KIND[m.group(1)],
            guid=_guid(m.group(4)),
            description=m.group(5) or "",
            lid=int(lid.group(1)) if lid and LID.holds(int(lid.group(1))) else None,
            ports_count=int(m.group(2)),
            vendor_id=self.header.get("vendid", ""),
            device_id=self.header.get("devid", ""),
            sys_image_guid=self.header.get("sysimgguid", ""),
        )
        self.nodes.append(self.node)
        self.header = {}

    def port_line(self, m: re.Match[str], line_no: int, line: str) -> None:
        node = self.node
        if node is None:
            self.log.unknown(line_no, line, "port line before any node line")
            return
        comment = _PORT_COMMENT_RE.match(m.group(9) or "")
        if comment is not None and not _fits(comment, {1: LID, 2: LMC, 4: LID}):
            self.log.add(line_no, line, "LID or LMC outside its field's width")
            comment = None
        if comment is None:
            self.log.add(line_no, line, "port line without 'lid N WxSPEED' comment")
        local_lid = node.lid
        if comment is not None and comment.group(1):
            local_lid = int(comment.group(1))
        width = comment.group(5) if comment else ""
        speed = comment.group(6) if comment else ""
        self.links.append(
            IbLink(
                kind=node.kind,
                guid=node.guid,
                description=node.description,
                lid=local_lid,
                port=int(m.group(1)),
                port_guid=_guid(m.group(3)) if m.group(3) else "",
                peer_kind=_KIND[m.group(4)],
                peer_guid=_guid(m.group(5)),
                peer_description=comment.group(3) if comment else "",
                peer_lid=int(comment.group(4)) if comment else None,
                peer_port=int(m.group(6)),
                peer_port_guid=_guid(m.group(8)) if m.group(8) else "",
                width=width,
                speed=speed,
                rate_gbps=link_rate_gbps(width, speed),
            )
        )


def _ports_line(p: _PortsLine, nodes: dict[tuple[str, str], IbNode]) -> IbLink:
    guid = _guid(p.guid)
    nodes.setdefault((p.kind, guid), IbNode(p.kind, guid, p.description, p.lid, None))
    peer_guid = _guid(p.peer_guid) if p.peer_kind else ""
    if p.peer_kind:
        nodes.setdefault(
            (p.peer_kind, peer_guid), IbNode(p.peer_kind, peer_guid, p.peer_description, p.peer_lid, None)
        )
    return IbLink(
        kind=p.kind,
        guid=guid,
        description=p.description,
        lid=p.lid,
        port=p.port,
        port_guid=guid if p.kind == "CA" else "",
        peer_kind=p.peer_kind,
        peer_guid=peer_guid,
        peer_description=p.peer_description,
        peer_lid=p.peer_lid,
        peer_port=p.peer_port,
        peer_port_guid=peer_guid if p.peer_kind == "CA" else "",
        width=p.width,
        speed=p.speed,
        rate_gbps=link_rate_gbps(p.width, p.speed),
    )


@parser
def parse_ibnetdiscover(text: str) -> IbnetdiscoverResult:
    """Parse ``ibnetdiscover`` in the default or ``-p`` layout; never raises."""
    log = ProblemLog()
    topo = _Topology(log)
    ports_nodes: dict[tuple[str, str], IbNode] = {}
    ports_links: list[IbLink] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] == "#":
            continue
        first = stripped[0]
        if first == "[":
            m = _PORT_RE.match(stripped)
            if m is not None and _fits(m, {1: PORT, 2: PORT, 6: PORT, 7: PORT}):
                topo.port_line(m, line_no, line)
                continue
        elif first in "SCR":
            m = _NODE_RE.match(stripped)
            if m is not None and _fits(m, {2: U8}):
                topo.node_line(m)
                continue
            ports = _ports_fields(stripped)
            if ports is not None:
                ports_links.append(_ports_line(ports, ports_nodes))
                continue
        key, sep, value = stripped.partition("=")
        if sep and key in ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid"):
            topo.header[key] = value.strip()
            continue
        log.unknown(line_no, line)
    if topo.nodes and ports_links:
        log.add(0, "", "both topology and -p layouts found; both kept")
    layout = "topology" if topo.nodes else "ports" if ports_links else ""
    return IbnetdiscoverResult(
        nodes=tuple(topo.nodes) + tuple(ports_nodes.values()),
        links=tuple(topo.links) + tuple(ports_links),
        layout=layout,
        problems=log.freeze(),
        unknown_lines=log.unknown_lines,
    )
