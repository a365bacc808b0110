"""Each optical module's own alarm and warning thresholds, read from its EEPROM with ``ethtool -m``.

Why: a module's thresholds are set by its maker for that part (SFF-8636 for QSFP28,
CMIS for QSFP-DD/OSFP: high/low alarm and warning for temperature, voltage, laser bias,
Tx and Rx power) and differ from part to part (a CWDM4 module warns at -12 dBm of
Rx power where an SR4 module warns near -8). Judged against a fixed limit, a healthy
module of one type is flagged and a failing one of another is missed. They do not
change while the module is plugged in, so they are read with the node's facts (every
few minutes), not on every sample: the streaming agent sends only the readings.

Stored per NIC as gauges ``optics_<quantity>_<level>_<unit>`` (``optics_rx_power_low_warning_dbm``,
``optics_temp_high_alarm_c``, ``optics_tx_bias_high_alarm_ma``): the names of the
``fleet.fabric.samples`` catalogue and of the optics diagnosis rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from fleet.collectors.commands import Command, command
from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.fabric.samples import SeriesKey

SECTION_PREFIX = "module:"
"""Sections of the facts command holding one netdev's ``ethtool -m`` dump: ``module:<netdev>``."""
_QUANTITIES = ("rx_power", "tx_power", "tx_bias", "temp")
_UNITS = ("_dbm", "_c", "_ma")
"""Threshold units kept: power in dBm (the mW twin is the same number), temperature, bias. Voltage is
left out: no rule judges it."""


def module_parts(netdevs: Mapping[str, str]) -> list[tuple[str, Command]]:
    """Sections to add to a facts command: ``ethtool -m`` of each RDMA netdev (``netdev -> device``)."""
    return [(f"{SECTION_PREFIX}{netdev}", command("ethtool", "-m", netdev)) for netdev in sorted(netdevs)]


def module_limit_values(sections: Mapping[str, str], netdevs: Mapping[str, str]) -> dict[SeriesKey, float]:
    """The thresholds of every module whose dump is in ``sections``, keyed (metric, RDMA device, "")."""
    values: dict[SeriesKey, float] = {}
    for name, text in sections.items():
        if not name.startswith(SECTION_PREFIX) or not text.strip():
            continue
        device = netdevs.get(name.removeprefix(SECTION_PREFIX))
        if not device:
            continue
        thresholds = parse_ethtool_module(text).thresholds
        for quantity in _QUANTITIES:
            found = {key: number for key, number in thresholds.items()
                     if key.startswith(quantity + "_") and key.endswith(_UNITS)}
            if len(found) == 4 and _published(found.values()):
                values.update({(f"optics_{key}", device, ""): number for key, number in found.items()})
    return values


def _published(numbers: Iterable[float]) -> bool:
    """Whether a module really publishes a quantity's four thresholds: a module that does not prints
    zeros (``0.000 mA``, ``0.0000 mW / -inf dBm``) or one value four times."""
    found = list(numbers)
    return all(math.isfinite(n) for n in found) and len(set(found)) > 1


__all__ = ["SECTION_PREFIX", "module_limit_values", "module_parts"]
