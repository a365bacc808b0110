"""Optics readings of ``ethtool -m`` text as samples (``optics_*`` metrics of fabric.samples)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from collectors.parsers.ethtool_module import EthtoolModule, parse_ethtool_module


def optics_values(text: str) -> Mapping[tuple[str, str], float]:
    """``ethtool -m`` text -> ``{(metric, port): value}``; lanes are ``L0``.. (0-based).

    A dark lane reads ``-inf dBm``: it is kept as -40 dBm, below every real
    receiver's sensitivity, so that it shows as the worst margin instead of
    vanishing from the series (the store keeps finite numbers only). A lane
    whose laser is off and that receives nothing (no bias, no light either
    way) is an unused channel, as CMIS modules print for 8 channels of a
    4-lane link, and is left out.
    """
    return module_values(parse_ethtool_module(_readings_only(text)))


def module_values(module: EthtoolModule) -> dict[tuple[str, str], float]:
    """The readings of one parsed module as ``{(metric, port): value}`` (see ``optics_values``)."""
    values: dict[tuple[str, str], float] = {}
    if module.temp_c is not None:
        values[("optics_temp_c", "")] = module.temp_c
    if module.voltage_v is not None:
        values[("optics_voltage_v", "")] = module.voltage_v
    for lane in module.lanes:
        if not (lane.tx_bias_ma or lane.tx_power_mw or lane.rx_power_mw):
            continue
        port = f"L{lane.lane - 1}"
        for metric, reading in (
            ("optics_rx_power_dbm", lane.rx_power_dbm),
            ("optics_tx_power_dbm", lane.tx_power_dbm),
            ("optics_tx_bias_ma", lane.tx_bias_ma),
        ):
            if reading is None or math.isnan(reading):
                continue
            values[(metric, port)] = max(reading, DARK_LANE_DBM) if metric.endswith("_dbm") else reading
    return values


_READING_WORDS = ("bias current", "power", "temperature", "voltage")


def _readings_only(text: str) -> str:
    """The lines that hold a reading (temperature, voltage, per-lane bias and power), without
    thresholds and alarm flags: a sixth of a CMIS module's dump. The collector reads every
    NIC's optics every few seconds on every node; parsing only these lines is 4x cheaper."""
    kept = []
    for line in text.splitlines():
        key = line.partition(" :")[0].lower()
        if "alarm" not in key and "warning" not in key and any(word in key for word in _READING_WORDS):
            kept.append(line)
    return "\n".join(kept)


DARK_LANE_DBM = -40.0
"""What a lane with no light (``-inf dBm``) is stored as."""
