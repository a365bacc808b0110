"""The collector's optics reader gives exactly what the full parser gives, on every capture, the
simulator's modules and hostile text."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from fleet.collectors.agent import optics_readings
from fleet.collectors.optics import DARK_LANE_DBM, OpticsReader
from fleet.collectors.parsers.ethtool_module import EthtoolModule, parse_ethtool_module
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario
from fleet.simulator.state import OpticsLane
from fleet.simulator.tools.ethtool import render_module

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ethtool"
FLEET = """
[fabric]
nodes = 4
nodes_per_leaf = 4
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 5

[[faults]]
kind = "optics_attenuation"
target = "gpu002:mlx5_1"
db = 7.0
at = 0
"""


optics_values = OpticsReader()
"""One reader for the whole module, as a collector has one: what it keeps from a test must not change
what another reads."""


def module_values(module: EthtoolModule) -> dict[tuple[str, str], float]:
    """The readings of a parsed module, by the rules ``OpticsReader`` states: temperature, voltage,
    then each used lane's rx and tx power (dark: -40 dBm) and bias."""
    values: dict[tuple[str, str], float] = {}
    if module.temp_c is not None:
        values[("optics_temp_c", "")] = module.temp_c
    if module.voltage_v is not None:
        values[("optics_voltage_v", "")] = module.voltage_v
    for lane in module.lanes:
        if not (lane.tx_bias_ma or lane.tx_power_mw or lane.rx_power_mw):
            continue
        port = f"L{lane.lane - 1}"
        for metric, reading in (("optics_rx_power_dbm", lane.rx_power_dbm), ("optics_tx_power_dbm", lane.tx_power_dbm),
                                ("optics_tx_bias_ma", lane.tx_bias_ma)):
            if reading is not None and not math.isnan(reading):
                values[(metric, port)] = max(reading, DARK_LANE_DBM) if metric.endswith("_dbm") else reading
    return values


def _simulated_modules() -> list[str]:
    model = FleetModel(parse_scenario(FLEET, source="optics.toml"), start_unix=1_760_000_000.0)
    return [render_module(nic.optics) for host in ("gpu001", "gpu002")
            for nic in model.node_view(host, 30.0).nics if nic.optics is not None]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*ethtool-m*")), ids=lambda p: p.name)
def test_real_module_dumps_read_the_same_as_the_full_parse(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = module_values(parse_ethtool_module(text))
    assert expected, "the capture has readings"
    assert optics_values(text) == expected


def test_simulated_cmis_dumps_read_the_same_as_the_full_parse() -> None:
    texts = _simulated_modules()
    assert len(texts) == 16
    for text in texts:
        assert optics_values(text) == module_values(parse_ethtool_module(text))
    weak = optics_values(texts[9])  # gpu002 mlx5_1: 7 dB down
    assert weak[("optics_rx_power_dbm", "L0")] < optics_values(texts[8])[("optics_rx_power_dbm", "L0")] - 3


def test_thresholds_and_alarm_flags_do_not_become_readings() -> None:
    text = (
        "\tIdentifier                                : 0x11 (QSFP28)\n"
        "\tModule temperature                        : 41.50 degrees C / 106.70 degrees F\n"
        "\tModule temperature high alarm threshold   : 80.00 degrees C / 176.00 degrees F\n"
        "\tLaser bias current high alarm (Chan 1)    : On\n"
        "\tLaser tx bias current (Channel 1)         : 6.750 mA\n"
        "\tRcvr signal avg optical power (Channel 1) : 0.7943 mW / -1.00 dBm\n"
        "\tRx power low warning threshold            : 0.0500 mW / -13.01 dBm\n"
    )
    assert optics_values(text) == {
        ("optics_temp_c", ""): 41.5, ("optics_tx_bias_ma", "L0"): 6.75, ("optics_rx_power_dbm", "L0"): -1.0,
    }


# --- the reader against the full parse, on everything -------------------------------------

FAULTS = """
[[faults]]
kind = "optics_attenuation"
target = "gpu001:mlx5_2"
db = 45.0
at = 0

[[faults]]
kind = "link_down"
target = "gpu001:mlx5_3"
at = 0

[[faults]]
kind = "high_ber"
target = "gpu002:mlx5_0"
ber = 1e-4
at = 0
"""


def _slow(text: str) -> dict[tuple[str, str], float]:
    """The reading lines through the full parser."""
    return module_values(parse_ethtool_module(optics_readings(text)))


def _same(text: str) -> None:
    """The reader gives the full parse, value for value and in the same order, with its table of keys
    empty and full."""
    want = _slow(text)
    for reader in (OpticsReader(), optics_values, optics_values):
        got = reader(text)
        assert list(got.items()) == list(want.items()) or _nan_equal(got, want), text


def _nan_equal(got: Mapping[tuple[str, str], float], want: Mapping[tuple[str, str], float]) -> bool:
    return list(got) == list(want) and all(
        a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got.values(), want.values(), strict=True))


def _captures() -> list[Path]:
    return sorted(FIXTURES.glob("*ethtool-m*"))


def _rendered() -> list[str]:
    """Simulated modules: CMIS (OSFP, 8 channels, 4 used) with faults, and SFF-8636 (QSFP28) ones."""
    model = FleetModel(parse_scenario(FLEET + FAULTS, source="faults.toml"), start_unix=1_760_000_000.0)
    cmis = [nic.optics for host in ("gpu001", "gpu002") for nic in model.node_view(host, 30.0).nics
            if nic.optics is not None]
    lanes = (OpticsLane(0.7943, 1.1, 6.75), OpticsLane(0.0, 1.0, 6.5), OpticsLane(0.0, 0.0, 0.0),
             OpticsLane(0.0004, 0.9, 7.0))
    qsfp = [replace(cmis[0], identifier="0x11 (QSFP28)", lanes=lanes),
            replace(cmis[1], identifier="0x0d (QSFP+)", lanes=lanes[:1]),
            replace(cmis[2], identifier="0x18 (QSFP-DD)", lanes=lanes * 2)]
    return [render_module(optics) for optics in cmis + qsfp]


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.name)
def test_real_captures_whole_and_readings_only(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for variant in (text, optics_readings(text)):
        _same(variant)
        reader = OpticsReader()
        reader(variant)
        assert reader.templates == 1  # printed as ethtool prints: the next dumps are read by one match


def test_simulated_modules_with_faults() -> None:
    texts = _rendered()
    assert len(texts) == 19
    for text in texts:
        for variant in (text, optics_readings(text)):
            _same(variant)
    dark = optics_values(optics_readings(texts[2]))  # gpu001 mlx5_2: 45 dB down, no light
    assert dark[("optics_rx_power_dbm", "L0")] == DARK_LANE_DBM
    qsfp28 = optics_values(optics_readings(texts[16]))
    assert ("optics_tx_bias_ma", "L2") not in qsfp28  # an unused lane is left out
    assert qsfp28[("optics_rx_power_dbm", "L1")] == DARK_LANE_DBM  # a dark lane is kept


def test_truncated_dumps_read_as_the_full_parse() -> None:
    text = optics_readings(_rendered()[9])
    for end in range(len(text) + 1):
        _same(text[:end])


@pytest.mark.parametrize("text", [
    "",
    "\n\n",
    "garbage without a colon\n\x00\xff",
    "Module temperature : 3.3 V\n",  # a reading in another unit: the parser's rule decides
    "Module temperature                        : 41.00 degrees C / 105.80 degrees F\n"
    "Module temperature                        : n/a\n",
    "Laser tx bias current (Channel 0)         : 6.000 mA\n",  # lane 0 is filed as lane 1
    "Laser tx bias current (Channel 01)        : 6.000 mA\n",
    "Laser tx bias current (Channel \u0663)         : 6.000 mA\n",  # an Arabic-Indic digit
    "Laser tx bias current (Channel 1)         : 6.000 mA\n"
    "Laser tx bias current (Channel 1)         : 7.000 mA\n",
    "Transmit avg optical power (Channel 1)    : 1.0 mW / nan dBm\nLaser tx bias current (Channel 1) : 1 mA\n",
    "Transmit avg optical power (Channel 1)    : 1e0 mW / Infinity dBm\n",
    "Transmit avg optical power (Channel 1)    : - mW / 1.0 dBm\n",
    "Transmit avg optical power (Channel 1)    : 1.0 mW / x dBm\n",
    "Transmit avg optical power (Channel 1)    : 1.0 mW /  -1.0 dBm\n",
    "Transmit avg optical power (Channel 1)    : 1.0mW / -1.0 dBm\n",
    "Rcvr signal avg optical power(Channel 2)  : 0.9100 mW / -0.41 dBm extra\n",
    "Module voltage                            : 3.3 Volt\n",
    "Module voltage alarm                      : 3.3 V\n",  # 'alarm' in the key: not a reading
    "Laser temperature                         : 40.00 degrees C / 104.00 degrees F\n",
    "Power class                               : 4\nMax power : 8.50W\n",
    "Laser tx bias current                     : 6.000 mA\r\nModule voltage : 3.2 V\x0b\n",
    "Identifier : 0x11\nModule voltage : 3.2 V\nIdentifier : 0x11\nModule voltage : 3.3 V\n",
])
def test_hostile_input_reads_as_the_full_parse(text: str) -> None:
    _same(text)


def test_other_tools_text_reads_as_the_full_parse() -> None:
    for path in sorted(FIXTURES.parent.rglob("*.txt")):
        _same(path.read_text(encoding="utf-8", errors="replace"))


def test_mutated_dumps_read_as_the_full_parse() -> None:
    """Seeded random edits of real and simulated dumps: characters, lines and values swapped around."""
    rng = random.Random(20261129)
    texts = [p.read_text(encoding="utf-8") for p in _captures()] + _rendered()[8:12]
    alphabet = " \t:/.-+0123456789eEmWAVdBinfCchanel()\n"
    for _ in range(600):
        lines = optics_readings(rng.choice(texts)).splitlines()
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(lines))
            line = lines[at]
            edit = rng.randrange(4)
            if edit == 0 and line:
                cut = rng.randrange(len(line))
                lines[at] = line[:cut] + rng.choice(alphabet) + line[cut + 1:]
            elif edit == 1:
                lines.insert(rng.randrange(len(lines) + 1), line)
            elif edit == 2:
                other = rng.choice(lines)
                lines[at] = line.partition(" :")[0] + " :" + other.partition(" :")[2]
            else:
                del lines[at]
        _same("\n".join(lines))


def test_a_reading_in_another_unit_sets_nothing() -> None:
    assert optics_values("Module temperature : 3.3 V\n") == {}


def test_dumps_of_one_shape_are_read_through_one_template() -> None:
    reader = OpticsReader()
    rng = random.Random(7)
    text = optics_readings(_rendered()[9])
    for _ in range(20):
        dump = _renumbered(text, rng, odd=False)
        assert reader(dump) == _slow(dump)
    assert reader.templates == 1


def test_what_the_reader_keeps_stays_bounded() -> None:
    """A new shape in every dump: the reader keeps ``most`` templates and reads the rest all the same."""
    reader = OpticsReader(most=4)
    for step in range(1, 200):
        text = f"{'Laser tx bias current (Channel ' + str(step) + ')':42}: 6.{step:03d} mA\n"
        assert reader(text) == _slow(text)
        assert len(reader(text)) == 1
    assert reader.templates == 4


_VALUE_EDITS = ("", "0", "00", "9", "-", "+", ".", "e", "nan", "inf", "-inf", " ", "\t", "\r", "\x0b", "\u2028",
                "x", "1.2.3", " mW", "mA")


def _renumbered(text: str, rng: random.Random, odd: bool = True) -> str:
    """``text`` with new numbers in its readings; ``odd``: some edited as ethtool would not print them."""
    lines = []
    for line in text.split("\n"):
        key, colon, value = line.partition(" :")
        if value.rstrip().endswith(("mA", "dBm", "degrees F", " V")):
            value = "".join(rng.choice("0123456789") if char.isdigit() else char for char in value)
        if odd and value and rng.random() < 0.2:
            cut = rng.randrange(len(value))
            value = value[:cut] + rng.choice(_VALUE_EDITS) + value[cut + rng.randrange(2):]
        lines.append(key + colon + value)
    return "\n".join(lines)


def test_a_modules_next_dumps_with_odd_values_read_as_the_full_parse() -> None:
    rng = random.Random(20261202)
    texts = [optics_readings(text) for text in _rendered()[8:12]] + [
        optics_readings(path.read_text(encoding="utf-8")) for path in _captures()]
    for text in texts:
        for _ in range(60):
            _same(_renumbered(text, rng))
