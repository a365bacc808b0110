"""NVIDIA Onyx ``show roce``: the RoCE mode, port trust, ECN thresholds, PFC and the RoCE traffic classes.

Why: the same switch-side RoCE settings as NVUE's ``nv show qos roce``, on
Spectrum switches that still run Onyx. Layout (tests/fixtures/switch): ``Key :
value`` lines (the colon padded to a column), sections ending in ``:`` whose
indented lines belong to them, and the ``RoCE used TCs`` table between dashed
rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_int, indent_of
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import is_rule, split_lines


@dataclass(frozen=True, slots=True)
class OnyxRoce:
    fields: dict[str, str] = field(default_factory=dict)
    """``RoCE mode`` -> ``lossless``; section fields dotted: ``Port congestion-control.Min (KB)`` -> ``150``."""
    traffic_classes: tuple[dict[str, str], ...] = ()
    """Rows of the ``RoCE used TCs`` table (Switch-Priority, TC, Application, ETS)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    @property
    def mode(self) -> str:
        return self.fields.get("RoCE mode", "")

    @property
    def trust(self) -> str:
        return self.fields.get("Port trust mode", "")

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        return tuple(p for key, value in self.fields.items() if key.startswith("switch-priority ")
                     and value == "enabled" and (p := ascii_int(key.split()[1].rstrip(":"), 0, 7)) is not None)


@parser
def parse_onyx_show_roce(text: str) -> OnyxRoce:
    log = ProblemLog()
    fields: dict[str, str] = {}
    rows: list[dict[str, str]] = []
    section = ""
    header: list[str] = []
    in_table = False
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped:
            section = "" if not in_table else section
            continue
        if is_rule(stripped):
            in_table = True
            continue
        if in_table and section:
            words = stripped.split()
            if not header:
                header = words
            elif len(words) >= len(header):
                rows.append(dict(zip(header, [*words[: len(header) - 1], " ".join(words[len(header) - 1 :])],
                                     strict=True)))
            else:
                log.unknown(number, line, "table row with fewer cells than the header")
            continue
        if stripped.endswith(":") and indent_of(line) == 0:
            section, in_table, header = stripped[:-1].strip(), False, []
            continue
        key, sep, value = stripped.partition(":")
        if not sep:
            log.unknown(number, line, "not a 'key : value' line")
            continue
        name = key.strip()
        if indent_of(line) > 0 and section:
            name = f"{section}.{name}"
        else:
            section = ""
        fields[name] = value.strip()
    if "RoCE mode" not in fields:
        log.add(0, "", "no 'RoCE mode' line: not Onyx 'show roce'")
    return OnyxRoce(fields, tuple(rows), log.freeze(), log.unknown_lines)
