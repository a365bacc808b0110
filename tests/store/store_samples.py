"""Shared sample builders for the store tests (imported by name: tests/store is on sys.path)."""

from __future__ import annotations

from fleet.fabric.samples import HostSample

T0 = 1_699_999_200.0
"""A start time (unix seconds) on an hour boundary."""


def nic_sample(host: str, ts: float, k: int, nics: int = 2) -> HostSample:
    """A small but mixed sample: a counter, a gauge and an error counter per NIC, a GPU gauge."""
    values: dict[tuple[str, str, str], float] = {}
    for nic in range(nics):
        dev = f"mlx5_{nic}"
        values[("tx_bytes", dev, "1")] = float(1_000_000 * k + nic)
        values[("tx_gbps", dev, "1")] = 100.0 + 0.37 * ((k * 7 + nic) % 11)
        values[("symbol_error", dev, "1")] = float(k // 100)
    values[("gpu_temp_c", "gpu0", "")] = float(40 + k % 5)
    return HostSample(host, ts, values)
