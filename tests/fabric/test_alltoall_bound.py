"""The theoretical all-to-all figure and the pure steps that name what holds an all-to-all back."""

from __future__ import annotations

import pytest

from fleet.fabric.alltoall import (
    LeafUplinks,
    alltoall_bound,
    busbw_factor,
    holding_back,
    hot_leaves,
    pair_rounds,
    slow_nodes,
    slow_pairs,
)
from fleet.fabric.ecmp import LeafBalance, UplinkLoad
from fleet.fabric.hardware import HardwareTable

H100 = "NVIDIA H100 80GB HBM3"
CX7 = ("MT4129",) * 8


def test_one_node_is_bound_by_nvlink() -> None:
    bound = alltoall_bound(HardwareTable(), H100, 1, 8)
    assert bound is not None and bound.busbw_gbytes_s == 450.0 and "NVLink 450 GB/s" in bound.basis


def test_across_nodes_the_nics_and_the_nvlink_share() -> None:
    two = alltoall_bound(HardwareTable(), H100, 2, 8, CX7)
    assert two is not None and two.busbw_gbytes_s == pytest.approx(50.0 * 15 / 8)  # 93.75: 1/8 stays on NVLink
    many = alltoall_bound(HardwareTable(), H100, 512, 8, CX7)
    assert many is not None and 50.0 < many.busbw_gbytes_s < 50.2  # one NIC's rate per GPU
    half = alltoall_bound(HardwareTable(), H100, 2, 8, ("MT4129",) * 4)
    assert half is not None and half.busbw_gbytes_s == pytest.approx(25.0 * 15 / 8, abs=0.01)  # four NICs, 8 GPUs


def test_the_bisection_of_an_oversubscribed_leaf_binds() -> None:
    leaves = [LeafUplinks("leaf01", 32, 8 * 400.0), LeafUplinks("leaf09", 32, 8 * 400.0)]
    bound = alltoall_bound(HardwareTable(), H100, 64, 8, CX7, leaves)
    assert bound is not None
    per_nic = 3200.0 * 63 / (32 * 32)  # 197 Gb/s of a 400 Gb/s NIC
    assert bound.per_gpu_gbytes_s == pytest.approx(per_nic / 8)
    assert bound.busbw_gbytes_s == pytest.approx(per_nic / 8 * 511 / (8 * 63), abs=0.01)
    assert "bisection: leaf01" in bound.basis
    wide = alltoall_bound(HardwareTable(), H100, 64, 8, CX7, [LeafUplinks("leaf01", 32, 32 * 400.0)])
    assert wide is not None and "bisection" not in wide.basis  # a non-blocking leaf does not bind


def test_unknown_models_give_no_figure() -> None:
    assert alltoall_bound(HardwareTable(), "Tesla K80", 2, 8, CX7) is None
    assert alltoall_bound(HardwareTable(), H100, 2, 8, ("MT9999",)) is None
    assert alltoall_bound(HardwareTable(), H100, 2, 8, ()) is None
    assert busbw_factor(4) == 0.75 and busbw_factor(1) == 1.0


def test_a_rail_under_the_median_holds_it_back() -> None:
    assert holding_back({0: 13.7, 1: 28.9, 2: 29.0, 3: 28.8}) == [0]
    assert holding_back({0: 28.0, 1: 28.9, 2: 29.0}) == []
    assert holding_back({0: 28.0, 1: None, 2: 20.0, 3: 29.0}) == [1, 2]  # a rail that failed comes first
    assert holding_back({0: 5.0}) == []


def test_pair_rounds_are_disjoint_and_meet_other_peers() -> None:
    for count in range(2, 12):
        nodes = [f"n{i}" for i in range(count)]
        rounds = pair_rounds(nodes)
        for pairs in rounds:
            flat = [node for pair in pairs for node in pair]
            assert len(flat) == len(set(flat))  # no node twice in a round
        met = {node for pairs in rounds for pair in pairs for node in pair}
        assert met == set(nodes)
    assert pair_rounds(["a"]) == []


def test_the_node_slow_in_every_pair_is_named() -> None:
    first = {("a", "c"): 48.0, ("b", "d"): 12.0}
    second = {("a", "b"): 11.9, ("c", "d"): 47.5}
    assert slow_pairs(first) == {("b", "d")}
    assert slow_nodes([first, second]) == ["b"]
    assert slow_nodes([{("a", "b"): 10.0}]) == []  # one pair: nothing slower to compare with
    assert slow_nodes([{("a", "b"): None}]) == ["a", "b"]  # a pair that failed names both ends


def balance(leaf: str, loads: tuple[float, ...], speed: float = 400.0) -> LeafBalance:
    uplinks = tuple(UplinkLoad(f"swp{i + 9}", f"spine0{i + 1}", speed, tx, 100.0 * tx / speed)
                    for i, tx in enumerate(loads))
    mean = sum(loads) / len(loads)
    hot = max(uplinks, key=lambda u: u.tx_gbps)
    return LeafBalance(leaf, uplinks, hot.tx_gbps / mean if mean else 0.0, max(loads) - min(loads), hot.port,
                       hot.spine, hot.util_pct, True, 0.0, False, 3, 2.0)


def test_the_hot_uneven_leaf_is_named_first() -> None:
    collided = balance("leaf01", (400.0, 0.0, 0.0, 0.0))
    busy = balance("leaf09", (380.0, 200.0, 300.0, 250.0))  # busy but even
    uneven_cool = balance("leaf02", (200.0, 20.0, 20.0, 20.0))  # uneven, nothing hot
    found = hot_leaves([busy, uneven_cool, collided])
    assert [leaf for leaf, _ in found] == ["leaf01"]
    assert "max/mean 4.0" in found[0][1] and "swp9 to spine01 at 100 %" in found[0][1]
    assert hot_leaves([]) == []
