"""Numbers as tools print them, read safely, and the range of values each field can hold.

Reading: only ASCII digits count. ``str.isdigit()`` and ``\\d`` also accept
``"²"`` (which ``int()`` then refuses) and ``"٣"`` (which it reads as 3):
no tool prints either, so both are "not a number" here. At most
``MAX_DIGITS`` digits are read, so ``int()`` never meets CPython's
4,300-digit limit, costs nothing, and ``str()`` of a result never fails.

Ranges: a value outside the range of its field is not a reading but damage
(or a hostile host); parsers leave it out and list a problem (see
``base``). The widths and limits, with their sources:

========================  ===================  ==================================================
field                      range                source
========================  ===================  ==================================================
kernel / driver counter    0 .. 2**64-1         u64 in the kernel (``ethtool -S``, sysfs
                                                ``hw_counters``, ``rdma statistic``); IBA
                                                PortCountersExtended (``perfquery -x``)
IB PortCounters field      0 .. 2**width-1      IBA Vol 1, PortCounters attribute (16.1.3.5);
                                                widths in ``ibfields.MAD_COUNTER_BITS``
LID                        0 .. 0xFFFF          IBA Vol 1 4.1.3: 16-bit local identifier
port number                0 .. 255             IBA Vol 1 14.2.5.6: PortNum is 8 bits
LMC                        0 .. 7               IBA Vol 1 PortInfo: 3-bit LMC
capability mask            0 .. 2**32-1         IBA Vol 1 PortInfo:CapabilityMask, 32 bits
QP number, PSN             0 .. 2**24-1         IBA Vol 1 9.2: 24-bit QPN and PSN
link rate                  0 .. 2400 Gb/s       12X XDR (12 lanes x 200 Gb/s), the widest and
                                                fastest IB link defined; 1.6 Tb/s Ethernet fits
per-lane rate              0 .. 250 Gb/s        XDR signals 212.5 Gb/s per lane
module temperature         -128 .. 128 degC     SFF-8472 / SFF-8636 / CMIS: signed 16-bit,
                                                1/256 degC per unit
module supply voltage      0 .. 6.5535 V        same: unsigned 16-bit, 100 uV per unit
laser bias current         0 .. 524.28 mA       same: unsigned 16-bit, 2 uA per unit, times the
                                                CMIS bias scaling factor (at most 4)
optical power              0 .. 6.5535 mW       same: unsigned 16-bit, 0.1 uW per unit
optical power (dBm)        -40 .. 8.2 or -inf   10 log10 of the mW range; ethtool prints -inf
                                                for a dark lane (0 mW)
laser wavelength           0 .. 65535 nm        SFF-8472: unsigned 16-bit in nm
GPU temperature            0 .. 150 degC        NVML reports an unsigned degC; GPUs shut down
                                                near 90-105 degC (nvidia-smi -q "Shutdown Temp")
utilization                0 .. 100 %           NVML nvmlUtilization_t: percent of the sample
GPU power                  0 .. 5000 W          several times any GPU board's power limit
GPU clock                  0 .. 10000 MHz       several times any GPU clock
GPU memory                 0 .. 2**24 MiB       16 TiB, far beyond any GPU's memory
PCIe generation, width     1 .. 7, 1 .. 32      PCIe 7.0 is the newest; x32 the widest link
NVLink speed per link      0 .. 1000 GB/s       NVLink 5 carries 50 GB/s per link
time, bandwidth, size      >= 0, finite         a duration or an amount is never negative
LLDP TTL                   0 .. 65535 s         IEEE 802.1AB: 2-octet TTL
process id                 0 .. 4194304         Linux PID_MAX_LIMIT
Slurm id, count, priority  0 .. 2**32-1         Slurm stores them as uint32_t
Unix time                  0 .. 2**63-1         64-bit time_t
========================  ===================  ==================================================

The temperature and power ceilings that no standard fixes are set far above
any real reading: they refuse garbage, never an alarming but real value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, TypeVar

MAX_DIGITS = 40
"""Digits read at most; 2**64 has 20. Longer digit runs are not numbers any tool prints."""

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_FLOAT_CHARS = frozenset("0123456789.eE+-")
_N = TypeVar("_N", int, float)


class ProblemSink(Protocol):
    """What parsers list problems in (``problem_log.ProblemLog``, ``textscan.Problems``)."""

    def add(self, line: int, text: str, reason: str) -> None: ...


def is_digits(text: str) -> bool:
    """True for a non-empty run of ASCII digits, at most ``MAX_DIGITS`` long."""
    return 0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()


def read_int(text: str) -> int | None:
    """A decimal (optionally signed) or ``0x`` hex integer in ASCII, or None; never raises."""
    if len(text) <= MAX_DIGITS and text.isascii() and text.isdigit():
        return int(text)  # the common case: a plain count, no sign or blanks
    text = text.strip()
    if not text.isascii():
        return None
    if text[:2] in ("0x", "0X"):
        digits = text[2:]
        ok = 0 < len(digits) <= MAX_DIGITS and _HEX_DIGITS.issuperset(digits)
        return int(digits, 16) if ok else None
    body = text[1:] if text[:1] in ("+", "-") else text
    return int(text) if is_digits(body) else None


def read_float(text: str) -> float | None:
    """A finite decimal number in ASCII (``"-1.5e3"``), or None; never raises."""
    text = text.strip()
    if not text or len(text) > 2 * MAX_DIGITS or not _FLOAT_CHARS.issuperset(text):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class Range:
    """The values a field can hold, ``low <= value <= high``, finite; ``what`` names it."""

    low: float
    high: float
    what: str

    def holds(self, value: float) -> bool:
        # NaN fails both comparisons; +inf is refused even where ``high`` is infinite.
        return self.low <= value <= self.high and value != math.inf

    def check(self, value: _N | None, sink: ProblemSink, line: int, text: str, name: str) -> _N | None:
        """``value`` when it is None or in range; else None, and a problem naming the range."""
        if value is None or (self.low <= value <= self.high and value != math.inf):
            return value
        sink.add(line, text, f"{name}: {_shown(value)} is outside {self.what} ({_shown(self.low)}..{_shown(self.high)}); left out")
        return None


def _shown(value: float) -> str:
    if isinstance(value, int) and abs(value) >= 2**64:
        return f"a {len(str(abs(value)))}-digit number"
    if isinstance(value, float) and value == math.inf:
        return "inf"
    return f"{value:g}" if isinstance(value, float) else str(value)


def bits(width: int, what: str = "") -> Range:
    """An unsigned field of ``width`` bits."""
    return Range(0, 2**width - 1, what or f"a {width}-bit unsigned value")


U64 = bits(64, "a 64-bit counter")
U32 = bits(32, "a 32-bit value")
U16 = bits(16, "a 16-bit value")
U8 = bits(8, "an 8-bit value")
NON_NEGATIVE = Range(0, math.inf, "a non-negative finite number")
LID = bits(16, "a 16-bit LID")
PORT = bits(8, "an 8-bit port number")
LMC = bits(3, "a 3-bit LMC")
CAPABILITY_MASK = bits(32, "a 32-bit capability mask")
QPN = bits(24, "a 24-bit QP number")
PSN = bits(24, "a 24-bit PSN")
LINK_RATE_GBPS = Range(0, 2400, "an IB or Ethernet link rate in Gb/s")
LANE_RATE_GBPS = Range(0, 250, "a per-lane rate in Gb/s")
MODULE_TEMP_C = Range(-128, 128, "a module temperature in degC")
MODULE_VOLTAGE_V = Range(0, 6.5535, "a module supply voltage in V")
MODULE_BIAS_MA = Range(0, 524.28, "a laser bias current in mA")
MODULE_POWER_MW = Range(0, 6.5535, "an optical power in mW")
MODULE_POWER_DBM = Range(-40, 8.2, "an optical power in dBm")
WAVELENGTH_NM = Range(0, 65535, "a laser wavelength in nm")
GPU_TEMP_C = Range(0, 150, "a GPU temperature in degC")
PERCENT = Range(0, 100, "a percentage")
GPU_POWER_W = Range(0, 5000, "a GPU power in W")
CLOCK_MHZ = Range(0, 10000, "a clock in MHz")
GPU_MEMORY_MIB = Range(0, 2**24, "a GPU memory size in MiB")
PCIE_GEN = Range(1, 7, "a PCIe generation")
PCIE_WIDTH = Range(1, 32, "a PCIe link width")
NVLINK_GBYTES_S = Range(0, 1000, "an NVLink speed in GB/s")
LLDP_TTL_S = bits(16, "an LLDP TTL in seconds")
PID = Range(0, 4194304, "a Linux process id")
UNIX_TIME_S = Range(0, 2**63 - 1, "a Unix time in seconds")


def int_in(text: str, where: Range, sink: ProblemSink, line: int, name: str) -> int | None:
    """The integer ``text`` prints when it is one and ``where`` holds it; else None and a problem."""
    if len(text) <= MAX_DIGITS and text.isascii() and text.isdigit():
        plain = int(text)
        if where.low <= plain <= where.high:
            return plain  # the common case, without the calls below
    value = read_int(text)
    if value is None:
        sink.add(line, text, f"{name}: {text.strip()[:40]!r} is not an integer")
        return None
    return where.check(value, sink, line, text, name)


def float_in(text: str, where: Range, sink: ProblemSink, line: int, name: str) -> float | None:
    """The number ``text`` prints when it is one and ``where`` holds it; else None and a problem."""
    value = read_float(text)
    if value is None:
        sink.add(line, text, f"{name}: {text.strip()[:40]!r} is not a finite number")
        return None
    return where.check(value, sink, line, text, name)
