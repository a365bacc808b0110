"""Parser for ``ethtool -m <netdev>``: transceiver EEPROM and diagnostics.

ethtool decodes SFF-8472 (SFP), SFF-8636 (QSFP+/QSFP28) and CMIS (QSFP-DD/OSFP)
into ``"%-41s : %s"`` lines. Per-lane readings carry ``(Channel N)``,
``(Chan N)`` or ``(Lane N)``; SFP modules have a single lane, numbered 1 here.
Readings outside what the SFF/CMIS fields can encode (``values``: temperature
-128..128 degC, voltage 0..6.5535 V, bias 0..524.28 mA, power 0..6.5535 mW) are
listed as problems and left out. Units follow the names: ``tx_bias_ma`` (mA),
``*_power_mw`` (mW), ``*_power_dbm`` (dBm; ``-inf`` when the lane sees no light,
exactly as ethtool prints a 0 mW reading), ``temp_c`` (degrees Celsius),
``voltage_v`` (V). Alarm/warning flags are booleans (``On`` = raised). Every
printed pair is also kept, in order, in ``fields``, so fields this parser does
not name are never lost.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import (
    MODULE_BIAS_MA,
    MODULE_POWER_DBM,
    MODULE_POWER_MW,
    MODULE_TEMP_C,
    MODULE_VOLTAGE_V,
    U8,
    WAVELENGTH_NM,
    is_digits,
    read_float,
    read_int,
)

_LANE_WORDS = ("Channel", "Chan", "Lane")
_MAX_LANE = 32  # CMIS: up to 4 banks of 8 lanes
_POWER_RE = re.compile(r"^([-+0-9.eE]+)\s*mW\s*/\s*([-+0-9.a-zA-Z]+)\s*dBm")
_TEMP_RE = re.compile(r"^([-+0-9.]+)\s*degrees C")
_UNIT_RE = re.compile(r"^([-+0-9.]+)\s*(mA|V)\b")
_LEVELS = ("high alarm", "low alarm", "high warning", "low warning")


@dataclass(frozen=True, slots=True)
class ModuleLane:
    lane: int  # 1-based, as printed
    tx_bias_ma: float | None = None
    tx_power_mw: float | None = None
    tx_power_dbm: float | None = None  # -inf: no light
    rx_power_mw: float | None = None
    rx_power_dbm: float | None = None  # -inf: no light
    flags: dict[str, bool] = field(default_factory=dict)  # "rx_power_low_alarm": True

    @property
    def rx_dark(self) -> bool:
        """The receiver sees no light at all (0 mW / -inf dBm)."""
        return self.rx_power_mw == 0.0 or self.rx_power_dbm == float("-inf")


@dataclass(frozen=True, slots=True)
class EthtoolModule:
    identifier: str  # "0x11 (QSFP28)"
    identifier_code: int | None  # 0x11
    module_type: str  # "QSFP28"
    connector: str
    transceiver_types: tuple[str, ...]
    vendor_name: str
    vendor_oui: str
    vendor_pn: str
    vendor_rev: str
    vendor_sn: str
    date_code: str
    wavelength_nm: float | None
    temp_c: float | None
    voltage_v: float | None
    flags_implemented: bool | None  # "Alarm/warning flags implemented"
    lanes: tuple[ModuleLane, ...]
    module_flags: dict[str, bool]  # "temp_high_alarm": False, "voltage_low_warning": ...
    thresholds: dict[str, float]  # "rx_power_low_alarm_dbm": -16.0, "temp_high_alarm_c": 60.0
    fields: tuple[tuple[str, str], ...]  # every "key : value" pair as printed
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _quantity(base: str) -> str | None:
    """Which reading a key is about: tx_bias, tx_power, rx_power, temp, voltage."""
    low = base.lower()
    if "bias current" in low:
        return "tx_bias"
    if "power" in low:
        words = low.replace("(", " ").split()
        if "rx" in words or "rcvr" in words or "receiver" in words:
            return "rx_power"
        if "tx" in words or "output" in words or "transmit" in words:
            return "tx_power"
        return None
    if "temperature" in low and "laser" not in low:
        return "temp"
    if "voltage" in low:
        return "voltage"
    return None


def _level(base: str) -> str | None:
    low = base.lower()
    for level in _LEVELS:
        if level in low:
            return level.replace(" ", "_")
    return None


def measurement_key(key: str) -> tuple[str, int | None] | None:
    """What a stripped key measures, exactly as ``parse_ethtool_module`` reads it:
    ``(quantity, lane as printed or None)`` with quantity ``temp``, ``voltage``,
    ``tx_bias``, ``tx_power`` or ``rx_power``; None for any other key (flags,
    thresholds, identification). For fast readers of the measurements alone."""
    base, lane = split_lane(key)
    quantity = _quantity(base)
    if quantity is None or _level(base) is not None:
        return None
    return quantity, lane


def split_lane(key: str) -> tuple[str, int | None]:
    """``"Laser tx bias current (Channel 2)"`` -> (``"Laser tx bias current"``, 2); no lane -> (key, None)."""
    start = key.rfind("(")
    if start < 0 or not key.endswith(")"):
        return key, None
    inner = key[start + 1 : -1].strip()
    word = next((w for w in _LANE_WORDS if inner.startswith(w)), None)
    number = inner[len(word) :].strip() if word else ""
    if not is_digits(number) or not 0 < int(number) <= _MAX_LANE:
        return key, None
    return key[:start].rstrip(), int(number)


class _Reading:
    """A value read apart into the units that matter; all None when it is not one."""

    __slots__ = ("c", "dbm", "ma", "mw", "v")

    def __init__(self, value: str) -> None:
        self.mw = self.dbm = self.c = self.ma = self.v = None
        m = _POWER_RE.match(value)
        if m is not None:
            dbm = m.group(2)
            self.mw, self.dbm = read_float(m.group(1)), -math.inf if dbm == "-inf" else read_float(dbm)
            return
        m = _TEMP_RE.match(value)
        if m is not None:
            self.c = read_float(m.group(1))
            return
        m = _UNIT_RE.match(value)
        if m is not None:
            number = read_float(m.group(1))
            if m.group(2) == "mA":
                self.ma = number
            else:
                self.v = number

    def check(self, log: ProblemLog, line_no: int, line: str, key: str) -> None:
        """Leave out (and list) every reading its SFF/CMIS field cannot encode."""
        self.mw = MODULE_POWER_MW.check(self.mw, log, line_no, line, key)
        if self.dbm != -math.inf:
            self.dbm = MODULE_POWER_DBM.check(self.dbm, log, line_no, line, key)
        self.c = MODULE_TEMP_C.check(self.c, log, line_no, line, key)
        self.ma = MODULE_BIAS_MA.check(self.ma, log, line_no, line, key)
        self.v = MODULE_VOLTAGE_V.check(self.v, log, line_no, line, key)

    def empty(self) -> bool:
        return self.mw is None and self.dbm is None and self.c is None and self.ma is None and self.v is None


class _Builder:
    def __init__(self, log: ProblemLog) -> None:
        self.log = log
        self.fields: list[tuple[str, str]] = []
        self.first: dict[str, str] = {}
        self.lanes: dict[int, dict[str, float | None]] = {}
        self.lane_flags: dict[int, dict[str, bool]] = {}
        self.module_flags: dict[str, bool] = {}
        self.thresholds: dict[str, float] = {}
        self.temp_c: float | None = None
        self.voltage_v: float | None = None

    def lane(self, number: int) -> dict[str, float | None]:
        return self.lanes.setdefault(number, {})

    def add(self, key: str, value: str, line_no: int, line: str) -> None:
        self.fields.append((key, value))
        self.first.setdefault(key, value)
        base, lane = split_lane(key)
        quantity = _quantity(base)
        if quantity is None:
            return
        level = _level(base)
        if level is not None and value in ("On", "Off"):
            flag = f"{quantity}_{level}"
            if lane is None:
                self.module_flags[flag] = value == "On"
            else:
                self.lane_flags.setdefault(lane, {})[flag] = value == "On"
            return
        reading = _Reading(value)
        reading.check(self.log, line_no, line, key)
        if reading.empty():
            if level is not None or base.lower().startswith(("laser", "transmit", "rcvr", "receiver", "module")):
                self.log.add(line_no, line, f"{key}: value not understood")
            return
        if level is not None and base.lower().endswith("threshold"):
            self._threshold(f"{quantity}_{level}", reading)
        elif level is None:
            self._measurement(quantity, lane, reading, line_no, line)

    def _threshold(self, name: str, r: _Reading) -> None:
        for unit, number in (("mw", r.mw), ("dbm", r.dbm), ("c", r.c), ("ma", r.ma), ("v", r.v)):
            if number is not None:
                self.thresholds[f"{name}_{unit}"] = number

    def _measurement(self, quantity: str, lane: int | None, r: _Reading, line_no: int, line: str) -> None:
        if quantity == "temp":
            self.temp_c = r.c
        elif quantity == "voltage":
            self.voltage_v = r.v
        elif quantity == "tx_bias":
            self.lane(lane or 1)["tx_bias_ma"] = r.ma
        else:  # tx_power / rx_power
            if r.mw is None:
                self.log.add(line_no, line, "optical power without mW / dBm")
                return
            entry = self.lane(lane or 1)
            entry[f"{quantity}_mw"] = r.mw
            entry[f"{quantity}_dbm"] = r.dbm


@parser
def parse_ethtool_module(text: str) -> EthtoolModule:
    """Parse ``ethtool -m`` output; never raises."""
    log = ProblemLog()
    b = _Builder(log)
    for line_no, line in enumerate(text.splitlines(), 1):
        cut = line.find(" :")
        if cut < 0:
            if line.strip():
                log.unknown(line_no, line)
            continue
        key = line[:cut].strip()
        value = line[cut + 2 :].strip()
        if not key:
            log.unknown(line_no, line)
            continue
        if key == "Identifier" and "Identifier" in b.first:
            log.add(line_no, line, "a second module dump; later values override")
        b.add(key, value, line_no, line)
    f = b.first
    if b.fields and "Identifier" not in f:
        log.add(0, "", "no Identifier line: not (the start of) an ethtool -m dump")
    identifier = f.get("Identifier", "")
    code_text, _, type_text = identifier.partition(" ")
    wavelength = f.get("Laser wavelength", "")
    flags_impl = f.get("Alarm/warning flags implemented")
    all_lanes = sorted(set(b.lanes) | set(b.lane_flags))
    lanes = tuple(
        ModuleLane(
            lane=n,
            tx_bias_ma=b.lanes.get(n, {}).get("tx_bias_ma"),
            tx_power_mw=b.lanes.get(n, {}).get("tx_power_mw"),
            tx_power_dbm=b.lanes.get(n, {}).get("tx_power_dbm"),
            rx_power_mw=b.lanes.get(n, {}).get("rx_power_mw"),
            rx_power_dbm=b.lanes.get(n, {}).get("rx_power_dbm"),
            flags=b.lane_flags.get(n, {}),
        )
        for n in all_lanes
    )
    return EthtoolModule(
        identifier=identifier,
        identifier_code=U8.check(read_int(code_text), log, 0, identifier, "identifier") if code_text else None,
        module_type=type_text.strip().removeprefix("(").removesuffix(")"),
        connector=f.get("Connector", ""),
        transceiver_types=tuple(v for k, v in b.fields if k == "Transceiver type"),
        vendor_name=f.get("Vendor name", ""),
        vendor_oui=f.get("Vendor OUI", ""),
        vendor_pn=f.get("Vendor PN", ""),
        vendor_rev=f.get("Vendor rev", ""),
        vendor_sn=f.get("Vendor SN", ""),
        date_code=f.get("Date code", ""),
        wavelength_nm=WAVELENGTH_NM.check(
            read_float(wavelength.removesuffix("nm")), log, 0, wavelength, "laser wavelength"
        )
        if wavelength
        else None,
        temp_c=b.temp_c,
        voltage_v=b.voltage_v,
        flags_implemented=None if flags_impl is None else flags_impl == "Yes",
        lanes=lanes,
        module_flags=b.module_flags,
        thresholds=b.thresholds,
        fields=tuple(b.fields),
        problems=log.freeze(),
        unknown_lines=log.unknown_lines,
    )
