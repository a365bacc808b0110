"""Optics readings of ``ethtool -m`` text as samples (``optics_*`` metrics of fabric.samples)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from fleet.collectors.agent import is_optics_reading, optics_readings
from fleet.collectors.parsers.ethtool_module import (
    EthtoolModule,
    measurement_key,
    parse_ethtool_module,
)


def optics_values(text: str) -> Mapping[tuple[str, str], float]:
    """``ethtool -m`` text -> ``{(metric, port): value}``; lanes are ``L0``.. (0-based).

    A dark lane reads ``-inf dBm``: it is kept as -40 dBm, below every real
    receiver's sensitivity, so that it shows as the worst margin instead of
    vanishing from the series (the store keeps finite numbers only). A lane
    whose laser is off and that receives nothing (no bias, no light either
    way) is an unused channel, as CMIS modules print for 8 channels of a
    4-lane link, and is left out.

    Every node sends each NIC's readings every few seconds, so the readings are
    read line by line with a table of the keys seen (``_fast_values``); any line
    that is not exactly as ethtool prints it sends the text through the full
    parser, which gives the same values the slow way.
    """
    fast = _template_values(text)
    if fast is None:
        fast = _fast_values(text)
    if fast is not None:
        return fast
    return module_values(parse_ethtool_module(optics_readings(text)))


def module_values(module: EthtoolModule) -> dict[tuple[str, str], float]:
    """The readings of one parsed module as ``{(metric, port): value}`` (see ``optics_values``)."""
    values: dict[tuple[str, str], float] = {}
    if module.temp_c is not None:
        values[("optics_temp_c", "")] = module.temp_c
    if module.voltage_v is not None:
        values[("optics_voltage_v", "")] = module.voltage_v
    for lane in module.lanes:
        _put_lane(values, lane.lane, lane.tx_bias_ma, lane.tx_power_mw, lane.tx_power_dbm,
                  lane.rx_power_mw, lane.rx_power_dbm)
    return values


def _put_lane(values: dict[tuple[str, str], float], lane: int, tx_bias_ma: float | None,
              tx_power_mw: float | None, tx_power_dbm: float | None, rx_power_mw: float | None,
              rx_power_dbm: float | None) -> None:
    """One lane's readings (``lane`` 1-based, as printed), unless the lane is unused."""
    if not (tx_bias_ma or tx_power_mw or rx_power_mw):
        return
    port = f"L{lane - 1}"
    for metric, reading in (
        ("optics_rx_power_dbm", rx_power_dbm),
        ("optics_tx_power_dbm", tx_power_dbm),
        ("optics_tx_bias_ma", tx_bias_ma),
    ):
        if reading is None or math.isnan(reading):
            continue
        values[(metric, port)] = max(reading, DARK_LANE_DBM) if metric.endswith("_dbm") else reading


# --- the fast path ------------------------------------------------------------------

# Values exactly as ethtool prints them. A value one of these matches whole (after
# strip) is read by the parser's own patterns (_POWER_RE, _TEMP_RE, _UNIT_RE of
# collectors/parsers/ethtool_module.py, tried in that order) into the same number:
# only a power value holds "mW", only a temperature "degrees C", and the groups
# stop at the same space.
_POWER_VALUE = re.compile(r"([-+0-9.eE]+) mW / ([-+0-9.a-zA-Z]+) dBm")
_TEMP_VALUE = re.compile(r"([-+0-9.]+) degrees C / [-+0-9.]+ degrees F")
_BIAS_VALUE = re.compile(r"([-+0-9.]+) mA")
_VOLT_VALUE = re.compile(r"([-+0-9.]+) V")

_TEMP, _VOLT, _BIAS, _TX, _RX = range(5)  # _TX and _RX last: `quantity >= _TX` is a power
_QUANTITIES = {"temp": _TEMP, "voltage": _VOLT, "tx_bias": _BIAS, "tx_power": _TX, "rx_power": _RX}
_VALUE_OF = (_TEMP_VALUE, _VOLT_VALUE, _BIAS_VALUE, _POWER_VALUE, _POWER_VALUE)

_KEYS: dict[str, tuple[int, int] | None] = {}
"""Key as printed (before `` :``, indent and padding included) -> (quantity, lane) or None
(not a reading). A module prints the same few dozen keys every time."""
_MAX_KEYS = 4096
"""Beyond this many distinct keys (garbage) they are worked out each time, not kept."""
_UNSEEN = (-1, -1)


def _key_kind(raw_key: str) -> tuple[int, int] | None:
    """What the line of ``raw_key`` gives ``optics_values``: the readings-only filter, then the parser's reading."""
    if not is_optics_reading(raw_key.lower()):
        return None
    key = raw_key.strip()
    measured = measurement_key(key) if key else None
    if measured is None:
        return None
    quantity, lane = measured
    return _QUANTITIES[quantity], lane or 1


def _fast_values(text: str) -> dict[tuple[str, str], float] | None:
    """``optics_values(text)`` for text as ethtool prints it; None when any reading is printed otherwise."""
    try:
        temp_c, voltage_v, lanes = _fast_readings(text)
    except ValueError:  # a number the parser would not read (to_float: None)
        return None
    if lanes is None:
        return None
    _remember_template(text)
    return _values_of(temp_c, voltage_v, lanes)


def _values_of(temp_c: float | None, voltage_v: float | None,
               lanes: dict[int, list[float | None]]) -> dict[tuple[str, str], float]:
    values: dict[tuple[str, str], float] = {}
    if temp_c is not None:
        values[("optics_temp_c", "")] = temp_c
    if voltage_v is not None:
        values[("optics_voltage_v", "")] = voltage_v
    for lane in sorted(lanes):
        _put_lane(values, lane, *lanes[lane])
    return values


_Readings = tuple[float | None, float | None, dict[int, list[float | None]] | None]
_LineReading = tuple[int, int, float, float]
"""(quantity, lane, number, dBm of a power reading else 0.0)."""
_ODD: _LineReading = (-1, -1, 0.0, 0.0)
"""A reading printed otherwise than ethtool prints it."""

_LINES: dict[str, _LineReading | None] = {}
"""Line as printed -> its reading, or None (not a reading). An unused or dark lane, a module's
voltage, a steady reading print the same line read after read."""
_MAX_LINES = 8192
"""Lines kept; when full the table starts again (hostile text cannot grow it)."""


def _line_reading(line: str) -> _LineReading | None:
    """The reading of one line; ValueError for a number ``float`` refuses."""
    cut = line.find(" :")
    if cut < 0:
        return None
    raw_key = line[:cut]
    kind = _KEYS.get(raw_key, _UNSEEN)
    if kind is _UNSEEN:
        kind = _key_kind(raw_key)
        if len(_KEYS) < _MAX_KEYS:
            _KEYS[raw_key] = kind
    if kind is None:
        return None
    quantity, lane = kind
    m = _VALUE_OF[quantity].fullmatch(line[cut + 2:].strip())
    if m is None:
        return _ODD
    return quantity, lane, float(m[1]), float(m[2]) if quantity >= _TX else 0.0


def _fast_readings(text: str) -> _Readings:
    """(temperature C, voltage V, lane -> [tx bias mA, tx mW, tx dBm, rx mW, rx dBm]), lanes None when
    a reading is printed otherwise than ethtool prints it; ValueError for a number ``float`` refuses
    (as ``to_float``, where the parser leaves the reading out)."""
    readings: list[_LineReading] = []
    seen = _LINES
    for line in text.splitlines():
        reading = seen.get(line, _ODD)
        if reading is _ODD:  # not seen (or odd, which is rare and read again)
            reading = _line_reading(line)
            if len(seen) >= _MAX_LINES:
                seen.clear()
            seen[line] = reading
            if reading is _ODD:
                return None, None, None
        if reading is not None:
            readings.append(reading)
    return _gather(readings)


def _gather(readings: list[_LineReading]) -> _Readings:
    """The readings of a dump's lines, in their order (a later line of the same lane wins)."""
    temp_c: float | None = None
    voltage_v: float | None = None
    lanes: dict[int, list[float | None]] = {}
    for quantity, lane, number, dbm in readings:
        if quantity >= _TX:
            entry = lanes.get(lane)
            if entry is None:
                entry = lanes[lane] = [None, None, None, None, None]
            at = 1 if quantity == _TX else 3
            entry[at], entry[at + 1] = number, dbm
        elif quantity == _BIAS:
            entry = lanes.get(lane)
            if entry is None:
                entry = lanes[lane] = [None, None, None, None, None]
            entry[0] = number
        elif quantity == _TEMP:
            temp_c = number
        else:
            voltage_v = number
    return temp_c, voltage_v, lanes


# --- templates -----------------------------------------------------------------------
#
# A module prints the same lines read after read, only the numbers change. A dump that took the
# fast path becomes a template: one regular expression of its lines, each line that is not a
# reading kept literally and each reading's value a group of the very pattern the fast path
# fullmatches it with, the padding around it spaces or tabs only (which ``strip`` removes too) and
# lines ended by "\n" only (so that ``splitlines`` cuts the text where the template does). A dump
# the template matches whole therefore has the same lines, keys and readings, and one C call reads
# them all; any other dump goes the line-by-line way, which gives the same values.

_LanePlan = tuple[int, int, int, int, int, tuple[str, str], tuple[str, str], tuple[str, str]]
"""One lane of a template: the groups of its tx bias, tx mW, tx dBm, rx mW and rx dBm (the last line
of each, as ``_gather`` keeps it; -1 when the dump has none) and its rx dBm, tx dBm and bias keys."""
_Template = tuple[re.Pattern[str], int, int, tuple[_LanePlan, ...]]
"""(the pattern, the group of the temperature and of the voltage or -1, the lanes in lane order)."""
_TEMPLATES: dict[str, list[_Template]] = {}
"""The key of a dump's first line -> templates of dumps that start with it (a few module types a fleet)."""
_MAX_TEMPLATES = 256
_PER_FIRST_LINE = 8
"""Templates kept, at most, for the whole collector and per first line; once full, dumps that
match none (garbage, or a module type seen after them) go the line-by-line way, no slower than
before, and no pattern is compiled again and again."""
_LINE_BREAKS = re.compile(r"[\r\v\f\x1c-\x1e\x85\u2028\u2029]")
"""What ``splitlines`` cuts at besides "\n": a dump holding one gets no template."""


def _first_key(text: str) -> str:
    """The key of a dump's first line (the line itself when it has none): its templates' key."""
    cut = text.find("\n")
    return (text[:cut] if cut >= 0 else text).partition(" :")[0]


def _template_values(text: str) -> dict[tuple[str, str], float] | None:
    """``_fast_values(text)`` through a template of an earlier dump; None when none matches."""
    templates = _TEMPLATES.get(_first_key(text))
    if templates is None:
        return None
    for pattern, temp, voltage, lanes in templates:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        try:  # every number, as the fast path reads every reading line
            numbers = [*map(float, match.groups()), None]  # [-1]: a reading the dump lacks
        except ValueError:  # as _fast_values: the full parse decides
            return None
        values: dict[tuple[str, str], float] = {}
        if temp >= 0:
            values[("optics_temp_c", "")] = numbers[temp]  # type: ignore[assignment]
        if voltage >= 0:
            values[("optics_voltage_v", "")] = numbers[voltage]  # type: ignore[assignment]
        for bias_at, tx_at, tx_dbm_at, rx_at, rx_dbm_at, rx_key, tx_key, bias_key in lanes:
            bias, tx_dbm, rx_dbm = numbers[bias_at], numbers[tx_dbm_at], numbers[rx_dbm_at]
            if not (bias or numbers[tx_at] or numbers[rx_at]):
                continue  # an unused lane, as _put_lane
            if rx_dbm is not None and rx_dbm == rx_dbm:  # not NaN
                values[rx_key] = max(rx_dbm, DARK_LANE_DBM)
            if tx_dbm is not None and tx_dbm == tx_dbm:
                values[tx_key] = max(tx_dbm, DARK_LANE_DBM)
            if bias is not None and bias == bias:
                values[bias_key] = bias
        return values
    return None


def _remember_template(text: str) -> None:
    """Keep ``text``, which took the fast path, as a template (see above)."""
    first = _first_key(text)
    templates = _TEMPLATES.get(first)
    full = len(_TEMPLATES) >= _MAX_TEMPLATES if templates is None else len(templates) >= _PER_FIRST_LINE
    if full or _LINE_BREAKS.search(text) is not None:
        return
    lines = text.split("\n")
    parts: list[str] = []
    temp = voltage = -1
    lanes: dict[int, list[int]] = {}
    group = 0
    for line in lines:
        reading = _line_reading(line)
        if reading is None:
            parts.append(re.escape(line))
            continue
        if reading is _ODD:
            return
        quantity, lane = reading[0], reading[1]
        parts.append(re.escape(line[:line.find(" :") + 2]) + "[ \t]*(?:" + _VALUE_OF[quantity].pattern + ")[ \t]*")
        if quantity == _TEMP:
            temp = group
        elif quantity == _VOLT:
            voltage = group
        else:
            at = {_BIAS: 0, _TX: 1, _RX: 3}[quantity]
            entry = lanes.setdefault(lane, [-1] * 5)
            entry[at] = group
            if quantity != _BIAS:
                entry[at + 1] = group + 1
        group += 2 if quantity >= _TX else 1
    plans = tuple((*entry[:5], ("optics_rx_power_dbm", f"L{lane - 1}"), ("optics_tx_power_dbm", f"L{lane - 1}"),
                   ("optics_tx_bias_ma", f"L{lane - 1}")) for lane, entry in sorted(lanes.items()))
    if templates is None:
        templates = _TEMPLATES[first] = []
    templates.append((re.compile("\n".join(parts)), temp, voltage, plans))  # type: ignore[arg-type]


DARK_LANE_DBM = -40.0
"""What a lane with no light (``-inf dBm``) is stored as."""
