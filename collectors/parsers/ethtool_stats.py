"""Parser for ``ethtool -S <netdev>`` (NIC statistics).

Accepts the full output (``NIC statistics:`` header then indented
``name: value`` lines), captures without the header or indentation, and
``grep``-filtered excerpts. Values are the driver's raw u64 counters (frames,
bytes, events; ``*_pause_duration`` in microseconds on mlx5, see docs/domain.md).
Per-priority counters (mlx5 ``rx_prio3_pause``, mlx4 ``rx_pause_prio_3``) are
reachable through :meth:`EthtoolStats.priority` and :meth:`EthtoolStats.pause_frames`.
A headerless text with at least as many unrecognised lines as counter lines is not
trusted: its counter-like lines are listed as problems, none is returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import U64, read_int

# mlx5: rx_prio3_pause, tx_prio3_pause_duration; mlx4: rx_pause_prio_3, rx_pause_duration_prio_3
_PRIO_MLX5 = re.compile(r"^(rx|tx)_prio([0-9]{1,3})_(\w+)$", re.ASCII)
_PRIO_MLX4 = re.compile(r"^(rx|tx)_(\w+?)_prio_([0-9]{1,3})$", re.ASCII)


@dataclass(frozen=True, slots=True)
class EthtoolStats:
    counters: dict[str, int]  # name -> raw value, in the order printed
    has_header: bool  # the "NIC statistics:" line was present
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def priority(self, prio: int) -> dict[str, int]:
        """Counters of one 802.1p priority with the priority removed from the name.

        ``rx_prio3_pause`` and ``rx_pause_prio_3`` both become ``rx_pause`` for ``prio=3``.
        """
        out: dict[str, int] = {}
        for name, value in self.counters.items():
            m = _PRIO_MLX5.match(name)
            if m is not None and int(m.group(2)) == prio:
                out[f"{m.group(1)}_{m.group(3)}"] = value
                continue
            m = _PRIO_MLX4.match(name)
            if m is not None and int(m.group(3)) == prio:
                out[f"{m.group(1)}_{m.group(2)}"] = value
        return out

    def priorities(self) -> tuple[int, ...]:
        """Priorities that have at least one per-priority counter, ascending."""
        seen: set[int] = set()
        for name in self.counters:
            m = _PRIO_MLX5.match(name)
            if m is not None:
                seen.add(int(m.group(2)))
                continue
            m = _PRIO_MLX4.match(name)
            if m is not None:
                seen.add(int(m.group(3)))
        return tuple(sorted(seen))

    def pause_frames(self, direction: str = "rx") -> dict[int, int]:
        """PFC pause frames per priority: ``direction`` "rx" (received) or "tx" (sent).

        Only priorities with PFC enabled have these counters (RoCE usually 3).
        """
        key = f"{direction}_pause"
        out = {}
        for prio in self.priorities():
            value = self.priority(prio).get(key)
            if value is not None:
                out[prio] = value
        return out


@parser
def parse_ethtool_stats(text: str) -> EthtoolStats:
    """Parse ``ethtool -S`` output or an excerpt of it; never raises."""
    log = ProblemLog()
    counters: dict[str, int] = {}
    has_header = False
    for line_no, line in enumerate(text.splitlines(), 1):
        name, sep, value = line.partition(":")
        name = name.strip()
        if not sep or not name:
            if line.strip():
                log.unknown(line_no, line)
            continue
        value = value.strip()
        if not value:
            # "NIC statistics:", or a group header of newer ethtool ("Standard stats for eth0:")
            if name == "NIC statistics":
                has_header = True
            elif not name.startswith("Standard stats for "):
                log.unknown(line_no, line)
            continue
        if " " in name or "\t" in name:
            log.unknown(line_no, line)
            continue
        number = read_int(value)
        if number is None or value[:2] in ("0x", "0X"):
            log.unknown(line_no, line, "value is not an integer")
            continue
        if U64.check(number, log, line_no, line, name) is None:  # ethtool prints u64 (%llu)
            continue
        if name in counters:
            log.add(line_no, line, f"repeated counter {name!r}; last value kept")
        counters[name] = number
    if not has_header and counters and log.unknown_lines >= len(counters):
        # Mostly other text: the few "name: number" lines are not trusted as counters.
        _distrust(text, log)
        counters = {}
    return EthtoolStats(counters, has_header, log.freeze(), log.unknown_lines)


def _distrust(text: str, log: ProblemLog) -> None:
    """List the counter-like lines of a text that is mostly not ``ethtool -S``."""
    for line_no, line in enumerate(text.splitlines(), 1):
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and name and " " not in name and "\t" not in name and value.strip().lstrip("-").isdigit():
            log.unknown(line_no, line, "counter-like line, but most of the text is not ethtool -S")
