"""Optics readings of ``ethtool -m`` text as samples (``optics_*`` metrics of fabric.samples).

The one reader of a module's readings (temperature, supply voltage, per-lane
bias current and optical power) into values, in agent and command mode alike.
It reads a reading as ``fleet.collectors.parsers.ethtool_module`` does (the same
keys through its ``measurement_key``, the same value patterns, a later line of
the same reading winning), but only the reading lines, line by line, knowing
each key after its first sight: every node sends each NIC's readings every few
seconds, so this runs a thousand times a second at 1,024 nodes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from fleet.collectors.agent import is_optics_reading
from fleet.collectors.parsers.ethtool_module import measurement_key

DARK_LANE_DBM = -40.0
"""What a lane with no light (``-inf dBm``) is stored as."""

_AS_PRINTED: Mapping[str, str] = MappingProxyType({
    "tx_power": r"([-+0-9.eE]+) mW / ([-+0-9.a-zA-Z]+) dBm",
    "rx_power": r"([-+0-9.eE]+) mW / ([-+0-9.a-zA-Z]+) dBm",
    "temp": r"([-+0-9.]+) degrees C / [-+0-9.]+ degrees F",
    "tx_bias": r"([-+0-9.]+) mA",
    "voltage": r"([-+0-9.]+) V",
})
"""Each quantity's value as ethtool prints it, its numbers as groups, padded with spaces or tabs. The
parser reads such a value as these numbers: its first pattern that matches is the quantity's own, and
each group is the whole of the token the parser takes (what follows a token is a space), so where
``float`` reads each group, they are the reading."""
_PADDED = "[ \t]*{}[ \t]*"
"""A value as printed, after `` :``: what ``strip`` leaves is the value."""

# The parser's value patterns, tried in its order whatever the key: a "temperature" printed in V
# still reads as a voltage, and sets the temperature to nothing.
_POWER = re.compile(r"^([-+0-9.eE]+)\s*mW\s*/\s*([-+0-9.a-zA-Z]+)\s*dBm")
_TEMP = re.compile(r"^([-+0-9.]+)\s*degrees C")
_UNIT = re.compile(r"^([-+0-9.]+)\s*(mA|V)\b")


class _Key(NamedTuple):
    """What a reading line's key measures."""

    quantity: str
    """``temp``, ``voltage``, ``tx_bias``, ``tx_power`` or ``rx_power``."""
    lane: int
    """As printed (1-based); a module-wide reading or an SFP's single lane is 1."""


class _Set(NamedTuple):
    """What one reading line sets: its ``quantity`` (of its lane) to ``number`` (and ``dbm``, for a
    power). ``number`` None: the reading is in another unit, and sets its quantity to nothing."""

    key: _Key
    number: float | None
    dbm: float | None


class _LanePlan(NamedTuple):
    """Where a template finds one lane's readings: indexes into a dump's numbers (``_Template``)."""

    tx_bias_ma: int
    tx_mw: int
    tx_dbm: int
    rx_mw: int
    rx_dbm: int
    rx_key: tuple[str, str]
    tx_key: tuple[str, str]
    bias_key: tuple[str, str]


_LANE_FIELDS = ("tx_bias_ma", "tx_mw", "tx_dbm", "rx_mw", "rx_dbm")
_FIELDS_OF: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"tx_bias": ("tx_bias_ma",), "tx_power": ("tx_mw", "tx_dbm"), "rx_power": ("rx_mw", "rx_dbm")})
"""A lane quantity's fields in a ``_LanePlan``, in the order of its numbers."""


class _Template(NamedTuple):
    """The shape of a dump, as one pattern: each line as it is, but for the values of readings printed
    as ethtool prints them, each a group. A dump's numbers are its groups' then ``constants`` (the
    readings of its lines printed otherwise, which are in the pattern as they are), then None."""

    pattern: re.Pattern[str]
    constants: tuple[float | None, ...]
    temp_c: int
    voltage_v: int
    lanes: tuple[_LanePlan, ...]
    """In lane order."""


class OpticsReader:
    """``ethtool -m`` text -> ``{(metric, port): value}``; lanes are ``L0``.. (0-based).

    Reads as ``fleet.collectors.parsers.ethtool_module`` does (the same keys,
    through its ``measurement_key``; the same value patterns; a later line of a
    reading winning) the readings: temperature, supply voltage, per-lane bias
    current and optical power. A dark lane reads ``-inf dBm``: it is kept as
    -40 dBm, below every real receiver's sensitivity, so that it shows as the
    worst margin instead of vanishing from the series (the store keeps finite
    numbers only). A lane whose laser is off and that receives nothing (no
    bias, no light either way) is an unused channel, as CMIS modules print for
    8 channels of a 4-lane link, and is left out.

    Every node sends each NIC's readings every few seconds, and a module prints
    the same lines every time, only the numbers change. So the reader turns the
    first dump of each shape into a ``_Template`` and reads every dump through
    the template of its shape, one regular-expression match and no work per
    line. It keeps ``most`` templates (a fleet has a few module types; past
    that, a dump of a new shape has its template built for it alone) and what
    each key it saw measures. One reader serves a whole collector.
    """

    def __init__(self, most: int = 256) -> None:
        self.most = most
        self._templates: dict[str, list[_Template]] = {}
        """A dump's first line -> the templates of dumps that begin with it."""
        self._kept = 0
        self._keys: dict[str, _Key | None] = {}
        """A key as printed (before `` :``, padding included) -> what it measures; None: no reading."""

    def __call__(self, text: str) -> dict[tuple[str, str], float]:
        first = text.partition("\n")[0]
        templates = self._templates.get(first, ())
        for template in templates:
            values = _read(template, text)
            if values is not None:
                return values
        lines = text.splitlines()
        dump = "\n".join(lines)  # line breaks of any kind as the one kind a template has
        for template in templates if dump != text else ():
            values = _read(template, dump)
            if values is not None:
                return values
        template = self._template(lines)
        if self._kept < self.most:
            self._templates.setdefault(first, []).append(template)
            self._kept += 1
        values = _read(template, dump)
        assert values is not None, "a dump matches the template of its own shape"
        return values

    def _template(self, lines: list[str]) -> _Template:
        parts: list[str] = []
        constants: list[float | None] = []
        groups = 0
        temp_c = voltage_v = -1
        lanes: dict[int, dict[str, int]] = {}  # lane -> _LanePlan's indexes so far (-1: None)
        for line in lines:
            cut = line.find(" :")
            key = self._key(line[:cut]) if cut >= 0 else None
            printed = None if key is None else re.fullmatch(_PADDED.format(_AS_PRINTED[key.quantity]), line[cut + 2:])
            if printed is not None and key is not None and _all_numbers(printed.groups()):
                parts.append(re.escape(line[:cut + 2]) + _PADDED.format(_AS_PRINTED[key.quantity]))
                at = list(range(groups, groups + len(printed.groups())))
                groups += len(at)
            else:  # no reading, or one printed otherwise: the line as it is, and what it sets as a constant
                parts.append(re.escape(line))
                reading = None if key is None else _set(key, line[cut + 2:].strip())
                if reading is None:
                    continue
                key, at = reading.key, []
                for number in (reading.number, reading.dbm)[:2 if key.quantity in ("tx_power", "rx_power") else 1]:
                    at.append(-2 - len(constants))
                    constants.append(number)
            if key.quantity == "temp":
                temp_c = at[0]
            elif key.quantity == "voltage":
                voltage_v = at[0]
            else:
                lane = lanes.setdefault(key.lane, dict.fromkeys(_LANE_FIELDS, -1))
                lane.update(zip(_FIELDS_OF[key.quantity], at, strict=True))
        return _Template(
            re.compile("\n".join(parts) + "\n?"), tuple(constants), temp_c, voltage_v,
            tuple(_LanePlan(**plan, rx_key=("optics_rx_power_dbm", f"L{lane - 1}"),
                            tx_key=("optics_tx_power_dbm", f"L{lane - 1}"), bias_key=("optics_tx_bias_ma", f"L{lane - 1}"))
                  for lane, plan in sorted(lanes.items())))

    def _key(self, raw_key: str) -> _Key | None:
        keys = self._keys
        if raw_key in keys:
            return keys[raw_key]
        key = _key(raw_key)
        if len(keys) < 64 * self.most:
            keys[raw_key] = key
        return key


def _read(template: _Template, dump: str) -> dict[tuple[str, str], float] | None:
    """A dump's values by ``template``; None when it is not of the template's shape. Its numbers are the
    groups' (each read by ``float``: one that ``float`` refuses is not of the shape), the constants',
    then None, and the template's plan says where each goes."""
    match = template.pattern.fullmatch(dump)
    if match is None:
        return None
    try:
        numbers: list[float | None] = [*map(float, match.groups()), *reversed(template.constants), None]
    except ValueError:
        return None
    values: dict[tuple[str, str], float] = {}
    temp_c, voltage_v = numbers[template.temp_c], numbers[template.voltage_v]
    if temp_c is not None:
        values[("optics_temp_c", "")] = temp_c
    if voltage_v is not None:
        values[("optics_voltage_v", "")] = voltage_v
    for lane in template.lanes:
        bias = numbers[lane.tx_bias_ma]
        if not (bias or numbers[lane.tx_mw] or numbers[lane.rx_mw]):
            continue  # an unused channel
        rx_dbm, tx_dbm = numbers[lane.rx_dbm], numbers[lane.tx_dbm]
        if rx_dbm is not None and rx_dbm == rx_dbm:  # not NaN
            values[lane.rx_key] = max(rx_dbm, DARK_LANE_DBM)
        if tx_dbm is not None and tx_dbm == tx_dbm:
            values[lane.tx_key] = max(tx_dbm, DARK_LANE_DBM)
        if bias is not None and bias == bias:
            values[lane.bias_key] = bias
    return values


def _key(raw_key: str) -> _Key | None:
    """What a key measures: a reading by the agent's ``--optics-readings`` rule (no threshold, flag
    or identification), then by the parser's ``measurement_key``; None for anything else."""
    key = raw_key.strip()
    if not key or not is_optics_reading(raw_key.lower()):
        return None
    measured = measurement_key(key)
    if measured is None:
        return None
    quantity, lane = measured
    return _Key(quantity, lane or 1)


def _set(key: _Key, value: str) -> _Set | None:
    """What a reading line of ``key`` with ``value`` (stripped) sets, as the parser reads it: its first
    pattern that matches gives the units (a number ``float`` refuses is none); a value with none sets
    nothing, nor does a power without mW; a value in another unit sets its quantity to nothing."""
    quantity = key.quantity
    power = _POWER.match(value)
    if power is not None:
        mw, dbm = _number(power[1]), _number(power[2])
        if mw is None and dbm is None:
            return None
        if quantity in ("tx_power", "rx_power"):
            return None if mw is None else _Set(key, mw, dbm)
        return _Set(key, None, None)
    temp = _TEMP.match(value)
    unit = _UNIT.match(value) if temp is None else None
    number = _number(temp[1]) if temp is not None else _number(unit[1]) if unit is not None else None
    if number is None or quantity in ("tx_power", "rx_power"):
        return None
    read_as = "temp" if temp is not None else "tx_bias" if unit is not None and unit[2] == "mA" else "voltage"
    return _Set(key, number if read_as == quantity else None, None)


def _all_numbers(texts: tuple[str, ...]) -> bool:
    try:
        return all(float(text) is not None for text in texts)
    except ValueError:
        return False


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
