"""InfiniBand value formats shared by ibstatus, sysfs, perfquery, ibqueryerrors and topology.

Counter widths come from the IBA PortCounters attribute (see docs/domain.md, "IB port
counters"): IB error counters saturate, they stick at their maximum
instead of wrapping, so a counter at its maximum means "at least this many" and
must never be turned into a rate.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from fleet.collectors.parsers.values import LINK_RATE_GBPS, U8, is_digits, read_float
from fleet.fabric.counters import IB_SATURATING_COUNTER_BITS

_RATE_RE = re.compile(
    r"^[ \t]*([0-9.]{1,40})[ \t]*Gb/sec(?:[ \t]*\(([0-9]{1,2}X)[ \t]*([A-Za-z0-9]{0,16})\))?",
    re.IGNORECASE,
)


class Rate(NamedTuple):
    """``"400 Gb/sec (4X NDR)"`` read apart: data rate in Gb/s, link width, lane speed name."""

    rate_gbps: float | None
    width: str
    speed: str


def parse_rate(text: str) -> Rate:
    """Read a sysfs/ibstatus rate string; ``Rate(None, "", "")`` when it is not one, or
    when the rate is one no link can have (``values.LINK_RATE_GBPS``)."""
    m = _RATE_RE.match(text)
    if m is None:
        return Rate(None, "", "")
    gbps = read_float(m.group(1))
    if gbps is None or not LINK_RATE_GBPS.holds(gbps):
        return Rate(None, "", "")
    return Rate(gbps, m.group(2) or "", m.group(3) or "")


def parse_state(text: str) -> tuple[int | None, str]:
    """``"4: ACTIVE"`` -> ``(4, "ACTIVE")``; text without a code (or a code past 8 bits) ->
    ``(None, text)``."""
    code, sep, name = text.partition(":")
    code, name = code.strip(), name.strip()
    if not sep or not name or not is_digits(code) or not U8.holds(int(code)):
        return None, text.strip()
    return int(code), name


# Per-lane data rate in Gb/s of each IB speed name (after encoding overhead, as
# the kernel reports port rates: 4X EDR = 100 Gb/sec).
LANE_GBPS: dict[str, float] = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.0,
    "FDR": 14.0,
    "EDR": 25.0,
    "HDR": 50.0,
    "NDR": 100.0,
    "XDR": 200.0,
}


def link_rate_gbps(width: str, speed: str) -> float | None:
    """Nominal rate of a link from ``"4x"`` and ``"EDR"``; None when either is unknown."""
    lanes = width.upper().rstrip("X")
    per_lane = LANE_GBPS.get(speed.upper())
    if per_lane is None or not is_digits(lanes) or not 1 <= int(lanes) <= 32:
        return None
    return int(lanes) * per_lane


# Bit widths of the IBA PortCounters (non-extended) fields, by sysfs file name.
SYSFS_COUNTER_BITS: dict[str, int] = {
    **IB_SATURATING_COUNTER_BITS,
    # Data and packet counters are 64-bit when the HCA supports PortCountersExtended
    # (the usual case); on HCAs that do not, they are the 32-bit PortCounters fields.
    # A value sitting exactly at 2**32-1 is then saturated.
    "port_xmit_data": 32,
    "port_rcv_data": 32,
    "port_xmit_packets": 32,
    "port_rcv_packets": 32,
}

# The same fields by their MAD names, as perfquery and ibqueryerrors print them.
MAD_COUNTER_BITS: dict[str, int] = {
    "SymbolErrorCounter": 16,
    "LinkErrorRecoveryCounter": 8,
    "LinkDownedCounter": 8,
    "PortRcvErrors": 16,
    "PortRcvRemotePhysicalErrors": 16,
    "PortRcvSwitchRelayErrors": 16,
    "PortXmitDiscards": 16,
    "PortXmitConstraintErrors": 8,
    "PortRcvConstraintErrors": 8,
    "LocalLinkIntegrityErrors": 4,
    "ExcessiveBufferOverrunErrors": 4,
    "VL15Dropped": 16,
    "PortXmitWait": 32,
    "QP1Dropped": 16,
    "PortCheckRate": 16,
    "PortXmitData": 32,
    "PortRcvData": 32,
    "PortXmitPkts": 32,
    "PortRcvPkts": 32,
    # PortRcvErrorDetails / PortXmitDiscardDetails (perfquery -E / -D): 16 bit.
    "PortLocalPhysicalErrors": 16,
    "PortMalformedPktErrors": 16,
    "PortBufferOverrunErrors": 16,
    "PortDLIDMappingErrors": 16,
    "PortVLMappingErrors": 16,
    "PortLoopingErrors": 16,
    "PortInactiveDiscards": 16,
    "PortNeighborMTUDiscards": 16,
    "PortSwLifetimeLimitDiscards": 16,
    "PortSwHOQLifetimeLimitDiscards": 16,
}

U64_MAX = (1 << 64) - 1


def saturated_names(values: dict[str, int], bits: dict[str, int]) -> tuple[str, ...]:
    """Names whose value sits at the maximum of their counter width (sorted)."""
    out = []
    for name, value in values.items():
        width = bits.get(name)
        if width is not None and value == (1 << width) - 1:
            out.append(name)
    return tuple(sorted(out))
