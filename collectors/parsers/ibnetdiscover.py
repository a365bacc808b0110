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

from fleet.collectors.parsers.base import ParseProblem
from fleet.collectors.parsers.ibfields import link_rate_gbps
from fleet.collectors.parsers.problem_log import ProblemLog

_KIND = {"Switch": "SW", "Ca": "CA", "Rt": "RT", "S": "SW", "H": "CA", "R": "RT"}

_NODE_RE = re.compile(
    r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]+)"\s*(?:#\s*"(.*)"\s*(.*))?$'
)
_PORT_RE = re.compile(
    r"^\[(\d+)\](?:\[ext (\d+)\])?(?:\(([0-9a-fA-F]+)\))?\s+"
    r'"([SHR])-([0-9a-fA-F]+)"\[(\d+)\](?:\[ext (\d+)\])?(?:\(([0-9a-fA-F]+)\))?'
    r"\s*(?:#\s*(.*))?$"
)
_PORT_COMMENT_RE = re.compile(
    r'^(?:lid\s+(\d+)\s+lmc\s+(\d+)\s+)?"(.*)"\s+lid\s+(\d+)\s+(\d+x)(\w+)'
)
_LID_RE = re.compile(r"\blid\s+(\d+)")
_PORTS_LINE_RE = re.compile(
    r"^(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+(\d+x)\s+(\S+)\s*"
    r"(?:-\s+(CA|SW|RT)\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)"
    r"|'(.*)')?\s*$"
)


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
            lid=int(lid.group(1)) if lid else None,
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


def _ports_line(m: re.Match[str], nodes: dict[tuple[str, str], IbNode]) -> IbLink:
    kind, lid, guid = m.group(1), int(m.group(2)), _guid(m.group(4))
    peer = m.group(7) is not None
    description = m.group(11) if peer else (m.group(13) or "")
    nodes.setdefault((kind, guid), IbNode(kind, guid, description, lid, None))
    if peer:
        peer_guid = _guid(m.group(10))
        nodes.setdefault(
            (m.group(7), peer_guid), IbNode(m.group(7), peer_guid, m.group(12), int(m.group(8)), None)
        )
    width, speed = m.group(5), m.group(6)
    return IbLink(
        kind=kind,
        guid=guid,
        description=description,
        lid=lid,
        port=int(m.group(3)),
        port_guid=guid if kind == "CA" else "",
        peer_kind=m.group(7) or "",
        peer_guid=_guid(m.group(10)) if peer else "",
        peer_description=m.group(12) if peer else "",
        peer_lid=int(m.group(8)) if peer else None,
        peer_port=int(m.group(9)) if peer else None,
        peer_port_guid=_guid(m.group(10)) if peer and m.group(7) == "CA" else "",
        width=width,
        speed=speed,
        rate_gbps=link_rate_gbps(width, speed),
    )


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
            if m is not None:
                topo.port_line(m, line_no, line)
                continue
        elif first in "SCR":
            m = _NODE_RE.match(stripped)
            if m is not None:
                topo.node_line(m)
                continue
            m = _PORTS_LINE_RE.match(stripped)
            if m is not None:
                ports_links.append(_ports_line(m, ports_nodes))
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
