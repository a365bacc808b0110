"""Fixed data for the ECMP plan, baselines, walkthrough and NVLink-vs-network screens: the real fabric/ functions over
numbers chosen here, so the screenshots do not move with the simulator's noise."""

from __future__ import annotations

from dataclasses import replace

from fleet.collectors.ecmp_config import ConfigSnapshot
from fleet.collectors.ecmp_status import LeafPlan
from fleet.fabric.baseline import Baseline, CableCheck, FleetShape
from fleet.fabric.ecmp import OK, SQUEEZED, LeafBalance, UplinkLoad
from fleet.fabric.ecmp_plan import HashConfig, plan_remedies

T_BASE = 1_790_000_000.0
NODES = ("gpu001", "gpu002")
NICS = ("mlx5_0", "mlx5_1")


def baseline(label: str, ts: float, *, bw_gbps: float = 392.0, p99_usec: float = 3.1,
             efficiency: float = 0.96, rx_dbm: float = 1.2, nodes: tuple[str, ...] = NODES) -> Baseline:
    """A two-node baseline (two NICs each) with the numbers given for every part."""
    parts: dict[str, dict[str, float]] = {"fleet/allreduce": {"allreduce_efficiency": efficiency - 0.1},
                                          "fleet/alltoall": {"alltoall_efficiency": efficiency - 0.2}}
    for node in nodes:
        parts[f"node/{node}"] = {"allreduce_efficiency": efficiency}
        for nic in NICS:
            parts[f"nic/{node}/{nic}"] = {"bw_avg_gbps": bw_gbps, "rx_power_dbm": rx_dbm, "errors": 0.0,
                                          "packets": 5.0e7}
    for rail, _nic in enumerate(NICS):
        parts[f"pair/{rail}/{nodes[0]}/{nodes[-1]}"] = {"p99_usec": p99_usec}
    cabling = {f"{n}:{nic}": CableCheck(f"leaf0{r + 1} swp{i + 1}", f"leaf0{r + 1} swp{i + 1}")
               for i, n in enumerate(nodes) for r, nic in enumerate(NICS)}
    return Baseline(label=label, ts=ts, tool_version="fleet 0.1.0",
                    shape=FleetShape(nodes=nodes, nics=tuple(f"{n}:{nic}" for n in nodes for nic in NICS),
                                     switches=("leaf01", "leaf02", "spine01"), rails=(0, 1)),
                    software={n: {"kernel": "6.8.0", "fw_mlx5_0": "28.39.1002"} for n in nodes},
                    parts=parts, cabling=cabling)


def nvlink_baseline(label: str, ts: float) -> Baseline:
    """A two-node baseline with NVLink and RDMA figures (H100 NVLink all-reduce against 480 GB/s, 400 Gb/s
    NICs, gpu002 mlx5_1 slow) and the expert-parallel kernels: the NVLink-vs-network screen's every column."""
    base = baseline(label, ts)
    parts = {part: dict(metrics) for part, metrics in base.parts.items()}
    for node, errors in zip(NODES, (0.0, 12.0), strict=True):
        parts[f"node/{node}"].update({"allreduce_busbw_gbytes_s": 371.5, "allreduce_reference_gbytes_s": 480.0,
                                      "alltoall_busbw_gbytes_s": 342.0, "alltoall_theoretical_gbytes_s": 450.0,
                                      "nvlink_errors": errors})
        for nic in NICS:
            parts[f"nic/{node}/{nic}"].update({"rate_gbps": 400.0})
    parts["nic/gpu002/mlx5_1"]["bw_avg_gbps"] = 311.0
    parts["fleet/allreduce"] = {"allreduce_busbw_gbytes_s": 41.2, "allreduce_reference_gbytes_s": 50.0}
    parts["fleet/alltoall"] = {"alltoall_busbw_gbytes_s": 33.0, "alltoall_theoretical_gbytes_s": 50.0}
    parts["fleet/ep"] = {"ep_dispatch_fp8_rdma_gbytes_s": 38.5, "ep_dispatch_fp8_nvl_gbytes_s": 151.0,
                         "ep_combine_rdma_gbytes_s": 36.0, "ep_combine_nvl_gbytes_s": 142.5}
    return replace(base, parts=parts)


def leaf01_balance(utils: tuple[float, ...] = (97.0, 20.0, 18.0, 21.0)) -> LeafBalance:
    """leaf01 sending most cross-rack traffic to spine01 (400 Gb/s uplinks)."""
    loads = tuple(UplinkLoad(f"swp{49 + i}", f"spine0{i + 1}", 400.0, u * 4.0, u) for i, u in enumerate(utils))
    mean = sum(u.tx_gbps for u in loads) / len(loads)
    hot = max(loads, key=lambda u: u.tx_gbps)
    flagged = max(utils) >= 90.0
    return LeafBalance(leaf="leaf01", uplinks=loads, imbalance=hot.tx_gbps / mean,
                       spread_gbps=hot.tx_gbps - min(u.tx_gbps for u in loads), hot_port=hot.port,
                       hot_spine=hot.spine, hot_util_pct=hot.util_pct, imbalanced_now=flagged, held_s=60.0,
                       flagged=flagged, samples=60, window_s=60.0, jobs=("5101", "5102"),
                       reason="max/mean 2.49 held 60 s" if flagged else "", state=SQUEEZED if flagged else OK)


def leaf01_plan() -> LeafPlan:
    """leaf01's plan as ``plan_leaf`` builds it, from a configuration given here instead of read over SSH."""
    config = HashConfig(os="cumulus", ecmp_fields=("source-ip", "destination-ip", "ip-protocol", "source-port",
                                                   "destination-port"), hash_seed=0, adaptive_routing=False)
    snapshot = ConfigSnapshot(config, (("nv show system forwarding -o json", "{}"),))
    balance = leaf01_balance()
    return LeafPlan("leaf01", balance, snapshot, plan_remedies("leaf01", config, balance.jobs))
