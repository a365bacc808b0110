"""NVLink beside the network, from a baseline and from the newest probes: each figure against its theoretical value."""

from __future__ import annotations

import pytest

from fleet.console.report_interconnect import ep_rows, figure_cell, interconnect_rows
from fleet.fabric.baseline import Baseline, FleetShape
from fleet.fabric.interconnect import Figure, from_baseline, from_probes
from fleet.fabric.records import ProbeRecord

NODES = ("gpu001", "gpu002")


def baseline() -> Baseline:
    parts = {
        "node/gpu001": {"allreduce_busbw_gbytes_s": 460.0, "allreduce_efficiency": 0.958,
                        "allreduce_reference_gbytes_s": 480.0, "alltoall_busbw_gbytes_s": 360.0,
                        "alltoall_efficiency": 0.8, "alltoall_theoretical_gbytes_s": 450.0, "nvlink_errors": 0.0},
        "node/gpu002": {"allreduce_busbw_gbytes_s": 390.0, "allreduce_efficiency": 0.8125, "nvlink_errors": 120.0},
        "nic/gpu001/mlx5_0": {"bw_avg_gbps": 392.0, "rate_gbps": 400.0},
        "nic/gpu001/mlx5_1": {"bw_avg_gbps": 380.0, "rate_gbps": 400.0},
        "nic/gpu002/mlx5_0": {"bw_avg_gbps": 96.0, "rate_gbps": 100.0},
        "nic/gpu002/mlx5_1": {"bw_avg_gbps": 391.0, "rate_gbps": 400.0},
        "fleet/allreduce": {"allreduce_busbw_gbytes_s": 90.0, "allreduce_efficiency": 0.93},
        "fleet/alltoall": {"alltoall_busbw_gbytes_s": 70.0, "alltoall_efficiency": 0.7467,
                           "alltoall_theoretical_gbytes_s": 93.75},
        "fleet/ep": {"ep_dispatch_fp8_rdma_gbytes_s": 46.8, "ep_dispatch_fp8_nvl_gbytes_s": 153.1},
    }
    return Baseline("2026-11", 0.0, "fleet", FleetShape(NODES, (), (), (0, 1)), parts=parts)


def test_from_a_baseline_per_node_and_across_nodes() -> None:
    view = from_baseline(baseline())
    first, second = view.nodes
    assert first.nvlink_allreduce == Figure(460.0, 480.0) and first.nvlink_allreduce.ratio == pytest.approx(460 / 480)
    assert first.nvlink_alltoall.ratio == pytest.approx(0.8) and first.nvlink_errors == 0.0
    assert first.rdma_nic == Figure(380.0, 400.0, "Gb/s", "gpu001 mlx5_1")  # its slowest NIC by ratio
    assert second.nvlink_allreduce.theoretical == pytest.approx(480.0)  # busbw / efficiency when not stated
    assert second.nvlink_alltoall.measured is None and second.nvlink_errors == 120.0
    assert second.rdma_nic == Figure(96.0, 400.0, "Gb/s", "gpu002 mlx5_0")  # trained at 100G on a 400G fleet
    fleet = view.fleet
    assert fleet.rdma_alltoall == Figure(70.0, 93.75, "GB/s", "2 nodes")
    assert fleet.rdma_nic_median == Figure(385.5, 400.0, "Gb/s", "4 NICs")
    assert fleet.ep == {"dispatch_fp8": (46.8, 153.1)} and view.source == "baseline 2026-11"


def test_the_report_rows() -> None:
    data = from_baseline(baseline()).to_json()
    rows = interconnect_rows(data)
    assert rows[0] == ["gpu001", "460.0 / 480.0 GB/s = 96 %", "360.0 / 450.0 GB/s = 80 %", "0", "-", "-",
                       "380.0 / 400.0 Gb/s = 95 % (gpu001 mlx5_1)"]
    assert rows[-1][0] == "across nodes" and rows[-1][5] == "70.0 / 93.8 GB/s = 75 % (2 nodes)"
    assert rows[-1][6] == "median 385.5 / 400.0 Gb/s = 96 % (4 NICs); slowest 96.0 / 400.0 Gb/s = 24 % (gpu002 mlx5_0)"
    assert ep_rows(data) == [["dispatch_fp8", "46.8", "153.1"]]
    assert figure_cell(None) == "-" and figure_cell({"measured": 5.0, "theoretical": None}) == "5.0 GB/s"


def record(kind: str, nodes: tuple[str, ...], ok: bool = True, **result: float) -> ProbeRecord:
    return ProbeRecord(ts=1.0, kind=kind, src=nodes[0], ok=ok, params={"nodes": list(nodes)}, result=dict(result))


def test_from_the_newest_probes() -> None:
    records = [  # newest first, as the store lists them
        record("alltoall", NODES, peak_busbw_gbytes_s=40.0, theoretical_busbw_gbytes_s=93.75),
        record("alltoall", ("gpu001",), peak_busbw_gbytes_s=355.0, theoretical_busbw_gbytes_s=450.0),
        record("alltoall", NODES, peak_busbw_gbytes_s=80.0, theoretical_busbw_gbytes_s=93.75),  # older: ignored
        record("allreduce", ("gpu002",), ok=False),
        ProbeRecord(ts=1.0, kind="bw", src="gpu001", dst="gpu002", src_nic="mlx5_0", result={"bw_avg_gbps": 360.0}),
        record("ep", NODES, dispatch_bf16_rdma_gbytes_s=60.0, dispatch_bf16_nvl_gbytes_s=196.0),
    ]
    view = from_probes(NODES, records, {"gpu002": 3.0}, {("gpu001", "mlx5_0"): 400.0, ("gpu002", "mlx5_0"): 400.0})
    first, second = view.nodes
    assert first.nvlink_alltoall == Figure(355.0, 450.0) and second.nvlink_allreduce.measured is None
    assert second.nvlink_errors == 3.0 and first.rdma_nic == Figure(360.0, 400.0, "Gb/s", "gpu001 mlx5_0")
    assert view.fleet.rdma_alltoall == Figure(40.0, 93.75, "GB/s", "2 nodes")
    assert view.fleet.ep["dispatch_bf16"] == (60.0, 196.0) and view.fleet.ep["combine"] == (None, None)
