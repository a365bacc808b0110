"""Parser for ``rdma resource show qp`` (iproute2), text and ``-j`` JSON.

Text: one line per QP of ``key value`` pairs, e.g.
``link mlx5_0/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core]``; user QPs add
``pid N comm NAME``, ``-d``/``-dd`` add driver fields (``subtype REG_UMR``,
``drv_*``), and MLNX_OFED's iproute2 prints kernel owners without brackets.
Continuation lines (indented) belong to the QP above them.

JSON: a list of objects (``ifname``, ``port``, ``lqpn``, ...). Published
iproute2 versions emitted broken JSON with ``-jp -dd`` (an anonymous object
holding the driver fields, or objects closed early): such output is salvaged
object by object, the repair or the loss listed in ``problems``.
A QP is a kernel QP when no ``pid`` is given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.jsontext import load_json
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import PID, PORT, PSN, QPN, U32, Range, int_in

_NAMED = frozenset(
    {"link", "ifname", "ifindex", "port", "lqpn", "rqpn", "type", "subtype", "state",
     "rq-psn", "sq-psn", "path-mig-state", "pdn", "pid", "comm"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RdmaQp:
    device: str  # "mlx5_0" (or the netdev-style name rdma prints, e.g. "ibp8s0f1")
    port: int | None
    lqpn: int | None  # local QP number
    rqpn: int | None  # remote QP number (connected QPs)
    type: str  # "RC", "UD", "GSI", "SMI", "DRIVER", ...
    subtype: str  # -dd driver QPs: "REG_UMR"
    state: str  # "RTS", "INIT", "ERR", ...
    rq_psn: int | None
    sq_psn: int | None
    path_mig_state: str
    pdn: int | None
    pid: int | None  # None for kernel QPs
    comm: str  # owner, brackets removed: "ib_core", "ib_send_bw"
    kernel: bool  # owned by the kernel (no pid printed)
    attributes: dict[str, str] = field(default_factory=dict)  # everything else (drv_* ...)


@dataclass(frozen=True, slots=True)
class RdmaQpResult:
    qps: tuple[RdmaQp, ...]
    json: bool  # the input was (meant to be) JSON
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def count_by_device(self) -> dict[tuple[str, int | None], int]:
        """QPs per (device, port)."""
        out: dict[tuple[str, int | None], int] = {}
        for qp in self.qps:
            key = (qp.device, qp.port)
            out[key] = out.get(key, 0) + 1
        return out


# What each numeric field can hold (IBTA Vol 1 9.2: 24-bit QPN and PSN; see ``values``).
_RANGES: dict[str, Range] = {
    "port": PORT, "lqpn": QPN, "rqpn": QPN, "rq-psn": PSN, "sq-psn": PSN, "pdn": U32, "pid": PID,
}  # fmt: skip


def _qp(values: dict[str, str], log: ProblemLog, line_no: int, line: str) -> RdmaQp:
    get = values.get

    def num(key: str, text: str | None) -> int | None:
        return None if text is None else int_in(text, _RANGES[key], log, line_no, f"QP {key}")

    link = get("link")
    if link is not None:
        device, _, port_text = link.partition("/")
        port = num("port", port_text) if port_text else None
    else:
        device, port = get("ifname", ""), num("port", get("port"))
    comm = get("comm", "")
    if comm[:1] == "[" and comm[-1:] == "]":
        comm = comm[1:-1]
    pid = num("pid", get("pid"))
    extra = {k: v for k, v in values.items() if k not in _NAMED} if not _NAMED.issuperset(values) else {}
    return RdmaQp(
        device, port, num("lqpn", get("lqpn")), num("rqpn", get("rqpn")), get("type", ""),
        get("subtype", ""), get("state", ""), num("rq-psn", get("rq-psn")),
        num("sq-psn", get("sq-psn")), get("path-mig-state", ""), num("pdn", get("pdn")), pid,
        comm, "pid" not in values, extra,
    )  # fmt: skip


def _pairs(tokens: list[str], into: dict[str, str], line_no: int, line: str, log: ProblemLog) -> None:
    if len(tokens) % 2:
        log.add(line_no, line, f"odd token {tokens[-1]!r} without a value; ignored")
        tokens = tokens[:-1]
    into.update(zip(tokens[::2], tokens[1::2], strict=True))


def _parse_text(text: str, log: ProblemLog) -> list[RdmaQp]:
    qps: list[RdmaQp] = []
    current: dict[str, str] | None = None
    start = (0, "")  # line number and text of the current QP's first line
    for line_no, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "link" and len(tokens) >= 2 and "/" in tokens[1] and not line[0].isspace():
            if current is not None:
                qps.append(_qp(current, log, *start))
            if "lqpn" not in tokens:
                log.unknown(line_no, line, "link line without lqpn: not a QP")
                current = None
                continue
            current, start = {}, (line_no, line)
            _pairs(tokens, current, line_no, line, log)
            continue
        if current is not None and line[0].isspace():
            _pairs(tokens, current, line_no, line, log)
            continue
        log.unknown(line_no, line)
    if current is not None:
        qps.append(_qp(current, log, *start))
    return qps


_TOKEN_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\n]')
_ANON_OBJECT_RE = re.compile(r'(,\s*)\{')


def _json_values(obj: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            out.update(_json_values(value))
        elif isinstance(value, list):
            out[key] = json.dumps(value)
        else:
            out[key] = str(value)
    return out


def _salvage(text: str, log: ProblemLog) -> list[RdmaQp]:
    """Recover QPs object by object from JSON that does not parse as a whole."""
    qps: list[RdmaQp] = []
    depth = 0
    start = -1
    start_line = 0
    line_no = 1
    outside: dict[int, str] = {}  # line -> text outside every object
    lines = text.splitlines()
    last = 0
    for m in _TOKEN_RE.finditer(text):
        tok = m.group()
        if depth == 0 and m.start() > last:
            chunk = text[last : m.start()].strip(" \t[],")
            if chunk:
                outside[line_no] = chunk
        if tok == "\n":
            line_no += 1
        elif tok == "{":
            if depth == 0:
                start, start_line = m.start(), line_no
            depth += 1
        elif tok == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                qps.extend(_one_object(text[start : m.end()], start_line, lines, log))
        elif tok[0] == '"' and depth == 0:
            outside[line_no] = lines[line_no - 1] if line_no <= len(lines) else tok
        last = m.end()
    if depth and start >= 0:
        log.add(start_line, lines[start_line - 1] if start_line <= len(lines) else "", "JSON object never closed (truncated)")
    for n, chunk in outside.items():
        log.unknown(n, lines[n - 1] if n <= len(lines) else chunk, "text outside any JSON object")
    return qps


def _one_object(raw: str, line_no: int, lines: list[str], log: ProblemLog) -> list[RdmaQp]:
    text_of_line = lines[line_no - 1] if line_no <= len(lines) else ""
    try:
        obj = load_json(raw, "rdma -j res show qp")
    except ValueError:
        repaired = _ANON_OBJECT_RE.sub(r'\1"driver": {', raw)
        try:
            obj = load_json(repaired, "rdma -j res show qp")
        except ValueError:
            log.unknown(line_no, text_of_line, "JSON object does not parse; skipped")
            return []
        log.add(line_no, text_of_line, "non-standard JSON (anonymous driver object) repaired")
    if not isinstance(obj, dict) or "lqpn" not in obj:
        log.unknown(line_no, text_of_line, "JSON value is not a QP object (no lqpn)")
        return []
    return [_qp(_json_values(obj), log, line_no, text_of_line)]


def _parse_json(text: str, log: ProblemLog) -> list[RdmaQp]:
    try:
        doc = load_json(text, "rdma -j res show qp")
    except ParseError:
        raise
    except ValueError:
        log.add(0, "", "output is not valid JSON; salvaging object by object")
        return _salvage(text, log)
    if isinstance(doc, dict):
        # Old iproute2 wrapped the list in an object ({"qp": [...]})
        lists = [v for v in doc.values() if isinstance(v, list)]
        doc = lists[0] if len(lists) == 1 else [doc]
    if not isinstance(doc, list):
        log.add(0, "", "JSON is neither a list nor an object")
        return []
    qps = []
    for i, obj in enumerate(doc):
        if isinstance(obj, dict) and "lqpn" in obj:
            qps.append(_qp(_json_values(obj), log, 0, f"JSON item {i}"))
        else:
            log.unknown(0, str(obj), f"JSON item {i} is not a QP object (no lqpn)")
    return qps


@parser
def parse_rdma_qp(text: str) -> RdmaQpResult:
    """Parse ``rdma resource show qp`` text or ``-j`` JSON; ParseError for JSON nested too deep."""
    log = ProblemLog()
    is_json = text.lstrip()[:1] in ("[", "{")
    qps = _parse_json(text, log) if is_json else _parse_text(text, log)
    return RdmaQpResult(tuple(qps), is_json, log.freeze(), log.unknown_lines)
