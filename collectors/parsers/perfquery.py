"""Parsers for ``perfquery`` (plain, ``-x``, ``-E`` ...) and ``ibqueryerrors`` (infiniband-diags).

perfquery prints one block per query: a ``# <Attribute> counters: Lid L port P
(CapMask: ...)`` header and ``Name:.....value`` lines. ``PortXmitData`` /
``PortRcvData`` count 4-byte words. ``ibqueryerrors`` prints ``Errors for``
node headers and one ``GUID g port p: [Name == value] ...`` line per port.

Saturation: IB PortCounters stick at the maximum of their width (``ibfields``).
In a plain ``# Port counters`` block, in the detail blocks (``-E``, ``-D``) and
in ``ibqueryerrors`` a value at that maximum is listed in ``saturated``. The
``-x`` extended block holds 64-bit counters (the error counters too, when
CapMask2 advertises them), so there only 2**64-1 counts as saturated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem
from fleet.collectors.parsers.ibfields import MAD_COUNTER_BITS, U64_MAX, saturated_names
from fleet.collectors.parsers.problem_log import ProblemLog, to_int

_HEADER_RE = re.compile(
    r"^#\s*(?P<kind>.+?)\s+counters:\s+Lid\s+(?P<lid>\d+)\s+port\s+(?P<port>\d+|ALL)"
    r"(?:\s*\((?P<caps>[^)]*)\))?"
)
_CAP_RE = re.compile(r"(CapMask2?):\s*(0x[0-9a-fA-F]+)")
_COUNTER_RE = re.compile(r"^(\w+):\.*(\S*)\s*$")
_SELECTORS = frozenset({"PortSelect", "CounterSelect", "CounterSelect2"})


@dataclass(frozen=True, slots=True)
class PerfqueryBlock:
    kind: str  # "Port counters", "Port extended counters", "PortRcvErrorDetails counters", ...
    lid: int | None
    port: int | None  # None for "port ALL" (255 is printed as is)
    cap_mask: int | None
    cap_mask2: int | None
    extended: bool  # a -x block of 64-bit counters
    counters: dict[str, int]  # raw; PortXmitData/PortRcvData in 4-byte words
    selectors: dict[str, int] = field(default_factory=dict)  # PortSelect, CounterSelect...
    saturated: tuple[str, ...] = ()  # counters stuck at the maximum of their width


@dataclass(frozen=True, slots=True)
class PerfqueryResult:
    blocks: tuple[PerfqueryBlock, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


class _Block:
    __slots__ = ("cap", "cap2", "counters", "kind", "lid", "port", "selectors")

    def __init__(self, kind: str, lid: int | None, port: int | None, cap: int | None, cap2: int | None) -> None:
        self.kind = kind
        self.lid = lid
        self.port = port
        self.cap = cap
        self.cap2 = cap2
        self.counters: dict[str, int] = {}
        self.selectors: dict[str, int] = {}

    def freeze(self) -> PerfqueryBlock:
        extended = "extended" in self.kind.lower() and "speed" not in self.kind.lower()
        if extended:
            saturated = tuple(sorted(k for k, v in self.counters.items() if v == U64_MAX))
        else:
            saturated = saturated_names(self.counters, MAD_COUNTER_BITS)
        return PerfqueryBlock(
            kind=self.kind,
            lid=self.lid,
            port=self.port,
            cap_mask=self.cap,
            cap_mask2=self.cap2,
            extended=extended,
            counters=self.counters,
            selectors=self.selectors,
            saturated=saturated,
        )


def parse_perfquery(text: str) -> PerfqueryResult:
    """Parse ``perfquery`` output (any number of blocks); never raises."""
    log = ProblemLog()
    blocks: list[_Block] = []
    current: _Block | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped[0] == "#":
            m = _HEADER_RE.match(stripped)
            if m is None:
                log.unknown(line_no, line, "comment that is not a perfquery block header")
                continue
            caps = dict(_CAP_RE.findall(m.group("caps") or ""))
            port = m.group("port")
            current = _Block(
                m.group("kind") + " counters",
                int(m.group("lid")),
                None if port == "ALL" else int(port),
                to_int(caps["CapMask"]) if "CapMask" in caps else None,
                to_int(caps["CapMask2"]) if "CapMask2" in caps else None,
            )
            blocks.append(current)
            continue
        m = _COUNTER_RE.match(stripped)
        if m is None:
            log.unknown(line_no, line)
            continue
        name, value_text = m.group(1), m.group(2)
        value = to_int(value_text)
        if value is None:
            log.unknown(line_no, line, "counter value is not an integer")
            continue
        if current is None:
            # A headerless excerpt: keep the values in an anonymous block.
            current = _Block("", None, None, None, None)
            blocks.append(current)
            log.add(line_no, line, "counters without a '# ... counters:' header")
        target = current.selectors if name in _SELECTORS else current.counters
        if name in target:
            log.add(line_no, line, f"repeated counter {name!r}; last value kept")
        target[name] = value
    return PerfqueryResult(tuple(b.freeze() for b in blocks), log.freeze(), log.unknown_lines)


_ERRORS_FOR_RE = re.compile(r'^Errors for\s+(?:(0x[0-9a-fA-F]+)\s+)?"(.*)"\s*$')
_PORT_LINE_RE = re.compile(r"^GUID\s+(0x[0-9a-fA-F]+)\s+port\s+(\d+|ALL):\s*(.*)$")
_ITEM_RE = re.compile(r"\[(\w+)\s*==\s*(\d+)[^\]]*\]")
_SUMMARY_NODES_RE = re.compile(r"(\d+)\s+nodes checked,\s*(\d+)\s+bad nodes found")
_SUMMARY_PORTS_RE = re.compile(r"(\d+)\s+ports checked,\s*(\d+)\s+ports have errors")


@dataclass(frozen=True, slots=True)
class IbqePort:
    guid: str  # port GUID
    port: int | None  # None for "port ALL" (the switch's aggregate)
    counters: dict[str, int]  # only the counters over threshold, as printed
    saturated: tuple[str, ...]  # of those, the ones stuck at their width's maximum
    link_info: str = ""  # the "Link info:" line with -r/--report-port, raw


@dataclass(frozen=True, slots=True)
class IbqeNode:
    guid: str  # node GUID when printed ("Errors for 0x... \"desc\""), else ""
    description: str  # node description: "MF0;ys23ib4:SX6036/U1", "dl380g7 mlx4_0"
    ports: tuple[IbqePort, ...]


@dataclass(frozen=True, slots=True)
class IbqueryerrorsResult:
    nodes: tuple[IbqeNode, ...]
    nodes_checked: int | None
    bad_nodes: int | None
    ports_checked: int | None
    ports_with_errors: int | None
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def parse_ibqueryerrors(text: str) -> IbqueryerrorsResult:
    """Parse ``ibqueryerrors`` output; never raises."""
    log = ProblemLog()
    nodes: list[tuple[str, str, list[IbqePort]]] = []
    summary: dict[str, int] = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("##"):
            body = stripped.lstrip("#").strip()
            if m := _SUMMARY_NODES_RE.search(body):
                summary["nodes"], summary["bad"] = int(m.group(1)), int(m.group(2))
            elif m := _SUMMARY_PORTS_RE.search(body):
                summary["ports"], summary["bad_ports"] = int(m.group(1)), int(m.group(2))
            continue  # "## Thresholds:", "## Suppressed:" and the like
        if m := _ERRORS_FOR_RE.match(stripped):
            nodes.append((m.group(1) or "", m.group(2), []))
            continue
        if m := _PORT_LINE_RE.match(stripped):
            items = _ITEM_RE.findall(m.group(3))
            if not items and m.group(3):
                log.add(line_no, line, "port line without [Counter == value] items")
            counters = {name: int(value) for name, value in items}
            port = None if m.group(2) == "ALL" else int(m.group(2))
            entry = IbqePort(m.group(1), port, counters, saturated_names(counters, MAD_COUNTER_BITS))
            if not nodes:
                log.add(line_no, line, "port line before any 'Errors for' header")
                nodes.append(("", "", []))
            nodes[-1][2].append(entry)
            continue
        if stripped.startswith("Link info:") and nodes and nodes[-1][2]:
            last = nodes[-1][2][-1]
            nodes[-1][2][-1] = IbqePort(last.guid, last.port, last.counters, last.saturated, stripped[10:].strip())
            continue
        log.unknown(line_no, line)
    return IbqueryerrorsResult(
        nodes=tuple(IbqeNode(g, d, tuple(p)) for g, d, p in nodes),
        nodes_checked=summary.get("nodes"),
        bad_nodes=summary.get("bad"),
        ports_checked=summary.get("ports"),
        ports_with_errors=summary.get("bad_ports"),
        problems=log.freeze(),
        unknown_lines=log.unknown_lines,
    )
