"""Theoretical all-reduce figures: NVLink inside a node, the NICs across nodes, nothing invented."""

from __future__ import annotations

from fleet.fabric.hardware import HardwareTable


def test_gpu_names_match_the_most_specific_model() -> None:
    table = HardwareTable()
    h200, h100, gb200 = table.gpu("NVIDIA H200"), table.gpu("NVIDIA H100 80GB HBM3"), table.gpu("NVIDIA GB200")
    assert h200 is not None and h200.match == "H200"
    assert h100 is not None and h100.nvlink_gbytes_s == 450.0
    assert gb200 is not None and gb200.match == "GB200"
    assert table.gpu("Tesla T4") is None


def test_one_node_is_bound_by_nvlink() -> None:
    bound = HardwareTable().allreduce_bound("NVIDIA A100-SXM4-80GB", 1)
    assert bound is not None and bound.busbw_gbytes_s == 300.0 and "NVLink" in bound.basis


def test_several_nodes_are_bound_by_their_nics_and_capped_by_nvlink() -> None:
    table = HardwareTable()
    cx7 = table.allreduce_bound("NVIDIA H100 80GB HBM3", 4, ("MT4129",) * 8)
    assert cx7 is not None and cx7.busbw_gbytes_s == 400.0
    cx8 = table.allreduce_bound("NVIDIA H100 80GB HBM3", 4, ("MT4131",) * 8)
    assert cx8 is not None and cx8.busbw_gbytes_s == 450.0 and "capped" in cx8.basis
    assert table.allreduce_bound("NVIDIA H100 80GB HBM3", 2, ()) is None
    assert table.allreduce_bound("NVIDIA H100 80GB HBM3", 2, ("MT9999",)) is None


def test_overrides_replace_a_figure() -> None:
    table = HardwareTable(overrides={"MT4129": 200.0})
    bound = table.allreduce_bound("NVIDIA H100", 2, ("MT4129",) * 8)
    assert bound is not None and bound.busbw_gbytes_s == 200.0
