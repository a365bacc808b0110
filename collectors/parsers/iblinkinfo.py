"""Parser for ``iblinkinfo`` (infiniband-diags): every port of the fabric and its peer.

Sections start with ``CA: <desc>:`` or ``Switch: <guid> <desc>:``; each port line
reads ``[portguid] LID PORT[ext] ==( WIDTH SPEED Gbps STATE/ PHYS)==> PEERLID
PEERPORT[ext] "peer desc" ( comment )``. Down ports have no width/speed and an
empty peer. ``grep``-filtered output (no section lines) is accepted: the
ports then have no node kind or name. ``lane_speed_gbps`` is the per-lane
signalling rate as printed (25.78125 for EDR); ``signal_rate_gbps`` is lanes x that (103.125 for 4X EDR, whose data rate is 100).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem
from fleet.collectors.parsers.problem_log import ProblemLog, to_float

_LINK_RE = re.compile(
    r"^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[\s*([^\]]*?)\s*\]\s*"
    r"==\(\s*(.*?)\s*\)==>\s*"
    r"(?:(\d+)\s+)?(\d+)?\[\s*([^\]]*?)\s*\]\s*"
    r'"(.*)"\s*\(\s*(.*?)\s*\)\s*$'
)
_LINK_BODY_RE = re.compile(r"^(?:(\d+X)\s+([0-9.]+)\s*Gbps\s+)?(\S+?)/\s*(\S+)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class IblinkPort:
    node_kind: str  # "CA" | "Switch" | "" (section line not in the capture)
    node_name: str  # section's node description
    node_guid: str  # switch GUID from the section line, else ""
    port_guid: str  # CA port GUID printed at the start of the line, else ""
    lid: int
    port: int
    ext_port: str  # text inside "[ ]" after the port, usually empty
    width: str  # "4X"; "" for down ports
    lane_speed_gbps: float | None  # per-lane rate as printed: 10.0, 25.78125
    signal_rate_gbps: float | None  # lanes x lane speed as printed (4X EDR: 103.125)
    state: str  # "Active", "Down", "Init", "Armed"
    phys_state: str  # "LinkUp", "Polling", "Disabled"
    peer_lid: int | None
    peer_port: int | None
    peer_ext_port: str
    peer_description: str  # "" for unconnected ports
    comment: str  # text of the trailing "( ... )", e.g. "Could be 14.0625 Gbps"


@dataclass(frozen=True, slots=True)
class IblinkinfoResult:
    ports: tuple[IblinkPort, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def down_ports(self) -> tuple[IblinkPort, ...]:
        """Ports whose logical state is not Active."""
        return tuple(p for p in self.ports if p.state.lower() != "active")


def parse_iblinkinfo(text: str) -> IblinkinfoResult:
    """Parse ``iblinkinfo`` output (full or grep-filtered); never raises."""
    log = ProblemLog()
    ports: list[IblinkPort] = []
    kind = name = guid = ""
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("CA:") and stripped.endswith(":"):
            kind, name, guid = "CA", stripped[3:-1].strip(), ""
            continue
        if stripped.startswith("Switch:") and stripped.endswith(":"):
            first, _, rest = stripped[7:-1].strip().partition(" ")
            if first.startswith("0x"):
                kind, name, guid = "Switch", rest.strip(), first
            else:
                kind, name, guid = "Switch", stripped[7:-1].strip(), ""
            continue
        m = _LINK_RE.match(stripped)
        if m is None:
            log.unknown(line_no, line)
            continue
        body = _LINK_BODY_RE.match(m.group(5))
        if body is None:
            log.add(line_no, line, f"link state {m.group(5)!r} not understood")
            width, lane, state, phys = "", None, m.group(5), ""
        else:
            width = body.group(1) or ""
            lane = to_float(body.group(2)) if body.group(2) else None
            state, phys = body.group(3), body.group(4)
        lanes = width.upper().rstrip("X")
        ports.append(
            IblinkPort(
                node_kind=kind,
                node_name=name,
                node_guid=guid,
                port_guid=m.group(1) or "",
                lid=int(m.group(2)),
                port=int(m.group(3)),
                ext_port=m.group(4),
                width=width,
                lane_speed_gbps=lane,
                signal_rate_gbps=int(lanes) * lane if lane is not None and lanes.isdigit() else None,
                state=state,
                phys_state=phys,
                peer_lid=int(m.group(6)) if m.group(6) else None,
                peer_port=int(m.group(7)) if m.group(7) else None,
                peer_ext_port=m.group(8),
                peer_description=m.group(9),
                comment=m.group(10),
            )
        )
    return IblinkinfoResult(tuple(ports), log.freeze(), log.unknown_lines)
