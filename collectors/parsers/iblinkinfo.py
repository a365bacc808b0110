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
from typing import NamedTuple

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import (
    LANE_RATE_GBPS,
    LID,
    PORT,
    is_digits,
    read_float,
    read_int,
)

_WIDTH_RE = re.compile(r"[0-9]{1,2}X", re.IGNORECASE)
_HEX_RE = re.compile(r"0x[0-9a-fA-F]{1,16}")


class _Link(NamedTuple):
    """A port line read apart, before its numbers are checked."""

    port_guid: str
    lid: str
    port: str
    ext_port: str
    body: str  # between "==(" and ")==>"
    peer_lid: str
    peer_port: str
    peer_ext_port: str
    peer_description: str
    comment: str


def _split_link(line: str) -> _Link | None:
    """``[guid] LID PORT[ext] ==( BODY )==> [PEERLID] [PEERPORT][ext] "desc" ( comment )``.

    Read with ``str.find`` and ``split``, never a backtracking pattern: a 10 MB line
    costs one pass.
    """
    opened = line.find("==(")
    closed = line.find(")==>", opened + 3)
    if opened < 0 or closed < 0:
        return None
    left, body, right = line[:opened].rstrip(), line[opened + 3 : closed].strip(), line[closed + 4 :].strip()
    bracket = left.rfind("[")
    if not left.endswith("]") or bracket <= 0 or left[bracket - 1].isspace() or "]" in left[bracket:-1]:
        return None
    head = left[:bracket].split()
    if len(head) == 3 and _HEX_RE.fullmatch(head[0]):
        guid, head = head[0], head[1:]
    else:
        guid = ""
    if len(head) != 2:
        return None
    peer_bracket = right.find("[")
    peer_close = right.find("]", peer_bracket + 1)
    if peer_bracket < 0 or peer_close < 0:
        return None
    peer = right[:peer_bracket].split()
    if len(peer) == 2:
        peer_lid, peer_port = peer
    elif len(peer) == 1:
        adjacent = not right[peer_bracket - 1].isspace()
        peer_lid, peer_port = ("", peer[0]) if adjacent else (peer[0], "")
    elif not peer:
        peer_lid = peer_port = ""
    else:
        return None
    after = right[peer_close + 1 :].strip()
    quote = after.rfind('"')
    tail = after[quote + 1 :].strip()
    if not after.startswith('"') or quote <= 0 or not tail.startswith("(") or not tail.endswith(")"):
        return None
    return _Link(
        guid, head[0], head[1], left[bracket + 1 : -1].strip(), body, peer_lid, peer_port,
        right[peer_bracket + 1 : peer_close].strip(), after[1:quote], tail[1:-1].strip(),
    )  # fmt: skip


def _state_body(body: str) -> tuple[str, str, str, str] | None:
    """``"4X 25.78125 Gbps Active/ LinkUp"`` -> (width, lane speed, state, phys); ``"Down/ Polling"``
    -> ("", "", "Down", "Polling"); None when it is neither."""
    tokens = body.split()
    width = speed = ""
    if len(tokens) >= 3 and _WIDTH_RE.fullmatch(tokens[0]):
        if tokens[1].lower().endswith("gbps") and len(tokens[1]) > 4:
            width, speed, tokens = tokens[0], tokens[1][:-4], tokens[2:]
        elif len(tokens) >= 4 and tokens[2].lower() == "gbps":
            width, speed, tokens = tokens[0], tokens[1], tokens[3:]
    if len(tokens) == 2 and tokens[0].endswith("/") and len(tokens[0]) > 1:
        return width, speed, tokens[0][:-1], tokens[1]
    if len(tokens) == 1 and 0 < tokens[0].find("/") < len(tokens[0]) - 1:
        state, _, phys = tokens[0].partition("/")
        return width, speed, state, phys
    return None


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


@parser
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
        link = _split_link(stripped)
        lid = read_int(link.lid) if link else None
        port = read_int(link.port) if link else None
        peer_lid = read_int(link.peer_lid) if link and link.peer_lid else None
        peer_port = read_int(link.peer_port) if link and link.peer_port else None
        if (
            link is None
            or lid is None
            or port is None
            or not (is_digits(link.lid) and is_digits(link.port))
            or (link.peer_lid and peer_lid is None)
            or (link.peer_port and peer_port is None)
        ):
            log.unknown(line_no, line)
            continue
        if not (LID.holds(lid) and PORT.holds(port) and LID.holds(peer_lid or 0) and PORT.holds(peer_port or 0)):
            log.unknown(line_no, line, "LID or port number outside its field's width")
            continue
        body = _state_body(link.body)
        if body is None:
            log.add(line_no, line, f"link state {link.body!r} not understood")
            width, lane, state, phys = "", None, link.body, ""
        else:
            width, speed, state, phys = body
            lane = read_float(speed) if speed else None
            if speed and (lane is None or not LANE_RATE_GBPS.holds(lane)):
                log.add(line_no, line, f"lane speed {speed!r} Gbps is not one any link has; left out")
                lane = None
        lanes = width.upper().rstrip("X")
        ports.append(
            IblinkPort(
                node_kind=kind,
                node_name=name,
                node_guid=guid,
                port_guid=link.port_guid,
                lid=lid,
                port=port,
                ext_port=link.ext_port,
                width=width,
                lane_speed_gbps=lane,
                signal_rate_gbps=int(lanes) * lane if lane is not None and is_digits(lanes) else None,
                state=state,
                phys_state=phys,
                peer_lid=peer_lid,
                peer_port=peer_port,
                peer_ext_port=link.peer_ext_port,
                peer_description=link.peer_description,
                comment=link.comment,
            )
        )
    return IblinkinfoResult(tuple(ports), log.freeze(), log.unknown_lines)
