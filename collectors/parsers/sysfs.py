"""Parser for dumps of ``/sys/class/infiniband/<dev>/ports/<n>/...``.

Command mode reads RDMA ports with
``grep -H . /sys/class/infiniband/*/ports/*/{counters,hw_counters}/* ...``: one
``path:value`` line per file (``.../state:4: ACTIVE``, ``.../rate:400 Gb/sec (4X NDR)``).
The same data also reaches us as captures in other shapes, all accepted here:

- ``=== ./name ===`` headers each followed by the file's content (a shell loop);
- mlnx-tools ``show_counters``: ``Port 1 hw counters:`` then ``name: value``;
- ttar archives (``Path:`` / ``Lines:`` / content / ``Mode:``), as in prometheus/procfs.

Counters are raw integers as the kernel prints them: ``port_xmit_data`` and
``port_rcv_data`` count 4-byte words. Counters sitting at the maximum of their
IBA width are listed in ``saturated`` (never a rate; see ``ibfields``).
When a capture does not name the directory, a standard PortCounters name goes
to ``counters`` and any other integer file to ``hw_counters``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.ibfields import (
    IB_SATURATING_COUNTER_BITS,
    SYSFS_COUNTER_BITS,
    parse_rate,
    parse_state,
    saturated_names,
)
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import PORT, U64, Range, bits, read_int


@dataclass(frozen=True, slots=True)
class SysfsPort:
    device: str  # "mlx5_0"; "" when the capture does not name it
    port: int | None  # None when the capture does not name it
    counters: dict[str, int]  # counters/<name>, raw (port_*_data in 4-byte words)
    hw_counters: dict[str, int]  # hw_counters/<name>, raw event counts
    state: str  # "ACTIVE"
    state_code: int | None  # 4
    phys_state: str  # "LinkUp"
    phys_state_code: int | None  # 5
    rate_gbps: float | None  # "400 Gb/sec (4X NDR)" -> 400.0
    width: str  # "4X"
    speed: str  # "NDR"
    link_layer: str  # "InfiniBand" | "Ethernet"
    attributes: dict[str, str] = field(default_factory=dict)  # other port files, raw
    saturated: tuple[str, ...] = ()  # counters at the maximum of their width


@dataclass(frozen=True, slots=True)
class SysfsResult:
    ports: tuple[SysfsPort, ...]
    device_attributes: dict[str, dict[str, str]]  # device -> {fw_ver, board_id, ...}
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def port(self, device: str, port: int | None) -> SysfsPort | None:
        """The port with this device name and number, if the dump had it."""
        for p in self.ports:
            if p.device == device and p.port == port:
                return p
        return None


_PORT_ATTRS = frozenset({"state", "phys_state", "rate", "link_layer"})
_PMA_NAMES = frozenset(
    {
        *SYSFS_COUNTER_BITS,
        "unicast_xmit_packets",
        "unicast_rcv_packets",
        "multicast_xmit_packets",
        "multicast_rcv_packets",
    }
)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
# The kernel reads the PortCounters error fields at their IBA width (drivers/infiniband/core/
# sysfs.c, PORT_PMA_ATTR); every other counter file is a u64.
_WIDTHS: dict[str, Range] = {
    name: bits(width, f"the {width}-bit PortCounters field") for name, width in IB_SATURATING_COUNTER_BITS.items()
}
_MAX_DIGITS = len(str(U64.high))
_COUNTERS = "counters"
_HW = "hw_counters"
_ATTR = "attr"


class _Acc:
    __slots__ = ("attrs", "counters", "hw")

    def __init__(self) -> None:
        self.counters: dict[str, int] = {}
        self.hw: dict[str, int] = {}
        self.attrs: dict[str, str] = {}


class _Builder:
    """Accumulates values per (device, port) and per device while lines are read."""

    def __init__(self, log: ProblemLog) -> None:
        self.log = log
        self.ports: dict[tuple[str, int | None], _Acc] = {}
        self.devices: dict[str, dict[str, str]] = {}
        # directory path -> (accumulator, kind) or (device attrs, prefix); None = not sysfs
        self._dirs: dict[str, tuple[_Acc | dict[str, str], str] | None] = {}
        # directory -> its counters or hw_counters dict: the hot path of grep -H dumps
        self.counter_dirs: dict[str, dict[str, int]] = {}

    def acc(self, device: str, port: int | None) -> _Acc:
        key = (device, port)
        acc = self.ports.get(key)
        if acc is None:
            acc = self.ports[key] = _Acc()
        return acc

    def put(self, acc: _Acc, kind: str, name: str, value: str, line_no: int, line: str) -> None:
        if kind == _ATTR:
            if name in acc.attrs:
                self.log.add(line_no, line, f"{name} seen twice; last value kept")
            acc.attrs[name] = value
            return
        number = read_int(value)
        if number is None:
            self.log.add(line_no, line, f"{kind}/{name}: value is not an integer")
            return
        if _WIDTHS.get(name, U64).check(number, self.log, line_no, line, f"{kind}/{name}") is None:
            return
        target = acc.counters if kind == _COUNTERS else acc.hw
        if name in target:
            self.log.add(line_no, line, f"{kind}/{name} seen twice; last value kept")
        target[name] = number

    def put_bare(self, acc: _Acc, name: str, value: str, line_no: int, line: str) -> None:
        """A file whose directory the capture does not say: classify by name."""
        if name in _PMA_NAMES:
            self.put(acc, _COUNTERS, name, value, line_no, line)
        elif name in _PORT_ATTRS or read_int(value) is None:
            self.put(acc, _ATTR, name, value, line_no, line)
        else:
            self.put(acc, _HW, name, value, line_no, line)

    def _target(self, directory: str) -> tuple[_Acc | dict[str, str], str] | None:
        if directory in self._dirs:
            return self._dirs[directory]
        segs = [s for s in directory.split("/") if s and s != "."]
        target: tuple[_Acc | dict[str, str], str] | None = None
        if "ports" in segs:
            i = len(segs) - 1 - segs[::-1].index("ports")
            if i + 1 < len(segs) and (port := read_int(segs[i + 1])) is not None and PORT.holds(port):
                device = segs[i - 1] if i > 0 else ""
                rest = segs[i + 2 :]
                acc = self.acc(device, port)
                if rest == [_COUNTERS]:
                    target = (acc, _COUNTERS)
                    self.counter_dirs[directory] = acc.counters
                elif rest == [_HW]:
                    target = (acc, _HW)
                    self.counter_dirs[directory] = acc.hw
                else:
                    target = (acc, _ATTR + ":" + "/".join(rest))
        elif "infiniband" in segs:
            i = segs.index("infiniband")
            if i + 1 < len(segs):
                attrs = self.devices.setdefault(segs[i + 1], {})
                target = (attrs, "/".join(segs[i + 2 :]))
        elif segs and segs[-1] in (_COUNTERS, _HW):
            target = (self.acc("", None), segs[-1])
        self._dirs[directory] = target
        return target

    def put_path(self, path: str, value: str, line_no: int, line: str, bare_ok: bool = False) -> bool:
        """Place ``path``'s value; False when the path is not an InfiniBand sysfs file.

        A path without a directory (``./symbol_error``) is accepted only where the
        capture's shape says it is a file (``bare_ok``: the ``=== name ===`` loop).
        """
        directory, _, name = path.rpartition("/")
        if not _NAME_RE.match(name):
            return False
        if not directory or directory == ".":
            if not bare_ok:
                return False
            self.put_bare(self.acc("", None), name, value, line_no, line)
            return True
        target = self._target(directory)
        if target is None:
            return False
        where, kind = target
        if isinstance(where, dict):
            key = f"{kind}/{name}" if kind else name
            if key in where:
                self.log.add(line_no, line, f"{key} seen twice; last value kept")
            where[key] = value
        elif kind.startswith(_ATTR + ":"):
            sub = kind[len(_ATTR) + 1 :]
            self.put(where, _ATTR, f"{sub}/{name}" if sub else name, value, line_no, line)
        else:
            self.put(where, kind, name, value, line_no, line)
        return True

    def build(self) -> tuple[tuple[SysfsPort, ...], dict[str, dict[str, str]]]:
        ports = []
        for (device, number), acc in self.ports.items():
            if not (acc.counters or acc.hw or acc.attrs):
                continue
            attrs = dict(acc.attrs)
            state_code, state = parse_state(attrs.pop("state", ""))
            phys_code, phys = parse_state(attrs.pop("phys_state", ""))
            rate_text = attrs.pop("rate", "")
            rate = parse_rate(rate_text)
            if rate_text and rate.rate_gbps is None:
                self.log.add(0, rate_text, f"{device}/{number}: rate not understood")
            ports.append(
                SysfsPort(
                    device=device,
                    port=number,
                    counters=acc.counters,
                    hw_counters=acc.hw,
                    state=state,
                    state_code=state_code,
                    phys_state=phys,
                    phys_state_code=phys_code,
                    rate_gbps=rate.rate_gbps,
                    width=rate.width,
                    speed=rate.speed,
                    link_layer=attrs.pop("link_layer", ""),
                    attributes=attrs,
                    saturated=saturated_names(acc.counters, SYSFS_COUNTER_BITS),
                )
            )
        return tuple(ports), self.devices


def _ttar(lines: list[str], i: int, path: str, b: _Builder, log: ProblemLog) -> int:
    """Read one ttar ``Path:`` record starting at ``lines[i]``; return the next index."""
    header = lines[i + 1] if i + 1 < len(lines) else ""
    count = read_int(header.removeprefix("Lines:")) if header.startswith("Lines:") else None
    if count is None or count < 0:
        log.unknown(i + 1, lines[i], "ttar Path: without a Lines: count")
        return i + 1
    body = lines[i + 2 : i + 2 + count]
    if len(body) < count:
        log.add(i + 1, lines[i], "ttar record truncated")
    value = "\n".join(body).removesuffix("EOF")  # ttar marks "no final newline" with EOF
    if not b.put_path(path, value.strip(), i + 1, lines[i]):
        log.unknown(i + 1, lines[i], "ttar path is not an InfiniBand sysfs file")
    return i + 2 + len(body)


@parser
def parse_sysfs(text: str) -> SysfsResult:
    """Parse a sysfs dump in any of the shapes above; never raises."""
    log = ProblemLog()
    b = _Builder(log)
    lines = text.splitlines()
    section: tuple[_Acc, str] | None = None  # show_counters "Port N hw counters:"
    pending: tuple[str, int] | None = None  # "=== path ===" waiting for its value
    counter_dirs = b.counter_dirs
    skip_to = 0  # a ttar record consumed the lines before this number
    for line_no, line in enumerate(lines, 1):
        if line_no < skip_to:
            continue
        head = line[:1]
        if head == "/" or head == ".":
            path, sep, value = line.partition(":")
            if sep:
                directory, _, name = path.rpartition("/")
                counters = counter_dirs.get(directory)
                if (
                    counters is not None
                    and name.isidentifier()
                    and value.isdigit()
                    and value.isascii()
                    and len(value) <= _MAX_DIGITS
                    and name not in _WIDTHS
                    and int(value) <= U64.high
                ):
                    if name in counters:
                        log.add(line_no, line, f"{name} seen twice; last value kept")
                    counters[name] = int(value)
                    continue
                if b.put_path(path, value.strip(), line_no, line):
                    continue
        elif not line or line.isspace():
            pending = None
            continue
        if pending is not None:
            if not b.put_path(pending[0], line.strip(), line_no, line, bare_ok=True):
                log.unknown(pending[1], pending[0], "not an InfiniBand sysfs file")
            pending = None
            continue
        if line.startswith("=== ") and line.endswith(" ==="):
            pending = (line[4:-4].strip(), line_no)
            continue
        if line.startswith("Path: "):
            skip_to = _ttar(lines, line_no - 1, line[6:].strip(), b, log) + 1
            continue
        if line.startswith(("Directory: ", "Mode: ", "# ttar ")):
            continue
        if line.startswith("Port ") and line.endswith("counters:"):
            words = line[:-1].split()
            port = read_int(words[1]) if len(words) >= 3 else None
            if port is not None and PORT.holds(port) and words[2:] in (["hw", "counters"], ["counters"]):
                section = (b.acc("", port), _HW if words[2] == "hw" else _COUNTERS)
                continue
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and name and " " not in name:
            if "/" in name and b.put_path(name, value.strip(), line_no, line):
                continue
            if section is not None and "/" not in name:
                b.put(section[0], section[1], name, value.strip(), line_no, line)
                continue
        log.unknown(line_no, line)
    if pending is not None:
        log.add(pending[1], pending[0], "header without a value (truncated?)")
    ports, devices = b.build()
    return SysfsResult(ports, devices, log.freeze(), log.unknown_lines)
