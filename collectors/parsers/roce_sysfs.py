"""RoCE settings read from sysfs and the MLNX_OFED RDMA-CM tools.

- ``grep -H . /sys/class/net/*/ecn/roce_{np,rp}/enable/* /sys/class/net/*/mtu
  /sys/class/infiniband/*/tc/1/traffic_class``: ``PATH:VALUE`` per file
  (:func:`parse_roce_sysfs`). DCQCN is on for a priority when both its
  notification point (``roce_np``, answers CE marks with CNPs) and its
  reaction point (``roce_rp``, slows down on CNPs) are enabled (NVIDIA
  MLNX_OFED "Explicit Congestion Notification (ECN)").
- ``cat /sys/class/infiniband/DEV/tc/1/traffic_class``: the traffic class verbs
  QPs get by default; MLNX_OFED prints ``Global tclass=106``, an unset file
  prints nothing (:func:`parse_traffic_class`).
- ``cma_roce_tos -d DEV [-t TOS]``: RDMA-CM's default ToS, printed as a bare
  number (:func:`parse_cma_roce_tos`); ``cma_roce_mode -d DEV``: RDMA-CM's default
  RoCE mode, ``RoCE v2`` or ``IB/RoCE v1`` (:func:`parse_cma_roce_mode`).

Paths are taken up to the first ``:`` of a line: the files read here
(``/sys/class/net/...``, ``/sys/class/infiniband/...``) have none in their names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_int
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines

TOS_MAX = 255
"""The IPv4 ToS / IPv6 traffic class is one octet (DSCP in its upper 6 bits, ECN in the lower 2)."""
MTU_MAX = 2**20
"""Far above any netdev MTU (jumbo frames stop near 9,216 bytes; the kernel's limit is 65,535 for most)."""


@dataclass(frozen=True, slots=True)
class RoceSysfs:
    values: dict[str, str] = field(default_factory=dict)
    """Path -> the file's content as printed (one line)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    def ecn_enabled(self, netdev: str, point: str, priority: int) -> bool | None:
        """``point``: ``roce_np`` or ``roce_rp``; None when the file was not read or holds no 0/1."""
        value = self.values.get(f"/sys/class/net/{netdev}/ecn/{point}/enable/{priority}")
        return None if value is None or value.strip() not in ("0", "1") else value.strip() == "1"

    def mtu(self, netdev: str) -> int | None:
        value = self.values.get(f"/sys/class/net/{netdev}/mtu")
        return None if value is None else ascii_int(value, 0, MTU_MAX)

    def traffic_class(self, device: str) -> int | None:
        value = self.values.get(f"/sys/class/infiniband/{device}/tc/1/traffic_class")
        return None if value is None else _tclass(value)


@parser
def parse_roce_sysfs(text: str) -> RoceSysfs:
    log = ProblemLog()
    values: dict[str, str] = {}
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        path, sep, value = line.partition(":")
        if not sep or not path.startswith("/sys/"):
            log.unknown(number, line, "expected PATH:VALUE (grep -H)")
            continue
        values[path] = value.strip()
    return RoceSysfs(values, log.freeze(), log.unknown_lines)


def _tclass(text: str) -> int | None:
    value = text.strip()
    if value.startswith("Global tclass="):
        value = value.removeprefix("Global tclass=")
    return ascii_int(value, 0, TOS_MAX)


@dataclass(frozen=True, slots=True)
class TrafficClass:
    tclass: int | None
    """None: the file is empty (not set: the application's own choice, or 0)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_traffic_class(text: str) -> TrafficClass:
    log = ProblemLog()
    lines = [(n, line) for n, line in enumerate(split_lines(text), start=1) if line.strip()]
    tclass = None
    for number, line in lines:
        value = _tclass(line)
        if value is None or tclass is not None:
            log.unknown(number, line, "expected 'Global tclass=N' or a number 0..255, once")
        else:
            tclass = value
    return TrafficClass(tclass, log.freeze(), log.unknown_lines)


@dataclass(frozen=True, slots=True)
class CmaRoceTos:
    tos: int | None
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_cma_roce_tos(text: str) -> CmaRoceTos:
    log = ProblemLog()
    tos = None
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        value = ascii_int(line, 0, TOS_MAX)
        if value is None or tos is not None:
            log.unknown(number, line, "expected one ToS value 0..255")
        else:
            tos = value
    if tos is None:
        log.add(0, "", "no ToS value")
    return CmaRoceTos(tos, log.freeze(), log.unknown_lines)


ROCE_MODES = ("RoCE v2", "IB/RoCE v1")
"""What the kernel's RDMA-CM configfs ``default_roce_mode`` holds (and ``cma_roce_mode`` prints)."""


@dataclass(frozen=True, slots=True)
class CmaRoceMode:
    mode: str
    """``RoCE v2`` or ``IB/RoCE v1``; "" when unreadable."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


@parser
def parse_cma_roce_mode(text: str) -> CmaRoceMode:
    log = ProblemLog()
    mode = ""
    for number, line in enumerate(split_lines(text), start=1):
        stripped = " ".join(line.split())
        if not stripped:
            continue
        if stripped in ROCE_MODES and not mode:
            mode = stripped
        else:
            log.unknown(number, line, f"expected one of: {', '.join(ROCE_MODES)}")
    if not mode:
        log.add(0, "", "no RoCE mode")
    return CmaRoceMode(mode, log.freeze(), log.unknown_lines)
