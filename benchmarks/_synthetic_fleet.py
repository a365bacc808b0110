"""A synthetic 1,024-node fleet for the store, UI and export benchmarks: values that move like the real ones.

Per node, 8 RDMA NICs x 40 series and 8 GPUs x 12 series, sampled every 10 s
with a few tens of milliseconds of collection jitter:

- traffic counters grow by a per-NIC utilisation (a slow random walk; about a
  third of the nodes idle) times the 400 Gb/s line rate, in whole 4-byte words;
  packets follow bytes; about one NIC in ten is congested and counts pauses,
  ECN marks and CNPs; FEC-corrected bits follow a per-NIC bit error ratio;
- the derived rate gauges are computed from the counter deltas and the real
  (jittered) interval, so they are full-precision floats, as in production;
- optics read in ethtool's resolution (0.01 C, 0.0001 V and dBm) with noise;
- GPU readings in NVML's units (integer %, C, MHz; power in mW; memory in MiB);
- error counters stay flat but for rare increments on a few NICs and GPUs.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from fleet.fabric.samples import HostSample, SeriesKey

NICS, GPUS = 8, 8
INTERVAL_S = 10.0
LINE_RATE_GBPS = 400.0

NIC_COUNTERS = (
    "tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "unicast_xmit_packets",
    "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets", "port_xmit_wait",
    "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
    "rx_prio3_pause", "tx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause_duration",
    "rx_bits_phy", "rx_corrected_bits_phy",
)
NIC_GAUGES = (
    "port_state", "phys_state", "rate_gbps", "qp_count", "tx_gbps", "rx_gbps", "rx_pause_per_s",
    "tx_pause_per_s", "cnp_sent_per_s", "cnp_handled_per_s", "ecn_marked_per_s", "errors_per_s",
    "pre_fec_ber", "optics_temp_c", "optics_voltage_v",
)
NIC_LANES = 4
NIC_ERRORS = ("symbol_error", "link_downed", "rx_discards_phy")
GPU_SERIES = (
    "gpu_util_pct", "gpu_mem_used_bytes", "gpu_mem_total_bytes", "gpu_temp_c", "gpu_power_w",
    "gpu_sm_clock_mhz", "gpu_throttle_reasons", "gpu_xid_last", "gpu_xid_count",
    "gpu_ecc_volatile_corrected", "gpu_pcie_replay", "gpu_nvlink_crc_errors",
)
GPU_ERRORS = frozenset({"gpu_xid_count", "gpu_ecc_volatile_corrected", "gpu_pcie_replay",
                        "gpu_nvlink_crc_errors"})
NIC_SERIES = len(NIC_COUNTERS) + len(NIC_GAUGES) + NIC_LANES + len(NIC_ERRORS)
SERIES_PER_NODE = NICS * NIC_SERIES + GPUS * len(GPU_SERIES)


def host_keys() -> list[SeriesKey]:
    """The (metric, device, port) of every series of one node, in the order of a row."""
    keys: list[SeriesKey] = []
    for nic in range(NICS):
        dev = f"mlx5_{nic}"
        keys += [(m, dev, "1") for m in NIC_COUNTERS + NIC_GAUGES]
        keys += [("optics_rx_power_dbm", dev, f"L{lane}") for lane in range(NIC_LANES)]
        keys += [(m, dev, "1") for m in NIC_ERRORS]
    for gpu in range(GPUS):
        keys += [(m, f"gpu{gpu}", "") for m in GPU_SERIES]
    return keys


class SyntheticFleet:
    """Generates one :class:`HostSample` per node per 10 s tick, from a seed."""

    def __init__(self, nodes: int, start_ts: float, seed: int = 7) -> None:
        self.nodes = nodes
        self.start_ts = start_ts
        self.rng = np.random.default_rng(seed)
        self.names = [f"gpu{i + 1:04d}" for i in range(nodes)]
        self.keys = host_keys()
        rng, shape = self.rng, (nodes, NICS)
        self.busy = (rng.random(nodes) < 0.7)[:, None] * np.ones(shape)
        self.util = rng.uniform(0.3, 0.9, shape) * self.busy
        self.congested = rng.random(shape) < 0.1
        self.ber = 10.0 ** rng.uniform(-9, -6, shape)
        self.counters = np.floor(rng.uniform(0, 1e14, (nodes, NICS, len(NIC_COUNTERS))))
        self.optics_temp = rng.uniform(38, 55, shape)
        self.rx_power = rng.uniform(-4, 1, (nodes, NICS, NIC_LANES))
        self.nic_errors = np.zeros((nodes, NICS, len(NIC_ERRORS)))
        self.gpu_util = rng.uniform(0, 100, (nodes, GPUS)) * self.busy[:, :1]
        self.gpu_mem = np.floor(rng.uniform(1e3, 7e4, (nodes, GPUS)))
        self.gpu_errors = np.zeros((nodes, GPUS, len(GPU_ERRORS)))
        self.qps = np.where(self.busy > 0, 64.0, 2.0)
        self.last_ts = np.full(nodes, start_ts - INTERVAL_S)

    def ticks(self, count: int) -> Iterator[list[HostSample]]:
        for k in range(count):
            yield self.tick(k)

    def tick(self, k: int) -> list[HostSample]:
        """The samples of every node at tick ``k``."""
        rng, n = self.rng, self.nodes
        ts = self.start_ts + k * INTERVAL_S + rng.uniform(0.0, 0.05, n)
        dt = (ts - self.last_ts)[:, None]
        self.last_ts = ts
        self.util = np.clip(self.util + rng.normal(0, 0.02, self.util.shape) * self.busy, 0, 1)
        byte_rate = self.util * LINE_RATE_GBPS * 1e9 / 8
        tx = np.floor(byte_rate * dt / 4) * 4
        rx = np.floor(byte_rate * rng.uniform(0.97, 1.0, tx.shape) * dt / 4) * 4
        pkts_tx, pkts_rx = np.floor(tx / 4096), np.floor(rx / 4096)
        mc_tx, mc_rx = rng.poisson(2, tx.shape), rng.poisson(2, tx.shape)
        cong = self.congested * self.busy
        pause_rx = rng.poisson(500, tx.shape) * cong
        pause_tx = rng.poisson(50, tx.shape) * cong
        ecn = rng.poisson(2000, tx.shape) * cong
        bits = rx * 8 + np.floor(LINE_RATE_GBPS * 1e7 * dt)
        corrected = rng.poisson(np.maximum(bits * self.ber, 0))
        wait = rng.poisson(1e4, tx.shape) * cong + rng.poisson(5, tx.shape) * self.busy
        deltas = np.stack([
            tx, rx, pkts_tx + mc_tx, pkts_rx + mc_rx, pkts_tx, pkts_rx, mc_tx, mc_rx, wait,
            ecn, ecn, np.floor(ecn * 0.98), np.floor(ecn * 0.02), pause_rx, pause_tx,
            pause_rx * 3, pause_tx * 3, bits, corrected], axis=-1)
        self.counters += deltas
        rates = np.stack([
            tx * 8 / dt / 1e9, rx * 8 / dt / 1e9, pause_rx / dt, pause_tx / dt, ecn / dt,
            np.floor(ecn * 0.98) / dt, ecn / dt], axis=-1)
        flip = rng.random(self.nic_errors.shape) < 2e-4
        self.nic_errors += flip
        errors_per_s = flip.sum(axis=-1) / dt
        self.optics_temp += rng.normal(0, 0.05, self.optics_temp.shape)
        self.rx_power += rng.normal(0, 0.002, self.rx_power.shape)
        ones = np.ones(tx.shape)
        nic = np.concatenate([
            self.counters,
            np.stack([ones * 4, ones * 5, ones * LINE_RATE_GBPS, self.qps * ones,
                      rates[..., 0], rates[..., 1], rates[..., 2], rates[..., 3], rates[..., 4],
                      rates[..., 5], rates[..., 6], errors_per_s,
                      corrected / np.maximum(bits, 1),
                      np.round(self.optics_temp, 2), np.round(3.3 + rng.normal(0, 0.002, tx.shape), 4)],
                     axis=-1),
            np.round(self.rx_power, 4),
            self.nic_errors,
        ], axis=-1)
        self.gpu_util = np.clip(self.gpu_util + rng.normal(0, 3, self.gpu_util.shape), 0, 100)
        self.gpu_mem = np.clip(self.gpu_mem + (rng.random(self.gpu_mem.shape) < 0.05)
                               * rng.integers(-512, 512, self.gpu_mem.shape), 0, 80_000)
        gflip = rng.random(self.gpu_errors.shape) < 1e-4
        self.gpu_errors += gflip
        util = np.round(self.gpu_util)
        gones = np.ones(util.shape)
        gpu = np.concatenate([
            np.stack([util, self.gpu_mem * 2**20, gones * 80 * 2**30,
                      np.round(35 + util * 0.4 + rng.normal(0, 0.7, util.shape)),
                      np.round(90 + util * 6 + rng.normal(0, 5, util.shape), 3),
                      np.where(util > 5, 1980.0, 345.0), gones * 0, gones * 0], axis=-1),
            self.gpu_errors,
        ], axis=-1)
        matrix = np.concatenate([nic.reshape(n, -1), gpu.reshape(n, -1)], axis=1)
        keys = self.keys
        return [HostSample(name, float(t), dict(zip(keys, row, strict=True)))
                for name, t, row in zip(self.names, ts.tolist(), matrix.tolist(), strict=True)]
