"""The optical modules the simulated NICs carry: each type with its own EEPROM thresholds and readings.

A real module's alarm and warning thresholds are programmed by its maker for the
part (SFF-8636 for QSFP28, CMIS for OSFP/QSFP-DD), and the readings of a healthy
unit sit where that part's laser and receiver put them: a VCSEL multimode module
draws ~6-8 mA of bias, a single-mode DFB/EML module 30-50 mA, and each warns at its
own Rx power. The simulator mixes two types so that a fixed limit would be wrong
for one of them, as it is on a real fleet.

Where the numbers come from (no public ``ethtool -m`` dump of a 400G OSFP module
with thresholds was found; these sets are real modules' own, as ethtool printed them):

- ``MMA4Z00-NS400`` (multimode, VCSEL): the thresholds of a Mellanox MMA1B00-C100D
  (100GBASE-SR4 VCSEL, QSFP28) as ``ethtool -m`` printed them on a Cumulus Linux
  switch, in a capture published with an open-source parser's tests (repository not
  identified); its healthy bias was 6.75 mA on every lane.
- ``MMS4X00-NS400`` (single-mode): the thresholds of the FINISAR FTLC1152RGPL6-FB
  (100G CWDM4, 1310 nm DFB) in tests/fixtures/ethtool/cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt
  (see tests/fixtures/SOURCES.md); its healthy bias was 38-42 mA.
"""

from __future__ import annotations

from typing import NamedTuple

Limits = tuple[float, float, float, float]
"""(high alarm, low alarm, high warning, low warning), as OpticsView and ethtool order them."""


class ModuleType(NamedTuple):
    vendor_name: str
    vendor_pn: str
    rx_power_dbm: Limits
    tx_power_dbm: Limits
    bias_ma: Limits
    temp_c: Limits
    voltage_v: Limits
    bias_range_ma: tuple[float, float]
    """Healthy bias of a unit: its lanes sit in this range."""
    tx_range_dbm: tuple[float, float]
    temp_range_c: tuple[float, float]
    share: float
    """Share of the fleet's modules of this type."""


MODULE_TYPES: tuple[ModuleType, ...] = (
    ModuleType("NVIDIA", "MMA4Z00-NS400", rx_power_dbm=(5.4, -13.31, 2.4, -10.3), tx_power_dbm=(5.4, -11.4, 2.4, -8.4),
               bias_ma=(8.5, 5.492, 8.0, 6.0), temp_c=(80.0, -10.0, 70.0, 0.0), voltage_v=(3.5, 3.1, 3.465, 3.135),
               bias_range_ma=(6.4, 7.6), tx_range_dbm=(-0.5, 1.5), temp_range_c=(38.0, 52.0), share=0.7),
    ModuleType("NVIDIA", "MMS4X00-NS400", rx_power_dbm=(3.5, -16.0, 2.5, -12.0), tx_power_dbm=(5.5, -8.0, 2.5, -4.0),
               bias_ma=(55.0, 25.0, 50.0, 30.0), temp_c=(60.0, 10.0, 55.0, 15.0), voltage_v=(3.63, 2.97, 3.465, 3.135),
               bias_range_ma=(36.0, 44.0), tx_range_dbm=(-0.5, 1.0), temp_range_c=(30.0, 44.0), share=0.3),
)


def module_type(draw: float) -> ModuleType:
    """The type a seeded draw in [0, 1) picks, by the types' shares."""
    edge = 0.0
    for kind in MODULE_TYPES:
        edge += kind.share
        if draw < edge:
            return kind
    return MODULE_TYPES[-1]


__all__ = ["MODULE_TYPES", "Limits", "ModuleType", "module_type"]
