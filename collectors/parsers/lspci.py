"""``lspci -vvv`` (each device's PCIe link and ACS control) and ``lspci -tv`` (the bus tree).

Why: GPUDirect RDMA needs the GPU and its NIC to reach each other without a
detour through the root complex: PCIe Access Control Services (ACS) must be
off on the bridges between them (NCCL troubleshooting, "PCI Access Control
Services"), and both must train their link at the speed and width they are
capable of (``LnkSta`` against ``LnkCap``). The tree gives the bridges between
two devices.

Layouts (tests/fixtures/pcie): ``LnkSta: Speed 32GT/s (ok), Width x16 (ok)``
in older pciutils, ``(downgraded)`` when trained below capability, and no
suffix at all in newer ones; tabs or spaces as indentation; ``....`` where a
poster elided lines; ``grep ACSCtl`` output without any device header; tree
fragments starting with `` +-[0000:40]``. Lines lspci prints that the checks
do not need (Control, Status, BARs, capabilities' other fields) are part of
the format, not unknown lines; an unindented line that is not a device
header is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_float, ascii_int
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines

MAX_SPEED_GTS = 256.0
"""PCIe 7.0 signals 128 GT/s per lane; twice that refuses garbage, never a real link."""
MAX_WIDTH = 32
"""x32 is the widest link PCIe defines."""

_HEADER = re.compile(r"([0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7]) ")
ACS_FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
"""ACS capability/control bits as lspci names them (PCIe Base Specification, ACS Extended Capability)."""


@dataclass(frozen=True, slots=True)
class PcieLink:
    speed_gts: float | None
    """Per-lane signalling rate in GT/s (``2.5`` .. ``64``)."""
    width: int | None
    """Lanes (``x16`` -> 16)."""
    downgraded: bool = False
    """lspci said ``(downgraded)`` for the speed or the width (older pciutils only)."""


@dataclass(frozen=True, slots=True)
class PciDevice:
    bdf: str
    """``0000:19:00.0``: the domain is added when lspci leaves it out."""
    device_class: str
    name: str
    port_type: str = ""
    """From ``Express (v2) <type>``: ``Endpoint``, ``Upstream Port``, ``Downstream Port``, ``Root Port`` ..."""
    numa_node: int | None = None
    link_cap: PcieLink | None = None
    link_status: PcieLink | None = None
    acs_cap: tuple[str, ...] | None = None
    """ACS bits the device supports; None without an ACS capability."""
    acs_enabled: tuple[str, ...] | None = None
    """ACS bits switched on (``ACSCtl`` ``+`` flags); None without an ACS capability, () when all are off."""


@dataclass(frozen=True, slots=True)
class LspciVerbose:
    devices: tuple[PciDevice, ...]
    orphan_acs_enabled: tuple[tuple[str, ...], ...] = ()
    """``ACSCtl`` lines with no device header before them (``lspci -vvv | grep ACSCtl``)."""
    elided_lines: int = 0
    """``....`` lines where whoever captured the text cut lines out."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    def device(self, bdf: str) -> PciDevice | None:
        wanted = normalize_bdf(bdf)
        return next((d for d in self.devices if d.bdf == wanted), None)


def normalize_bdf(text: str) -> str:
    """``19:00.0`` -> ``0000:19:00.0``; ``00000000:18:00.0`` (nvidia-smi's 8-digit domain) -> ``0000:18:00.0``."""
    text = text.strip().lower()
    parts = text.split(":")
    if len(parts) == 2:
        return f"0000:{text}"
    if len(parts) == 3 and len(parts[0]) > 4 and set(parts[0][:-4]) <= {"0"}:
        return f"{parts[0][-4:]}:{parts[1]}:{parts[2]}"
    return text


def _speed(text: str) -> float | None:
    value = text.strip().removeprefix("Speed").strip()
    if not value.endswith("GT/s"):
        return None
    return ascii_float(value.removesuffix("GT/s"), 0.0, MAX_SPEED_GTS)


def _link(text: str) -> PcieLink:
    """``Port #0, Speed 32GT/s, Width x16, ASPM ...`` or ``Speed 16GT/s (downgraded), Width x4 (ok)``."""
    speed: float | None = None
    width: int | None = None
    downgraded = False
    for part in text.split(","):
        word = part.strip()
        downgraded = downgraded or "(downgraded)" in word
        word = word.replace("(downgraded)", "").replace("(ok)", "").strip()
        if word.startswith("Speed "):
            speed = _speed(word)
        elif word.startswith("Width x"):
            width = ascii_int(word.removeprefix("Width x"), 1, MAX_WIDTH)
    return PcieLink(speed, width, downgraded)


def _flags(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(bits named, bits ``+``) of an ``ACSCap``/``ACSCtl`` line's value."""
    named: list[str] = []
    on: list[str] = []
    for word in text.split():
        name, sign = word[:-1], word[-1:]
        if name in ACS_FLAGS and sign in "+-":
            named.append(name)
            if sign == "+":
                on.append(name)
    return tuple(named), tuple(on)


class _Device:
    __slots__ = ("acs_cap", "acs_enabled", "bdf", "device_class", "link_cap", "link_status", "name", "numa",
                 "port_type")

    def __init__(self, bdf: str, device_class: str, name: str) -> None:
        self.bdf, self.device_class, self.name = bdf, device_class, name
        self.port_type = ""
        self.numa: int | None = None
        self.link_cap: PcieLink | None = None
        self.link_status: PcieLink | None = None
        self.acs_cap: tuple[str, ...] | None = None
        self.acs_enabled: tuple[str, ...] | None = None

    def freeze(self) -> PciDevice:
        return PciDevice(self.bdf, self.device_class, self.name, self.port_type, self.numa, self.link_cap,
                         self.link_status, self.acs_cap, self.acs_enabled)


@parser
def parse_lspci_verbose(text: str) -> LspciVerbose:
    """Devices of ``lspci -vvv`` (also ``-vv``, ``-s BDF``, and ``| grep ACSCtl`` slices)."""
    log = ProblemLog()
    devices: list[PciDevice] = []
    orphans: list[tuple[str, ...]] = []
    elided = 0
    current: _Device | None = None
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.strip(".") == "" and len(stripped) >= 3:
            elided += 1
            continue
        if line[:1] not in (" ", "\t"):
            match = _HEADER.match(line)
            if match is None:
                log.unknown(number, line, "not a device header (BDF class: name)")
                continue
            if current is not None:
                devices.append(current.freeze())
            bdf = normalize_bdf(match.group(0).strip())
            device_class, _, name = line[match.end():].partition(": ")
            current = _Device(bdf, device_class.strip(), name.strip())
            continue
        key, sep, value = stripped.partition(":")
        if not sep:
            continue  # a continuation of the previous field
        if key == "ACSCtl":
            _, on = _flags(value)
            if current is None:
                orphans.append(on)
            else:
                current.acs_enabled = on
        elif current is None:
            log.unknown(number, line, "device field before any device header")
        elif key == "ACSCap":
            current.acs_cap = _flags(value)[1]
        elif key == "LnkCap":
            current.link_cap = _link(value)
        elif key == "LnkSta":
            current.link_status = _link(value)
        elif key == "NUMA node":
            current.numa = ascii_int(value, 0, 4096)
        elif key.startswith("Capabilities") and "Express (v" in value:
            kind = value.split("Express (v", 1)[1].partition(")")[2]
            current.port_type = kind.split(",", 1)[0].strip()
    if current is not None:
        devices.append(current.freeze())
    return LspciVerbose(tuple(devices), tuple(orphans), elided, log.freeze(), log.unknown_lines)


# ------------------------------------------------------------------ lspci -tv

_TREE_TOKEN = re.compile(
    r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{2})\]|([0-9a-fA-F]{2}\.[0-7])(?:-\[([0-9a-fA-F]{2})(?:-[0-9a-fA-F]{2})?\])?"
)


@dataclass(frozen=True, slots=True)
class TreeDevice:
    bdf: str
    parent: str
    """The bridge above it (its BDF), "" for a device on a root bus."""
    name: str = ""
    bridge: bool = False


@dataclass(frozen=True, slots=True)
class LspciTree:
    devices: tuple[TreeDevice, ...]
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0
    _parents: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def ancestors(self, bdf: str) -> tuple[str, ...]:
        """The bridges above ``bdf``, nearest first (empty when it is unknown or on a root bus)."""
        parents = self._parents or {d.bdf: d.parent for d in self.devices}
        chain: list[str] = []
        seen = {normalize_bdf(bdf)}
        node = parents.get(normalize_bdf(bdf), "")
        while node and node not in seen:
            chain.append(node)
            seen.add(node)
            node = parents.get(node, "")
        return tuple(chain)

    def bridges_between(self, a: str, b: str) -> tuple[str, ...]:
        """The bridges on the path between two devices: each side's ancestors up to and including their
        nearest common one; every ancestor of both when they share none (different root complexes)."""
        up_a, up_b = self.ancestors(a), self.ancestors(b)
        common = next((x for x in up_a if x in up_b), None)
        if common is None:
            return tuple(dict.fromkeys((*up_a, *up_b)))
        path = [*up_a[: up_a.index(common) + 1], *up_b[: up_b.index(common)]]
        return tuple(dict.fromkeys(path))


class _Level:
    __slots__ = ("bdf", "bus", "column", "domain")

    def __init__(self, column: int, domain: str, bus: str, bdf: str) -> None:
        self.column, self.domain, self.bus, self.bdf = column, domain, bus, bdf


@parser
def parse_lspci_tree(text: str) -> LspciTree:
    """``lspci -tv``: every device with its full BDF and the bridge it hangs from.

    A device's bus is the secondary bus of the bridge (or domain root) whose
    entry starts left of it: the tree's columns are its nesting.
    """
    log = ProblemLog()
    stack: list[_Level] = []
    devices: list[TreeDevice] = []
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        if line.lstrip()[:1] not in ("-", "+", "|", "\\"):
            log.unknown(number, line, "not a tree line (starts with -, +, | or \\)")
            continue
        found = False
        position = 0
        while True:
            match = _TREE_TOKEN.search(line, position)
            if match is None:
                break
            column = match.start()
            position = match.end()
            if match.group(1) is not None:
                while stack and stack[-1].column >= column:
                    stack.pop()
                stack.append(_Level(column, match.group(1).lower(), match.group(2).lower(), ""))
                found = True
                continue
            if column < 2 or line[column - 1] != "-" or line[column - 2] not in "+\\-":
                break  # device names may hold "xx.y"; an entry always follows "+-", "\\-" or "--"
            while stack and stack[-1].column >= column:
                stack.pop()
            if not stack:
                stack.append(_Level(-1, "0000", "00", ""))  # a single-domain tree without a [domain:bus] root
            parent = stack[-1]
            bdf = f"{parent.domain}:{parent.bus}:{match.group(3).lower()}"
            found = True
            secondary = match.group(4)
            rest = line[position:]
            name = rest.strip(" -+|\\") if rest.startswith("  ") else ""
            devices.append(TreeDevice(bdf, parent.bdf, name, secondary is not None))
            if secondary is not None:
                stack.append(_Level(column, parent.domain, secondary.lower(), bdf))
            if name:
                break
        if not found and line.strip(" |") != "":
            log.unknown(number, line, "no device entry in this tree line")
    parents = {d.bdf: d.parent for d in devices}
    return LspciTree(tuple(devices), log.freeze(), log.unknown_lines, parents)
