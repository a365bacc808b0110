"""Kernel log lines (``dmesg``, ``dmesg -T``, ``dmesg --decode --time-format iso``, ``journalctl -k``) about
NICs, GPUs and PCIe: mlx5 firmware and PCIe bandwidth, AER errors, NVIDIA Xid events.

Why: the kernel says at boot when a NIC's PCIe link trained below its
capability (``63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8
link at ...``), which firmware each NIC runs, and logs AER errors and Xid
events as they happen: the evidence behind a PCIe check and a GPU finding.

Timestamp styles (tests/fixtures/kernel-log): ``[ 8.387515]``,
``[Sun Feb 23 16:24:18 2025]``, ``kern  :warn  : 2025-01-17T15:36:26,128279+00:00``,
``Sep 19 16:18:02 host kernel: [68183.6]``, bare ``kernel: ``, and ``dmesg -H``'s
``[  +0.000012]``. A line indented past the timestamp continues the message
before it (NVRM prints multi-line messages that way). A line in none of these
forms is an unknown line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_float, ascii_int
from fleet.collectors.parsers.lspci import MAX_SPEED_GTS, MAX_WIDTH, normalize_bdf
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines

XID_MAX = 2**16
"""Xid codes are small numbers (NVIDIA's Xid catalogue lists codes below 200)."""

_BRACKET_TS = re.compile(r"\[(?: *\+?[0-9][^\]\n]{0,38}|[A-Z][a-z]{2}[ 0-9][^\]\n]{1,36})\] ?")
"""``[ 8.387515]``, ``[  +0.000012]``, ``[Sun Feb 23 16:24:18 2025]``, ``[Feb23 16:24]``: a number or a date,
so another tool's ``[tuning]`` or ``[INFO]`` prefix is not read as a kernel timestamp."""
_DECODE = re.compile(r"([a-z]{2,8}) *:([a-z]{2,8}) *: (\S{10,40}) ")
_JOURNAL = re.compile(r"[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} \S{1,64} kernel: ")


@dataclass(frozen=True, slots=True)
class KernelLine:
    line: int
    """1-based line number of the message's first line."""
    timestamp: str
    level: str
    """``warn``, ``info`` ... (``--decode`` only), else ""."""
    source: str
    """The driver or prefix that logged it: ``mlx5_core``, ``NVRM``, ``pcieport``, ``nvidia``."""
    device: str
    """The device it names (``0000:1a:00.0``), "" when none."""
    message: str


@dataclass(frozen=True, slots=True)
class XidEvent:
    line: int
    device: str
    """``0000:9b:00`` as NVRM prints it (bus, no function)."""
    xid: int
    detail: str


@dataclass(frozen=True, slots=True)
class AerEvent:
    line: int
    device: str
    severity: str
    """``Corrected``, ``Correctable``, ``Uncorrected (Fatal)`` ... as printed, "" when not on this line."""
    message: str


@dataclass(frozen=True, slots=True)
class PcieBandwidth:
    """mlx5_core's boot report of its PCIe link (``pcie_print_link_status`` in the kernel)."""

    line: int
    device: str
    available_gbps: float | None
    speed_gts: float | None
    width: int | None
    limited_at: str
    """The upstream device that limits it; "" when the link runs at the device's capability."""
    capable_gbps: float | None = None
    capable_speed_gts: float | None = None
    capable_width: int | None = None


@dataclass(frozen=True, slots=True)
class KernelLog:
    lines: tuple[KernelLine, ...]
    xids: tuple[XidEvent, ...] = ()
    aer: tuple[AerEvent, ...] = ()
    pcie_bandwidth: tuple[PcieBandwidth, ...] = ()
    firmware: tuple[tuple[str, str], ...] = ()
    """(device, firmware version) from mlx5_core's ``firmware version:`` lines."""
    fallen_off_bus: tuple[str, ...] = ()
    """Devices NVRM says have fallen off the bus (with or without an Xid)."""
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


def _strip_timestamp(line: str) -> tuple[str, str, str] | None:
    """(timestamp, level, message) of one log line; None when the line has no known prefix."""
    if line.startswith("["):
        match = _BRACKET_TS.match(line)
        if match is not None:
            return match.group(0).strip(), "", line[match.end():]
    match = _DECODE.match(line)
    if match is not None:
        return match.group(3), match.group(2), line[match.end():]
    match = _JOURNAL.match(line)
    if match is not None:
        rest = line[match.end():]
        inner = _BRACKET_TS.match(rest) if rest.startswith("[") else None
        stamp = line[: match.end()].removesuffix(" kernel: ")
        return (stamp, "", rest[inner.end():]) if inner else (stamp, "", rest)
    if line.startswith("kernel: "):
        return "", "", line.removeprefix("kernel: ")
    return None


def _source_device(message: str) -> tuple[str, str, str]:
    """``mlx5_core 0000:1a:00.0: text`` -> (mlx5_core, 0000:1a:00.0, text); ``NVRM: text`` -> (NVRM, "", text)."""
    head, sep, rest = message.partition(": ")
    if not sep:
        return "", "", message
    words = head.split(" ")
    if len(words) == 2 and words[1].count(":") >= 1 and "." in words[1]:
        return words[0], normalize_bdf(words[1]), rest
    if len(words) == 1:
        return words[0], "", rest
    return "", "", message


def _gts_width(text: str) -> tuple[float | None, int | None]:
    """``8.0 GT/s PCIe x8 link`` -> (8.0, 8)."""
    speed_text, _, rest = text.strip().partition(" GT/s PCIe x")
    width_text = rest.split(" ", 1)[0]
    return ascii_float(speed_text, 0.0, MAX_SPEED_GTS), ascii_int(width_text, 1, MAX_WIDTH)


def _bandwidth(number: int, device: str, text: str) -> PcieBandwidth | None:
    if "available PCIe bandwidth" not in text:
        return None
    available = ascii_float(text.split(" Gb/s", 1)[0], 0.0, 1e6)
    after = text.split("available PCIe bandwidth", 1)[1]
    if after.startswith(", limited by "):
        limited, _, capable = after.removeprefix(", limited by ").partition(" (capable of ")
        link, _, at = limited.partition(" link at ")
        speed, width = _gts_width(link)
        capable_gbps = ascii_float(capable.split(" Gb/s", 1)[0], 0.0, 1e6)
        cap_speed, cap_width = _gts_width(capable.split(" with ", 1)[1]) if " with " in capable else (None, None)
        return PcieBandwidth(number, device, available, speed, width, normalize_bdf(at.strip()), capable_gbps,
                             cap_speed, cap_width)
    speed, width = _gts_width(after.strip(" ()"))
    return PcieBandwidth(number, device, available, speed, width, "")


def _xid(number: int, message: str) -> XidEvent | None:
    """``Xid (PCI:0000:9b:00): 119, pid=..., text`` or the old ``Xid (PCI:0000:02:00): 79, text``."""
    if not message.startswith("Xid (PCI:"):
        return None
    device, sep, rest = message.removeprefix("Xid (PCI:").partition("): ")
    code_text, _, detail = rest.partition(",")
    code = ascii_int(code_text, 0, XID_MAX)
    if not sep or code is None:
        return None
    return XidEvent(number, device, code, detail.strip())


@parser
def parse_kernel_log(text: str) -> KernelLog:
    log = ProblemLog()
    entries: list[KernelLine] = []
    xids: list[XidEvent] = []
    aer: list[AerEvent] = []
    bandwidth: list[PcieBandwidth] = []
    firmware: list[tuple[str, str]] = []
    fallen: list[str] = []
    for number, raw in enumerate(split_lines(text), start=1):
        if not raw.strip():
            continue
        parsed = _strip_timestamp(raw)
        if parsed is None:
            if raw[:1] in (" ", "\t") and entries:
                last = entries[-1]
                joined = f"{last.message} {raw.strip()}"
                entries[-1] = KernelLine(last.line, last.timestamp, last.level, last.source, last.device, joined)
                if "fallen off the bus" in raw and last.source == "NVRM":
                    fallen.append(last.device or _nvrm_device(joined))
                continue
            log.unknown(number, raw, "no kernel log timestamp or prefix")
            continue
        stamp, level, message = parsed
        source, device, rest = _source_device(message.strip())
        entries.append(KernelLine(number, stamp, level, source, device, rest))
        if source == "NVRM":
            event = _xid(number, rest)
            if event is not None:
                xids.append(event)
            if "fallen off the bus" in rest:
                fallen.append(event.device if event else _nvrm_device(rest))
        if "AER:" in rest or rest.startswith("PCIe Bus Error:"):
            severity = rest.split("severity=", 1)[1].split(",", 1)[0] if "severity=" in rest else ""
            aer.append(AerEvent(number, device, severity, rest))
        if source.startswith("mlx5"):
            found = _bandwidth(number, device, rest)
            if found is not None:
                bandwidth.append(found)
            if rest.startswith("firmware version: "):
                firmware.append((device, rest.removeprefix("firmware version: ").strip()))
    return KernelLog(tuple(entries), tuple(xids), tuple(aer), tuple(bandwidth), tuple(firmware),
                     tuple(dict.fromkeys(f for f in fallen if f)), log.freeze(), log.unknown_lines)


def _nvrm_device(message: str) -> str:
    """``The NVIDIA GPU 0000:b3:00.0 ...`` -> ``0000:b3:00.0``."""
    for word in message.split():
        if word.count(":") == 2 and "." in word:
            return normalize_bdf(word)
    return ""
