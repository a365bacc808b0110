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

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.ibfields import MAD_COUNTER_BITS, U64_MAX, saturated_names
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import LID, PORT, U16, U32, U64, Range, bits, int_in, read_int

# IBA Vol 1 13.4.8.1 ClassPortInfo: CapabilityMask is 16 bits, CapabilityMask2 27 bits.
_CAP_RANGES: dict[str, Range] = {"CapMask": U16, "CapMask2": bits(27, "a 27-bit CapabilityMask2")}
_MAD_RANGES: dict[str, Range] = {
    name: bits(width, f"the {width}-bit {name} field") for name, width in MAD_COUNTER_BITS.items()
}

# After "# <kind> counters:" (found with str.find, so the kind costs no backtracking).
_HEADER_TAIL_RE = re.compile(
    r"[ \t]+Lid[ \t]+([0-9]{1,20})[ \t]+port[ \t]+([0-9]{1,20}|ALL)(?:[ \t]*\(([^)]*)\))?", re.ASCII
)
_CAP_RE = re.compile(r"(CapMask2?):[ \t]*(0x[0-9a-fA-F]{1,40})")
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

    def extended(self) -> bool:
        """A ``-x`` block of 64-bit counters (not the extended *speeds* block)."""
        return "extended" in self.kind.lower() and "speed" not in self.kind.lower()

    def freeze(self) -> PerfqueryBlock:
        extended = self.extended()
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


def _is_word(name: str) -> bool:
    """A counter name: ASCII letters, digits and underscores (``PortXmitData``)."""
    return bool(name) and name.isascii() and name.replace("_", "a").isalnum()


def _header(stripped: str, line_no: int, line: str, log: ProblemLog) -> _Block | None:
    """A ``# Port counters: Lid 1 port 1 (CapMask: 0x5A00)`` header as an empty block."""
    at = stripped.find("counters:")
    kind = stripped[1:at]
    if at < 0 or not kind.strip() or not kind[-1:].isspace():
        return None
    m = _HEADER_TAIL_RE.match(stripped, at + len("counters:"))
    if m is None:
        return None
    lid = int_in(m.group(1), LID, log, line_no, "Lid")
    port = None if m.group(2) == "ALL" else int_in(m.group(2), PORT, log, line_no, "port")
    if lid is None or (port is None and m.group(2) != "ALL"):
        return None
    caps = dict(_CAP_RE.findall(m.group(3) or ""))
    mask, mask2 = (
        int_in(caps[key], _CAP_RANGES[key], log, line_no, key) if key in caps else None
        for key in ("CapMask", "CapMask2")
    )
    return _Block(kind.strip() + " counters", lid, port, mask, mask2)


@parser
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
            block = _header(stripped, line_no, line, log)
            if block is None:
                log.unknown(line_no, line, "comment that is not a perfquery block header")
                continue
            current = block
            blocks.append(current)
            continue
        name, sep, rest = stripped.partition(":")
        value_text = rest.lstrip(".").rstrip()  # "Name:.....value": dots, never spaces, before it
        if not sep or not _is_word(name) or any(c.isspace() for c in value_text):
            log.unknown(line_no, line)
            continue
        value = read_int(value_text)
        if value is None:
            log.unknown(line_no, line, "counter value is not an integer")
            continue
        if current is None:
            # A headerless excerpt: keep the values in an anonymous block.
            current = _Block("", None, None, None, None)
            blocks.append(current)
            log.add(line_no, line, "counters without a '# ... counters:' header")
        if name in _SELECTORS:
            where = U32
        elif current.extended():
            where = U64
        else:
            where = _MAD_RANGES.get(name, U64)
        if where.check(value, log, line_no, line, name) is None:
            continue
        target = current.selectors if name in _SELECTORS else current.counters
        if name in target:
            log.add(line_no, line, f"repeated counter {name!r}; last value kept")
        target[name] = value
    return PerfqueryResult(tuple(b.freeze() for b in blocks), log.freeze(), log.unknown_lines)


_ERRORS_FOR_RE = re.compile(r'^Errors for\s+(?:(0x[0-9a-fA-F]+)\s+)?"(.*)"\s*$')
_PORT_LINE_RE = re.compile(r"^GUID\s+(0x[0-9a-fA-F]{1,16})\s+port\s+([0-9]{1,20}|ALL):\s*(.*)$")
# "[Name == value]" items; the tail after the value never crosses a "[" so a line of
# unclosed items is read in linear time.
_ITEM_RE = re.compile(r"\[(\w+)\s*==\s*([0-9]{1,40})(?:[^\[\]0-9][^\[\]]*)?\]", re.ASCII)
_SUMMARY_NODES_RE = re.compile(
    r"(?<![0-9])([0-9]{1,20})\s+nodes checked,\s*([0-9]{1,20})\s+bad nodes found", re.ASCII
)
_SUMMARY_PORTS_RE = re.compile(
    r"(?<![0-9])([0-9]{1,20})\s+ports checked,\s*([0-9]{1,20})\s+ports have errors", re.ASCII
)


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


def _count(m: re.Match[str], group: int, line_no: int, line: str, log: ProblemLog) -> int | None:
    return U32.check(int(m.group(group)), log, line_no, line, "summary count")


@parser
def parse_ibqueryerrors(text: str) -> IbqueryerrorsResult:
    """Parse ``ibqueryerrors`` output; never raises."""
    log = ProblemLog()
    nodes: list[tuple[str, str, list[IbqePort]]] = []
    summary: dict[str, int | None] = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("##"):
            body = stripped.lstrip("#").strip()
            if m := _SUMMARY_NODES_RE.search(body):
                summary["nodes"], summary["bad"] = _count(m, 1, line_no, line, log), _count(m, 2, line_no, line, log)
            elif m := _SUMMARY_PORTS_RE.search(body):
                summary["ports"], summary["bad_ports"] = _count(m, 1, line_no, line, log), _count(m, 2, line_no, line, log)
            continue  # "## Thresholds:", "## Suppressed:" and the like
        if m := _ERRORS_FOR_RE.match(stripped):
            nodes.append((m.group(1) or "", m.group(2), []))
            continue
        if m := _PORT_LINE_RE.match(stripped):
            items = _ITEM_RE.findall(m.group(3))
            if not items and m.group(3):
                log.add(line_no, line, "port line without [Counter == value] items")
            counters = {
                name: int(value)
                for name, value in items
                if _MAD_RANGES.get(name, U64).check(int(value), log, line_no, line, name) is not None
            }
            port = None if m.group(2) == "ALL" else PORT.check(int(m.group(2)), log, line_no, line, "port")
            if port is None and m.group(2) != "ALL":
                continue
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
