"""ethtool -m: healthy QSFP28 with thresholds, CX-3 QSFP+ with three dark lanes, SFP, CMIS."""

from __future__ import annotations

import math
from pathlib import Path

from fleet.collectors.parsers.ethtool_module import parse_ethtool_module

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ethtool"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_qsfp28_cwdm4_healthy_with_thresholds() -> None:
    r = parse_ethtool_module(_read("cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt"))
    assert r.problems == () and r.unknown_lines == 0
    assert (r.identifier, r.identifier_code, r.module_type) == ("0x11 (QSFP28)", 0x11, "QSFP28")
    assert (r.vendor_name, r.vendor_oui, r.vendor_pn, r.vendor_sn) == ("FINISAR CORP.", "00:02:c9", "FTLC1152RGPL6-FB", "UX503M0")
    assert r.transceiver_types == ("100G Ethernet: 100G CWDM4 MSA with FEC",)
    assert (r.wavelength_nm, r.temp_c, r.voltage_v, r.flags_implemented) == (1301.0, 33.76, 3.2505, True)
    assert [lane.lane for lane in r.lanes] == [1, 2, 3, 4]
    lane3 = r.lanes[2]
    assert (lane3.tx_bias_ma, lane3.tx_power_mw, lane3.tx_power_dbm) == (38.870, 0.9198, -0.36)
    assert (lane3.rx_power_mw, lane3.rx_power_dbm) == (0.9101, -0.41)
    assert len(lane3.flags) == 12 and not any(lane3.flags.values())
    assert r.module_flags == {
        f"{q}_{lvl}": False for q in ("temp", "voltage") for lvl in ("high_alarm", "low_alarm", "high_warning", "low_warning")
    }
    t = r.thresholds
    assert (t["rx_power_low_alarm_dbm"], t["rx_power_low_alarm_mw"], t["rx_power_low_warning_dbm"]) == (-16.0, 0.0251, -12.0)
    assert (t["tx_power_high_alarm_dbm"], t["tx_bias_high_alarm_ma"], t["temp_high_alarm_c"]) == (5.5, 55.0, 60.0)
    assert t["voltage_low_alarm_v"] == 2.97 and len(t) == 28
    assert ("Revision Compliance", "SFF-8636 Rev 2.5/2.6/2.7") in r.fields


def test_qsfp_plus_cx3_lanes_2_to_4_dark() -> None:
    r = parse_ethtool_module(_read("netdev-ethtool-m-qsfp-plus-cx3-one-lane.txt"))
    assert r.problems == () and r.unknown_lines == 0
    assert (r.module_type, r.vendor_name, r.vendor_pn, r.flags_implemented) == ("QSFP+", "AVAGO", "<REDACTED>", False)
    assert r.transceiver_types == ("SAS 6.0G", "SAS 3.0G")
    assert (r.temp_c, r.voltage_v, r.wavelength_nm) == (40.07, 3.2914, 850.0)
    lit, *dark = r.lanes
    assert (lit.tx_bias_ma, lit.tx_power_dbm, lit.rx_power_mw, lit.rx_power_dbm) == (6.556, -0.91, 0.5716, -2.43)
    assert not lit.rx_dark
    assert [lane.lane for lane in dark] == [2, 3, 4]
    for lane in dark:
        assert lane.rx_dark and lane.rx_power_mw == 0.0 and lane.tx_bias_ma == 0.0
        assert lane.rx_power_dbm is not None and math.isinf(lane.rx_power_dbm) and lane.rx_power_dbm < 0
        assert lane.tx_power_dbm == float("-inf")
    assert r.thresholds == {} and r.module_flags == {}


# SFF-8472 (SFP28) layout of ethtool's sfpdiag.c, one lane; values invented.
SFP = """\tIdentifier                                : 0x03 (SFP)
\tVendor name                               : Mellanox
\tLaser bias current                        : 6.308 mA
\tLaser output power                        : 0.6176 mW / -2.09 dBm
\tReceiver signal average optical power     : 0.0000 mW / -inf dBm
\tModule temperature                        : 35.51 degrees C / 95.92 degrees F
\tModule voltage                            : 3.3153 V
\tAlarm/warning flags implemented           : Yes
\tLaser rx power low alarm                  : On
\tModule temperature high alarm             : Off
\tLaser rx power low alarm threshold        : 0.0200 mW / -16.99 dBm
"""


def test_sfp_single_lane_with_a_raised_alarm() -> None:
    r = parse_ethtool_module(SFP)
    assert r.problems == () and r.module_type == "SFP"
    (lane,) = r.lanes
    assert (lane.lane, lane.tx_bias_ma, lane.tx_power_dbm, lane.rx_power_mw) == (1, 6.308, -2.09, 0.0)
    assert lane.rx_dark
    assert r.module_flags == {"rx_power_low_alarm": True, "temp_high_alarm": False}
    assert r.thresholds == {"rx_power_low_alarm_mw": 0.02, "rx_power_low_alarm_dbm": -16.99}


def test_cmis_lane_spelling_and_newer_fields_are_kept() -> None:
    text = (
        "\tIdentifier                                : 0x18 (QSFP-DD Double Density 8X Pluggable Transceiver)\n"
        "\tModule State                              : 0x03 (ModuleReady)\n"
        "\tRcvr signal avg optical power (Channel 8) : 0.8200 mW / -0.86 dBm\n"
        "\tLaser tx bias current (Lane 8)            : 6.620 mA\n"
        "\tTx loss of signal                         : [ No, No, No, No, No, No, No, Yes ]\n"
    )
    r = parse_ethtool_module(text)
    assert r.problems == () and r.identifier_code == 0x18
    (lane,) = r.lanes
    assert (lane.lane, lane.rx_power_dbm, lane.tx_bias_ma) == (8, -0.86, 6.62)
    assert ("Module State", "0x03 (ModuleReady)") in r.fields
    assert ("Tx loss of signal", "[ No, No, No, No, No, No, No, Yes ]") in r.fields


def test_unsupported_module_message_is_a_problem() -> None:
    r = parse_ethtool_module("Cannot get module EEPROM information: Operation not supported\n")
    assert r.fields == () and r.lanes == () and r.unknown_lines == 1
