"""Optics readings of ``ethtool -m`` text as samples (``optics_*`` metrics of fabric.samples).

The one reader of a module's readings (temperature, supply voltage, per-lane
bias current and optical power) into values, in agent and command mode alike.
What it reads is what ``fleet.collectors.parsers.ethtool_module`` reads from the
reading lines (``fleet.collectors.agent.optics_readings``): the parser is the
rule. Every node sends each NIC's readings every few seconds, a thousand dumps
a second at 1,024 nodes, and a module prints the same lines every time, only
the numbers change; so the reader keeps, per shape of dump, where the parser
finds each reading, and reads the next dumps of that shape by one
regular-expression match (see ``OpticsReader``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from operator import le
from types import MappingProxyType
from typing import NamedTuple

from fleet.collectors.agent import is_optics_reading, optics_readings
from fleet.collectors.parsers.ethtool_module import (
    EthtoolModule,
    measurement_key,
    parse_ethtool_module,
)
from fleet.collectors.parsers.values import (
    MAX_DIGITS,
    MODULE_BIAS_MA,
    MODULE_POWER_DBM,
    MODULE_POWER_MW,
    MODULE_TEMP_C,
    MODULE_VOLTAGE_V,
    Range,
)

DARK_LANE_DBM = -40.0
"""What a lane with no light (``-inf dBm``) is stored as."""

Readings = dict[tuple[str, str], float]
"""``{(metric, port): value}``: ``("optics_temp_c", "")``, ``("optics_rx_power_dbm", "L0")``."""


class _Printed(NamedTuple):
    """A quantity's value as ethtool prints it: its numbers as groups, and the lowest and highest
    number of each that the parser keeps (its ``Range``; ``-inf`` dBm too, ethtool's no light)."""

    pattern: str
    lows: tuple[float, ...]
    highs: tuple[float, ...]


def _printed(pattern: str, *ranges: Range, no_light: bool = False) -> _Printed:
    lows = tuple(-math.inf if no_light and at == len(ranges) - 1 else kept.low for at, kept in enumerate(ranges))
    return _Printed(pattern, lows, tuple(kept.high for kept in ranges))


_NUMBER = f"([-+0-9.]{{1,{2 * MAX_DIGITS}}})"
"""A number as ethtool prints it (``%.4f``, no exponent). Of such a token ``float`` gives what the
parser's ``read_float`` gives (a finite number), or raises where it gives None."""
_POWER = f"{_NUMBER} mW / (-inf|{_NUMBER[1:-1]}) dBm"
_PRINTED: Mapping[str, _Printed] = MappingProxyType({
    "tx_power": _printed(_POWER, MODULE_POWER_MW, MODULE_POWER_DBM, no_light=True),
    "rx_power": _printed(_POWER, MODULE_POWER_MW, MODULE_POWER_DBM, no_light=True),
    "temp": _printed(f"{_NUMBER} degrees C / [-+0-9.]+ degrees F", MODULE_TEMP_C),
    "tx_bias": _printed(f"{_NUMBER} mA", MODULE_BIAS_MA),
    "voltage": _printed(f"{_NUMBER} V", MODULE_VOLTAGE_V),
})
"""Each group is the whole token the parser's own value patterns take from such a value (what
follows a token is a space), and only this quantity's pattern matches it."""
_PADDED = "[ \t]*{}[ \t]*"
"""A value as printed, after `` :``: what ``strip`` leaves is the value."""
_FIELDS_OF: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "temp": ("temp_c",), "voltage": ("voltage_v",), "tx_bias": ("tx_bias_ma",),
    "tx_power": ("tx_power_mw", "tx_power_dbm"), "rx_power": ("rx_power_mw", "rx_power_dbm"),
})
"""The fields of ``EthtoolModule`` (and its ``ModuleLane``) a quantity's numbers set, in their order."""
_LANE_FIELDS = ("tx_bias_ma", "tx_power_mw", "tx_power_dbm", "rx_power_mw", "rx_power_dbm")


_UNSET = -1
"""The group index of a reading no line of a template sets: a dump's numbers end with None there."""


class _LaneGroups(NamedTuple):
    """Which of a template's groups sets each of one lane's readings (``_UNSET``: none)."""

    port: str
    """``L0``.. (0-based)."""
    tx_bias_ma: int
    tx_power_mw: int
    tx_power_dbm: int
    rx_power_mw: int
    rx_power_dbm: int


class _Template(NamedTuple):
    """Where the parser finds each reading in dumps of one shape: each line as it is, but for the
    values of reading lines, each number a group of ``pattern``; the fields name the group that
    sets them (the last line of a reading winning, as in the parser)."""

    pattern: re.Pattern[str]
    lows: tuple[float, ...]
    """The lowest number the parser keeps, by group."""
    highs: tuple[float, ...]
    """The highest, by group."""
    temp_c: int
    voltage_v: int
    lanes: tuple[_LaneGroups, ...]
    """In lane order."""


class _Matched(NamedTuple):
    """A template, and its match of a dump of its shape."""

    template: _Template
    match: re.Match[str]


class OpticsReader:
    """``ethtool -m`` text -> ``{(metric, port): value}``; lanes are ``L0``.. (0-based).

    The readings are those ``parse_ethtool_module`` gives for the text's reading
    lines (``optics_readings``). A dark lane reads ``-inf dBm``: it is kept as
    -40 dBm, below every real receiver's sensitivity, so that it shows as the
    worst margin instead of vanishing from the series (the store keeps finite
    numbers only). A lane whose laser is off and that receives nothing (no
    bias, no light either way) is an unused channel, as CMIS modules print for
    8 channels of a 4-lane link, and is left out.

    For speed, the first dump of each shape whose every reading is printed as
    ethtool prints it becomes a template (``_Template``): the next dumps of
    that shape are read by one match, each number as the parser's
    ``read_float`` reads it and within the parser's range. A dump the templates cannot
    read that way (a reading printed otherwise, a number the parser refuses or
    leaves out) is read by the parser itself. The reader keeps ``most``
    templates (a fleet has a few module types); one reader serves a whole
    collector.
    """

    def __init__(self, most: int = 256) -> None:
        self.most = most
        self._templates: dict[str, list[_Template]] = {}
        """A dump's first line -> the templates of dumps that begin with it."""
        self._kept = 0

    @property
    def templates(self) -> int:
        """How many templates the reader keeps (at most ``most``)."""
        return self._kept

    def __call__(self, text: str) -> Readings:
        found = self._matched(text)
        if found is None:
            lines = text.splitlines()
            dump = "\n".join(lines)  # line breaks of any kind as the one kind a template has
            found = self._matched(dump) if dump != text else None
            if found is None:
                template = _template(lines)
                if template is None:  # a reading printed otherwise than ethtool prints it
                    return module_readings(parse_ethtool_module(optics_readings(dump)))
                if self._kept < self.most:
                    self._templates.setdefault(lines[0] if lines else "", []).append(template)
                    self._kept += 1
                match = template.pattern.fullmatch(dump)
                assert match is not None, "a dump is of the shape of the template made from it"
                found = _Matched(template, match)
        values = _read(found)
        if values is None:  # a number the parser refuses or leaves out: it says what it makes of it
            return module_readings(parse_ethtool_module(optics_readings(text)))
        return values

    def _matched(self, dump: str) -> _Matched | None:
        """The kept template of ``dump``'s shape, and its match; None if none is of that shape."""
        for template in self._templates.get(dump.partition("\n")[0], ()):
            match = template.pattern.fullmatch(dump)
            if match is not None:
                return _Matched(template, match)
        return None


def module_readings(module: EthtoolModule) -> Readings:
    """The readings of a parsed module (see ``OpticsReader``)."""
    values: Readings = {}
    _put_module(values, module.temp_c, module.voltage_v)
    for lane in module.lanes:
        _put_lane(values, f"L{lane.lane - 1}", lane.tx_bias_ma, lane.tx_power_mw, lane.tx_power_dbm,
                  lane.rx_power_mw, lane.rx_power_dbm)
    return values


def _put_module(values: Readings, temp_c: float | None, voltage_v: float | None) -> None:
    if temp_c is not None:
        values[("optics_temp_c", "")] = temp_c
    if voltage_v is not None:
        values[("optics_voltage_v", "")] = voltage_v


def _put_lane(values: Readings, port: str, tx_bias_ma: float | None, tx_power_mw: float | None,
              tx_power_dbm: float | None, rx_power_mw: float | None, rx_power_dbm: float | None) -> None:
    """One lane's readings, unless the lane is unused; a dark lane's power as ``DARK_LANE_DBM``."""
    if not (tx_bias_ma or tx_power_mw or rx_power_mw):
        return
    if rx_power_dbm is not None:
        values[("optics_rx_power_dbm", port)] = max(rx_power_dbm, DARK_LANE_DBM)
    if tx_power_dbm is not None:
        values[("optics_tx_power_dbm", port)] = max(tx_power_dbm, DARK_LANE_DBM)
    if tx_bias_ma is not None:
        values[("optics_tx_bias_ma", port)] = tx_bias_ma


def _template(lines: list[str]) -> _Template | None:
    """The template of dumps shaped as ``lines``; None when one of its readings is printed otherwise
    than ethtool prints it (the parser reads such a dump)."""
    parts: list[str] = []
    lows: list[float] = []
    highs: list[float] = []
    module: dict[str, int] = {}
    lanes: dict[int, dict[str, int]] = {}
    for line in lines:
        cut = line.find(" :")
        measured = measurement_key(line[:cut].strip()) if cut >= 0 and is_optics_reading(line[:cut].lower()) \
            else None
        if measured is None:  # not a reading (or not one the parser is given): it sets nothing
            parts.append(re.escape(line))
            continue
        quantity, lane = measured
        printed = _PRINTED[quantity]
        if re.fullmatch(_PADDED.format(printed.pattern), line[cut + 2:]) is None:
            return None
        parts.append(re.escape(line[:cut + 2]) + _PADDED.format(printed.pattern))
        fields = _FIELDS_OF[quantity]
        groups = range(len(lows), len(lows) + len(fields))
        lows += printed.lows
        highs += printed.highs
        where = module if quantity in ("temp", "voltage") else lanes.setdefault(lane or 1, {})
        where.update(zip(fields, groups, strict=True))
    return _Template(
        re.compile("\n".join(parts) + "\n?"), tuple(lows), tuple(highs), module.get("temp_c", _UNSET),
        module.get("voltage_v", _UNSET),
        tuple(_LaneGroups(f"L{lane - 1}", *(found.get(field, _UNSET) for field in _LANE_FIELDS))
              for lane, found in sorted(lanes.items())))


def _read(found: _Matched) -> Readings | None:
    """A dump's readings by the template of its shape; None when one of its numbers is one the
    parser refuses (``read_float``) or leaves out (outside its range)."""
    template = found.template
    tokens = found.match.groups()
    try:
        read = [*map(float, tokens)]  # as read_float reads them (_NUMBER)
    except ValueError:
        return None
    if not (all(map(le, template.lows, read)) and all(map(le, read, template.highs))):
        return None
    numbers: list[float | None] = [*read, None]  # None at _UNSET
    values: Readings = {}
    _put_module(values, numbers[template.temp_c], numbers[template.voltage_v])
    for lane in template.lanes:
        _put_lane(values, lane.port, numbers[lane.tx_bias_ma], numbers[lane.tx_power_mw], numbers[lane.tx_power_dbm],
                  numbers[lane.rx_power_mw], numbers[lane.rx_power_dbm])
    return values


__all__ = ["DARK_LANE_DBM", "OpticsReader", "Readings", "module_readings"]
