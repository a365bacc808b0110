"""The collector's optics readings: parsing only the reading lines gives exactly what the full parse gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.optics import module_values, optics_values
from collectors.parsers.ethtool_module import parse_ethtool_module
from simulator.model import FleetModel
from simulator.scenario import parse_scenario
from simulator.tools.ethtool import render_module

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
