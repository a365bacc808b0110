"""``mlnx_qos -i NETDEV``: a ConnectX port's QoS: trust state, DSCP->priority map, PFC, ETS per traffic class.

Why: lossless RoCE needs the NIC to classify by DSCP (``Priority trust state:
dscp``), to map the RoCE DSCP (26) to the lossless priority (3), to run PFC on
exactly that priority and to give its traffic class an ETS share (NVIDIA
MLNX_OFED "Quality of Service" and doRoCE, docs/checks.md).

Layouts seen in real captures (tests/fixtures/qos): old builds print no
``Receive buffer size`` or ``buffer`` row and ``tsa: vendor`` everywhere; newer
ones add ``default priority:``, a receive-buffer line ending in a comma or
``max_buffer_size=N``, ``DCBX mode: Firmware controlled``, ``tsa: ets, bw: N%``
or ``tsa: strict``, only the non-empty traffic classes, several ``priority:``
lines per class, and a ``prio:N`` line repeated when a priority owns more DSCP
values than fit one line (the lines are merged). ``enabled`` and ``buffer``
rows carry trailing blanks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_int, int_list
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines

PRIORITIES = 8
"""IEEE 802.1Q user priorities 0..7 (PFC acts per priority)."""
DSCP_MAX = 63
"""DSCP is a 6-bit field (RFC 2474)."""
TC_MAX = 15
"""Traffic classes a ConnectX port exposes are 0..7; 15 leaves room for a vendor's extra ones."""


@dataclass(frozen=True, slots=True)
class QosTc:
    """One traffic class: its transmission selection (``vendor``, ``ets``, ``strict``) and priorities."""

    tc: int
    tsa: str
    bw_pct: int | None = None
    """ETS bandwidth share, percent (``tsa: ets, bw: 50%``); None for other algorithms."""
    ratelimit: str = ""
    priorities: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MlnxQos:
    dcbx_mode: str = ""
    trust: str = ""
    """``dscp`` or ``pcp`` as printed; "" when the line is missing."""
    default_priority: int | None = None
    dscp_to_priority: dict[int, int] = field(default_factory=dict)
    """DSCP value -> priority, from the ``dscp2prio mapping`` (empty under PCP trust: not printed)."""
    pfc_enabled: tuple[int, ...] | None = None
    """Priorities with PFC on; None when the PFC table is missing."""
    pfc_buffer: tuple[int, ...] = ()
    """Receive buffer of each priority 0..7 (newer builds only)."""
    receive_buffer_bytes: tuple[int, ...] = ()
    cable_len: int | None = None
    tcs: tuple[QosTc, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    def tc_of(self, priority: int) -> QosTc | None:
        """The traffic class that carries ``priority`` (None when no class lists it)."""
        return next((tc for tc in self.tcs if priority in tc.priorities), None)


def _row_values(rest: str, log: ProblemLog, number: int, line: str) -> tuple[int, ...] | None:
    values = rest.split()
    parsed = [ascii_int(v, 0, 2**32) for v in values]
    if len(parsed) != PRIORITIES or any(v is None for v in parsed):
        log.add(number, line, f"expected {PRIORITIES} numbers, one per priority")
        return None
    return tuple(v for v in parsed if v is not None)


def _tc_header(text: str, log: ProblemLog, number: int, line: str) -> QosTc | None:
    """``tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%``."""
    head, _, rest = text.partition("ratelimit:")
    tc = ascii_int(head.removeprefix("tc:"), 0, TC_MAX)
    if tc is None:
        log.unknown(number, line, "traffic class number unreadable")
        return None
    ratelimit, tsa, bw = "", "", None
    for part in rest.split(","):
        key, sep, value = part.partition(":")
        if not sep:
            ratelimit = key.strip()
        elif key.strip() == "tsa":
            tsa = value.strip()
        elif key.strip() == "bw":
            bw = ascii_int(value.strip().removesuffix("%"), 0, 100)
            if bw is None:
                log.add(number, line, "ETS bandwidth is not a percentage 0..100")
    return QosTc(tc, tsa, bw, ratelimit)


@parser
def parse_mlnx_qos(text: str) -> MlnxQos:
    """Parse the full ``mlnx_qos -i NETDEV`` printout (see the module docstring for the layouts)."""
    log = ProblemLog()
    values: dict[str, object] = {}
    dscp: dict[int, int] = {}
    tcs: list[QosTc] = []
    current: QosTc | None = None
    section = ""
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        key, sep, rest = stripped.partition(":")
        key = key.strip()
        if stripped.startswith("prio:") and section == "dscp2prio":
            prio_text, _, dscp_text = stripped.removeprefix("prio:").partition("dscp:")
            prio = ascii_int(prio_text, 0, PRIORITIES - 1)
            codes = int_list(dscp_text, 0, DSCP_MAX)
            if prio is None or codes is None:
                log.unknown(number, line, "dscp2prio line unreadable")
                continue
            for code in codes:
                dscp[code] = prio
        elif section == "pfc" and not sep and stripped.split()[0] == "priority":
            continue  # the column header 0..7
        elif section == "pfc" and not sep and stripped.split()[0] in ("enabled", "buffer"):
            word = stripped.split()[0]
            row = _row_values(stripped[len(word):], log, number, line)
            if row is not None:
                values["pfc_" + word] = row
        elif stripped.startswith("tc:"):
            section = "tc"
            if current is not None:
                tcs.append(current)
            current = _tc_header(stripped, log, number, line)
        elif key == "priority" and section == "tc" and current is not None:
            prio = ascii_int(rest, 0, PRIORITIES - 1)
            if prio is None:
                log.unknown(number, line, "priority of a traffic class unreadable")
            else:
                current = QosTc(current.tc, current.tsa, current.bw_pct, current.ratelimit,
                                (*current.priorities, prio))
        elif key == "DCBX mode":
            values["dcbx"] = rest.strip()
        elif key == "Priority trust state":
            values["trust"] = rest.strip()
        elif key == "default priority":
            if rest.strip():
                values["default_priority"] = ascii_int(rest, 0, PRIORITIES - 1)
        elif key == "dscp2prio mapping":
            section = "dscp2prio"
        elif key.startswith("Receive buffer size"):
            sizes = [part for part in rest.split(",") if part.strip() and "=" not in part]
            parsed = int_list(",".join(sizes), 0, 2**32)
            if parsed is None:
                log.add(number, line, "receive buffer sizes unreadable")
            else:
                values["receive_buffer"] = parsed
        elif key == "Cable len":
            values["cable_len"] = ascii_int(rest, 0, 2**16)
        elif key == "PFC configuration":
            section = "pfc"
        else:
            log.unknown(number, line)
    if current is not None:
        tcs.append(current)
    enabled = values.get("pfc_enabled")
    pfc = tuple(p for p, on in enumerate(enabled) if on) if isinstance(enabled, tuple) else None
    if not values.get("trust"):
        log.add(0, "", "no 'Priority trust state' line")
    default_priority = values.get("default_priority")
    cable_len = values.get("cable_len")
    return MlnxQos(
        dcbx_mode=str(values.get("dcbx", "")),
        trust=str(values.get("trust", "")),
        default_priority=default_priority if isinstance(default_priority, int) else None,
        dscp_to_priority=dscp,
        pfc_enabled=pfc,
        pfc_buffer=_ints(values.get("pfc_buffer")),
        receive_buffer_bytes=_ints(values.get("receive_buffer")),
        cable_len=cable_len if isinstance(cable_len, int) else None,
        tcs=tuple(tcs),
        problems=log.freeze(),
        unknown_lines=log.unknown_lines,
    )


def _ints(value: object) -> tuple[int, ...]:
    return tuple(v for v in value if isinstance(v, int)) if isinstance(value, tuple) else ()
