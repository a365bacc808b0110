"""Parser for ``rdma statistic show`` (iproute2), text and ``-j`` JSON.

Text: one (very long) line per port, ``link mlx5_0/1 name value name value ...``;
the counters are the port's ``hw_counters`` (``out_of_buffer``, ``np_cnp_sent``,
``rp_cnp_handled``, ... raw event counts). ``rdma statistic qp show`` lines add
non-numeric fields (``qp-type RC``, ``comm ib_send_bw``, ``LQPN: <178>`` on a
continuation line); those go to ``attributes``. Section labels that newer
versions print (a word ending in ``:`` followed by more pairs) are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.jsontext import load_json
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import PORT, U64, read_int

_IDENTITY = frozenset({"link", "ifname", "ifindex", "port"})
_NOT_COUNTERS = frozenset({"cntn", "pid", "lqpn", "qp-type", "comm", "mode"})  # ids, not counts


@dataclass(frozen=True, slots=True)
class RdmaStatPort:
    device: str
    port: int | None
    counters: dict[str, int]  # raw event counts
    attributes: dict[str, str] = field(default_factory=dict)  # non-numeric fields


@dataclass(frozen=True, slots=True)
class RdmaStatisticResult:
    ports: tuple[RdmaStatPort, ...]
    json: bool
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


class _Acc:
    __slots__ = ("attrs", "counters", "device", "log", "port")

    def __init__(self, device: str, port: int | None, log: ProblemLog) -> None:
        self.device = device
        self.port = port
        self.log = log
        self.counters: dict[str, int] = {}
        self.attrs: dict[str, str] = {}

    def put(self, key: str, value: str, line_no: int, line: str) -> None:
        """A counter when ``value`` is an integer (a u64, as the kernel keeps them), else an attribute."""
        if key in _IDENTITY:
            return
        if key in _NOT_COUNTERS:
            self.attrs[key] = value
            return
        number = read_int(value) if value[:2] not in ("0x", "0X") else None
        if number is None:
            self.attrs[key] = value
        elif U64.check(number, self.log, line_no, line, f"{self.device}/{self.port} {key}") is not None:
            self.counters[key] = number

    def freeze(self) -> RdmaStatPort:
        return RdmaStatPort(self.device, self.port, self.counters, self.attrs)


def _pairs(tokens: list[str], acc: _Acc, line_no: int, line: str, log: ProblemLog) -> None:
    i = 0
    n = len(tokens)
    while i < n:
        key = tokens[i]
        if i + 1 >= n:
            log.add(line_no, line, f"token {key!r} without a value; ignored")
            return
        value = tokens[i + 1]
        if key.endswith(":") and not (value[:1].isdigit() or value[:1] in "<-["):
            i += 1  # a section label such as "Optional-set:"
            continue
        acc.put(key.rstrip(":"), value, line_no, line)
        i += 2


def _parse_text(text: str, log: ProblemLog) -> list[_Acc]:
    ports: list[_Acc] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "link" and "lqpn" in tokens and "state" in tokens:
            log.unknown(line_no, line, "a QP line of rdma resource show qp, not statistics")
            continue
        if tokens[0] == "link" and len(tokens) >= 2 and not line[0].isspace():
            device, slash, port_text = tokens[1].partition("/")
            port = read_int(port_text) if slash else None
            if not device or port is None or not PORT.holds(port):
                log.unknown(line_no, line, "link is not DEVICE/PORT")
                continue
            acc = _Acc(device, port, log)
            ports.append(acc)
            _pairs(tokens[2:], acc, line_no, line, log)
            continue
        if ports and line[0].isspace():
            _pairs(tokens, ports[-1], line_no, line, log)
            continue
        log.unknown(line_no, line)
    return ports


def _parse_json(text: str, log: ProblemLog) -> list[_Acc]:
    try:
        doc: Any = load_json(text, "rdma -j statistic show")
    except ParseError:
        raise
    except ValueError as err:
        log.unknown(getattr(err, "lineno", 0), "", f"invalid JSON: {err}")
        return []
    if isinstance(doc, dict):
        doc = [doc]
    if not isinstance(doc, list):
        log.unknown(0, "", "JSON is neither a list nor an object")
        return []
    ports = []
    for i, obj in enumerate(doc):
        if not isinstance(obj, dict) or "ifname" not in obj:
            log.unknown(0, str(obj), f"JSON item {i} is not a port object (no ifname)")
            continue
        port = obj.get("port")
        in_range = isinstance(port, int) and not isinstance(port, bool) and PORT.holds(port)
        acc = _Acc(str(obj.get("ifname", "")), port if in_range else None, log)
        for key, value in obj.items():
            if isinstance(value, bool) or not isinstance(value, int):
                if key not in _IDENTITY:
                    acc.attrs[key] = value if isinstance(value, str) else json.dumps(value)
            else:
                acc.put(key, str(value), 0, f"JSON item {i}")
        ports.append(acc)
    return ports


@parser
def parse_rdma_statistic(text: str) -> RdmaStatisticResult:
    """Parse ``rdma statistic show`` (or ``statistic qp show``); ParseError for JSON nested too deep."""
    log = ProblemLog()
    is_json = text.lstrip()[:1] in ("[", "{")
    accs = _parse_json(text, log) if is_json else _parse_text(text, log)
    return RdmaStatisticResult(tuple(a.freeze() for a in accs), is_json, log.freeze(), log.unknown_lines)
