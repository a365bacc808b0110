"""Cumulus Linux NVUE ``nv show`` QoS views: ``nv show qos roce``, ``nv show interface PORT qos roce status``,
``nv show interface PORT qos pfc-watchdog``.

Why: the switch side of lossless RoCE: the RoCE mode, PFC on switch priority
3, ECN on traffic class 3 with its thresholds, trust, the DSCP -> switch
priority map and the lossless buffer pools (Cumulus Linux "RDMA over
Converged Ethernet - RoCE"), and whether the PFC watchdog is on.

All three print the same layout (tests/fixtures/switch): a header
``operational  applied [description]`` over a dashed rule, then settings as
an indented key tree (two blanks per level) whose values are cut at the
rule's columns, then titled sub-tables (a title over a ``====`` line, a
header, a dashed rule, rows). Lines of a single blank separate parts; every
line may carry trailing blanks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_int, indent_of, int_list, size_bytes
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import column_spans, cut, is_rule, split_lines


@dataclass(frozen=True, slots=True)
class NvueSetting:
    operational: str
    applied: str

    @property
    def value(self) -> str:
        """What the switch runs: the operational value, else the applied one."""
        return self.operational or self.applied


@dataclass(frozen=True, slots=True)
class NvueShow:
    settings: dict[str, NvueSetting] = field(default_factory=dict)
    """Dotted key path (``pfc.pfc-priority``) -> its values (a parent key, ``pfc``, holds none)."""
    tables: dict[str, tuple[dict[str, str], ...]] = field(default_factory=dict)
    """Sub-table title -> rows (column -> cell; the unnamed first column under ``""``)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    def get(self, key: str) -> str:
        setting = self.settings.get(key)
        return setting.value if setting is not None else ""

    # --- the RoCE reading, for `nv show qos roce` and `... qos roce status`
    @property
    def pfc_priorities(self) -> tuple[int, ...] | None:
        """() when the switch prints the key empty (no PFC); None when the key is missing."""
        if "pfc.pfc-priority" not in self.settings:
            return None
        return int_list(self.get("pfc.pfc-priority"), 0, 7)

    @property
    def ecn_traffic_classes(self) -> tuple[int, ...] | None:
        text = self.get("congestion-control.enabled-tc")
        return int_list(text, 0, 15) if text else None

    @property
    def ecn_min_threshold_bytes(self) -> int | None:
        return size_bytes(self.get("congestion-control.min-threshold"))

    @property
    def ecn_max_threshold_bytes(self) -> int | None:
        return size_bytes(self.get("congestion-control.max-threshold"))

    @property
    def trust(self) -> str:
        return self.get("trust.trust-mode")

    def dscp_to_switch_priority(self) -> dict[int, int]:
        """From the ``RoCE PCP/DSCP->SP mapping`` table (a row may list several DSCP values)."""
        mapping: dict[int, int] = {}
        for title, rows in self.tables.items():
            if "DSCP->SP" not in title:
                continue
            for row in rows:
                codes = int_list(row.get("dscp", ""), 0, 63)
                prio = ascii_int(row.get("switch-prio", ""), 0, 7)
                if codes is not None and prio is not None:
                    for code in codes:
                        mapping[code] = prio
        return mapping

    def pools(self) -> tuple[dict[str, str], ...]:
        """Rows of the ``RoCE pool config`` / ``RoCE Pool Status`` table."""
        return next((rows for title, rows in self.tables.items() if title.lower().startswith("roce pool")), ())


def _table(lines: list[tuple[int, str]], log: ProblemLog) -> tuple[dict[str, str], ...]:
    """Header, rule, rows of one sub-table (``lines``: its non-blank lines after the ``====``)."""
    rule_at = next((i for i, (_, line) in enumerate(lines) if is_rule(line)), None)
    if rule_at is None:
        if lines and lines[0][1].strip() != "No Data":
            for number, line in lines:
                log.unknown(number, line, "sub-table without a dashed rule")
        return ()
    spans = column_spans(lines[rule_at][1])
    header = cut(lines[rule_at - 1][1], spans) if rule_at > 0 else ["" for _ in spans]
    rows = []
    for number, line in lines[rule_at + 1 :]:
        if len(line.rstrip()) < spans[0][0]:
            log.unknown(number, line, "row shorter than the table")
            continue
        rows.append(dict(zip(header, cut(line, spans), strict=True)))
    return tuple(rows)


@parser
def parse_nvue_show(text: str) -> NvueShow:
    log = ProblemLog()
    lines = split_lines(text)
    settings: dict[str, NvueSetting] = {}
    tables: dict[str, tuple[dict[str, str], ...]] = {}
    spans: list[tuple[int, int]] = []
    path: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        number = index + 1
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if not line.strip():
            index += 1
            continue
        if following.strip() and set(following.strip()) == {"="}:
            title = line.strip()
            body: list[tuple[int, str]] = []
            index += 2
            while index < len(lines):
                after = lines[index + 1] if index + 1 < len(lines) else ""
                if lines[index].strip() and after.strip() and set(after.strip()) == {"="}:
                    break
                if lines[index].strip():
                    body.append((index + 1, lines[index]))
                index += 1
            tables[title] = _table(body, log)
            continue
        if is_rule(following) and not spans:
            if "operational" not in line and "applied" not in line:
                log.unknown(number, line, "a table header without 'operational'/'applied': not an nv show view")
                index += 2
                continue
            spans = column_spans(following)
            index += 2
            continue
        if not spans:
            log.unknown(number, line, "before the header's dashed rule")
            index += 1
            continue
        cells = cut(line, spans)
        key = cells[0]
        depth = indent_of(line)
        while path and path[-1][0] >= depth:
            path.pop()
        path.append((depth, key))
        dotted = ".".join(k for _, k in path)
        settings[dotted] = NvueSetting(cells[1] if len(cells) > 1 else "", cells[2] if len(cells) > 2 else "")
        index += 1
    if not spans and not tables:
        log.add(0, "", "no 'operational  applied' header")
    return NvueShow(settings, tables, log.freeze(), log.unknown_lines)
