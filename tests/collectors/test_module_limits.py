"""Module thresholds from real ``ethtool -m`` dumps, and from the simulator's, as the optics rule reads them."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.module_limits import module_limit_values, module_parts

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ethtool"


def test_a_real_cwdm4_modules_own_thresholds_are_stored_per_nic() -> None:
    text = (FIXTURES / "cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt").read_text()
    values = module_limit_values({"module:enp1s0np0": text}, {"enp1s0np0": "mlx5_0"})
    assert values[("optics_rx_power_low_warning_dbm", "mlx5_0", "")] == -12.0
    assert values[("optics_rx_power_low_alarm_dbm", "mlx5_0", "")] == -16.0
    assert values[("optics_tx_bias_high_alarm_ma", "mlx5_0", "")] == 55.0
    assert values[("optics_temp_high_warning_c", "mlx5_0", "")] == 55.0
    assert len(values) == 16  # rx, tx, bias, temperature: four levels each (voltage is not judged)


def test_a_module_that_publishes_no_thresholds_gives_none() -> None:
    """Modules without thresholds print zeros and -inf (a real QSFP+ SR4 dump's shape)."""
    text = "\n".join(f"Laser bias current {level} threshold   : 0.000 mA" for level in
                     ("high alarm", "low alarm", "high warning", "low warning"))
    text += "\n" + "\n".join(f"Laser rx power {level} threshold       : 0.0000 mW / -inf dBm" for level in
                             ("high alarm", "low alarm", "high warning", "low warning"))
    assert module_limit_values({"module:eth0": text}, {"eth0": "mlx5_0"}) == {}


def test_dumps_of_unknown_netdevs_and_other_sections_are_ignored() -> None:
    text = (FIXTURES / "cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt").read_text()
    assert module_limit_values({"module:eth9": text, "kernel": "6.8"}, {"eth0": "mlx5_0"}) == {}
    assert [name for name, _ in module_parts({"b": "mlx5_1", "a": "mlx5_0"})] == ["module:a", "module:b"]
