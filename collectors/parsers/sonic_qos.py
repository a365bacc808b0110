"""SONiC QoS views: PFC watchdog (``show pfcwd config|stats``), lossless priorities (``show pfc priority``),
port MTUs (``show interfaces status``), WRED/ECN profiles (``show ecn``) and per-queue ECN (``ecnconfig -q Q``),
buffer pools and profiles (``show buffer configuration``) and CONFIG_DB tables (``sonic-cfggen -d --var-json T``).

Why: the switch side of lossless RoCE on SONiC: PFC on the lossless
priority per port, the watchdog that breaks pause storms, ECN marking on the
lossless queue with its thresholds, a lossless buffer profile, the DSCP to
traffic class map bound to each port (its trust), and an MTU that covers the
hosts' (sonic-utilities doc/Command-Reference.md).

The ``show`` tables are printed by ``tabulate``: columns under a ``----  ---``
rule whose widths depend on the content (a STATUS column is wider when a
queue is ``operational``), cells right- or left-aligned, thousands separators
or not, and some commands print a line first (``Changed polling interval to
100ms``). ``show ecn`` and ``show buffer configuration`` print one two-column
block per profile under a ``Profile: NAME`` / ``Pool: NAME`` title.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_int, int_list
from fleet.collectors.parsers.jsontext import load_json
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import column_spans, cut, is_rule, split_lines

U64 = 2**64 - 1


def _tables(text: str, log: ProblemLog) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(lines before the table, rows of the first tabulate table); each row keyed by header cell."""
    lines = split_lines(text)
    preamble: list[str] = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and is_rule(following) and len(column_spans(following)) > 1:
            spans = column_spans(following)
            header = cut(line, spans)
            rows: list[tuple[int, dict[str, str]]] = []
            for number, row in enumerate(lines[index + 2 :], start=index + 3):
                if not row.strip():
                    continue
                if is_rule(row):
                    continue
                cells = cut(row, spans)
                if not cells[0]:
                    log.unknown(number, row, "row without a first cell")
                    continue
                rows.append((number, dict(zip(header, cells, strict=True))))
            return preamble, rows
        if line.strip():
            preamble.append(line.strip())
    if text.strip():
        log.add(0, "", "no table header over a dashed rule")
    return preamble, []


# ------------------------------------------------------------------ show pfcwd config / stats


@dataclass(frozen=True, slots=True)
class PfcwdPort:
    port: str
    action: str
    detection_ms: int | None
    restoration_ms: int | None


@dataclass(frozen=True, slots=True)
class PfcwdConfig:
    ports: tuple[PfcwdPort, ...] = ()
    notes: tuple[str, ...] = ()
    """Lines printed before the table (``Changed polling interval to 100ms``)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_sonic_pfcwd_config(text: str) -> PfcwdConfig:
    """``show pfcwd config``: ports the watchdog runs on (a port not listed: no watchdog)."""
    log = ProblemLog()
    notes, rows = _tables(text, log)
    ports = []
    for number, row in rows:
        port = row.get("PORT", "")
        detection = ascii_int(row.get("DETECTION TIME", ""), 0, 2**31)
        restoration = ascii_int(row.get("RESTORATION TIME", ""), 0, 2**31)
        if not port.startswith("Ethernet") or detection is None:
            log.unknown(number, port, "not a port row (PORT, ACTION, DETECTION TIME, RESTORATION TIME)")
            continue
        ports.append(PfcwdPort(port, row.get("ACTION", ""), detection, restoration))
    return PfcwdConfig(tuple(ports), tuple(notes), log.freeze(), log.unknown_lines)


@dataclass(frozen=True, slots=True)
class PfcwdQueue:
    port: str
    queue: int
    status: str
    """``operational``, ``stormed`` or ``N/A`` (the watchdog is stopped)."""
    storms_detected: int | None
    storms_restored: int | None
    tx_ok: int | None = None
    tx_drop: int | None = None
    rx_ok: int | None = None
    rx_drop: int | None = None


@dataclass(frozen=True, slots=True)
class PfcwdStats:
    queues: tuple[PfcwdQueue, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


def _pair(text: str) -> tuple[int | None, int | None]:
    left, _, right = text.partition("/")
    return ascii_int(left, 0, U64), ascii_int(right, 0, U64)


@parser
def parse_sonic_pfcwd_stats(text: str) -> PfcwdStats:
    """``show pfcwd stats``: per lossless queue, its watchdog state and storms detected/restored."""
    log = ProblemLog()
    _, rows = _tables(text, log)
    queues = []
    for number, row in rows:
        port, _, queue_text = row.get("QUEUE", "").rpartition(":")
        queue = ascii_int(queue_text, 0, 15)
        if not port or queue is None:
            log.unknown(number, row.get("QUEUE", ""), "not a PORT:QUEUE row")
            continue
        detected, restored = _pair(row.get("STORM DETECTED/RESTORED", ""))
        tx_ok, tx_drop = _pair(row.get("TX OK/DROP", ""))
        rx_ok, rx_drop = _pair(row.get("RX OK/DROP", ""))
        queues.append(PfcwdQueue(port, queue, row.get("STATUS", ""), detected, restored, tx_ok, tx_drop, rx_ok,
                                 rx_drop))
    return PfcwdStats(tuple(queues), log.freeze(), log.unknown_lines)


# ------------------------------------------------------------------ show pfc priority / show interfaces status


@dataclass(frozen=True, slots=True)
class SonicPfcPriority:
    ports: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Port -> its lossless (PFC) priorities; () when it has none."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_sonic_pfc_priority(text: str) -> SonicPfcPriority:
    log = ProblemLog()
    _, rows = _tables(text, log)
    ports: dict[str, tuple[int, ...]] = {}
    for number, row in rows:
        cell = row.get("Lossless priorities", "")
        priorities = () if cell.upper() in ("", "N/A") else int_list(cell, 0, 7)
        port = row.get("Interface", "")
        if priorities is None or not port:
            log.unknown(number, cell, "lossless priorities unreadable")
            continue
        ports[port] = priorities
    return SonicPfcPriority(ports, log.freeze(), log.unknown_lines)


@dataclass(frozen=True, slots=True)
class SonicPortStatus:
    port: str
    mtu: int | None
    speed: str
    oper: str
    admin: str
    alias: str = ""
    asym_pfc: str = ""


@dataclass(frozen=True, slots=True)
class SonicInterfacesStatus:
    ports: tuple[SonicPortStatus, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_sonic_interfaces_status(text: str) -> SonicInterfacesStatus:
    log = ProblemLog()
    _, rows = _tables(text, log)
    ports = []
    for number, row in rows:
        port = row.get("Interface", "")
        if not port:
            log.unknown(number, "", "row without an interface")
            continue
        ports.append(SonicPortStatus(port, ascii_int(row.get("MTU", ""), 0, 2**20), row.get("Speed", ""),
                                     row.get("Oper", ""), row.get("Admin", ""), row.get("Alias", ""),
                                     row.get("Asym PFC", "")))
    return SonicInterfacesStatus(tuple(ports), log.freeze(), log.unknown_lines)


# ------------------------------------------------------------------ show ecn / show buffer configuration


@dataclass(frozen=True, slots=True)
class SonicBlocks:
    """Titled two-column blocks: ``Profile: AZURE_LOSSLESS`` (``show ecn``), ``Pool: ...`` and ``Profile: ...``
    (``show buffer configuration``), ``Lossless traffic pattern:``."""

    blocks: dict[str, dict[str, str]] = field(default_factory=dict)
    """``Profile: AZURE_LOSSLESS`` -> {field: value}, the title as printed (markdown ``**`` removed)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    def of_kind(self, kind: str) -> dict[str, dict[str, str]]:
        """Blocks titled ``KIND: NAME`` by name (kind ``Profile`` or ``Pool``)."""
        prefix = f"{kind}: "
        return {title[len(prefix):]: body for title, body in self.blocks.items() if title.startswith(prefix)}


_BLOCK_TITLES = ("Lossless traffic pattern:",)
"""Titles other than ``Profile: NAME`` / ``Pool: NAME`` that ``show buffer configuration`` prints."""


@parser
def parse_sonic_blocks(text: str) -> SonicBlocks:
    log = ProblemLog()
    blocks: dict[str, dict[str, str]] = {}
    title = ""
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or is_rule(stripped):
            continue
        if stripped.startswith(("Profile:", "Pool:")) or stripped in _BLOCK_TITLES:
            title = stripped.replace("*", "").rstrip(":").strip()
            blocks.setdefault(title, {})
            continue
        words = stripped.split(None, 1)
        if not title or len(words) != 2:
            log.unknown(number, line, "not a 'field value' line under a Profile:/Pool: title")
            continue
        blocks[title][words[0]] = words[1].strip()
    return SonicBlocks(blocks, log.freeze(), log.unknown_lines)


@dataclass(frozen=True, slots=True)
class SonicEcnQueues:
    queues: dict[int, bool] = field(default_factory=dict)
    """Queue -> ECN (WRED) on, from ``ECN status:`` / ``queue 3: on``."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_sonic_ecn_queues(text: str) -> SonicEcnQueues:
    """``ecnconfig -q 3[,4]``: ``ECN status:`` then ``queue 3: on`` (``-vv``: ``Ethernet0 queue 3: on``)."""
    log = ProblemLog()
    queues: dict[int, bool] = {}
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("ECN status"):
            continue
        head, sep, state = stripped.rpartition(":")
        queue = ascii_int(head.rsplit("queue", 1)[-1], 0, 15) if "queue" in head else None
        if not sep or queue is None or state.strip() not in ("on", "off"):
            log.unknown(number, line, "expected 'queue N: on|off'")
            continue
        queues[queue] = state.strip() == "on"
    return SonicEcnQueues(queues, log.freeze(), log.unknown_lines)


# ------------------------------------------------------------------ sonic-cfggen -d --var-json TABLE


@dataclass(frozen=True, slots=True)
class SonicConfigTable:
    entries: dict[str, dict[str, str]] = field(default_factory=dict)
    """Key (``Ethernet0``, ``AZURE``) -> field -> value, all as strings (CONFIG_DB keeps strings)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_sonic_config_table(text: str) -> SonicConfigTable:
    """``sonic-cfggen -d --var-json PORT_QOS_MAP`` / ``DSCP_TO_TC_MAP``: one CONFIG_DB table as JSON."""
    log = ProblemLog()
    if not text.strip():
        return SonicConfigTable()
    try:
        doc = load_json(text, "sonic-cfggen --var-json")
    except ParseError as error:
        log.add(0, "", f"{error}: not a CONFIG_DB table")
        return SonicConfigTable(problems=log.freeze())
    except ValueError as error:
        log.add(0, "", f"not valid JSON: {error}")
        return SonicConfigTable(problems=log.freeze())
    if not isinstance(doc, dict):
        log.add(0, "", "a CONFIG_DB table is a JSON object")
        return SonicConfigTable(problems=log.freeze())
    entries: dict[str, dict[str, str]] = {}
    for key, value in doc.items():
        if not isinstance(value, dict):
            log.add(0, str(key), "entry is not an object of fields")
            continue
        if not all(isinstance(v, str | int | float) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
                   for v in value.values()):
            log.add(0, str(key), "a field holds more than strings: not a CONFIG_DB table")
            continue
        entries[str(key)] = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
    return SonicConfigTable(entries, log.freeze(), log.unknown_lines)
