"""Link test scheduling: every pair once, disjoint rounds, n-1 rounds, the three modes."""

from __future__ import annotations

from itertools import combinations

import pytest

from fleet.fabric.pairing import PairTest, circle_rounds, rounds_are_disjoint, schedule


def names(n: int) -> list[str]:
    return [f"gpu{i:03d}" for i in range(1, n + 1)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16, 128])
def test_circle_covers_every_pair_exactly_once_in_disjoint_rounds(n: int) -> None:
    rounds = circle_rounds(names(n))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(pair) for pairs in rounds for pair in pairs]
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2
    assert set(seen) == {frozenset(p) for p in combinations(names(n), 2)}
    for pairs in rounds:
        busy = [node for pair in pairs for node in pair]
        assert len(busy) == len(set(busy))  # disjoint
        assert len(busy) == n - n % 2  # everyone busy (one bye when n is odd)


def test_sides_alternate() -> None:
    rounds = circle_rounds(names(16))
    clients = [a for pairs in rounds for a, _ in pairs]
    for node in names(16):
        assert clients.count(node) in (7, 8)  # 15 probes each: client about half the time


def test_fewer_than_two_nodes_need_no_rounds() -> None:
    assert circle_rounds([]) == [] and circle_rounds(["gpu001"]) == []
    assert circle_rounds(["gpu001", "gpu001"]) == []  # duplicates count once


def test_mesh_runs_every_rail_in_every_round() -> None:
    rounds = schedule(names(8), range(8), "mesh")
    assert len(rounds) == 7
    assert all(len(r) == 4 * 8 for r in rounds)
    assert rounds_are_disjoint(rounds)
    per_rail = {rail: {frozenset((t.src, t.dst)) for r in rounds for t in r if t.rail == rail} for rail in range(8)}
    assert all(len(pairs) == 28 for pairs in per_rail.values())


def test_rail_mode_runs_one_rail_at_a_time() -> None:
    rounds = schedule(names(4), [0, 1], "rail")
    assert len(rounds) == 2 * 3
    assert [{t.rail for t in r} for r in rounds] == [{0}] * 3 + [{1}] * 3
    assert rounds_are_disjoint(rounds)


def test_sample_mode_is_a_seeded_subset_of_whole_rounds() -> None:
    full = schedule(names(16), [0], "mesh")
    sample = schedule(names(16), [0], "sample", sample_rounds=3, seed=7)
    assert len(sample) == 3 and all(r in full for r in sample)
    assert sample == schedule(names(16), [0], "sample", sample_rounds=3, seed=7)
    assert all(len(r) == 8 for r in sample)  # every node still busy every round


def test_overlap_is_detected_and_mode_is_checked() -> None:
    assert not rounds_are_disjoint([(PairTest("a", "b", 0), PairTest("b", "c", 0))])
    assert rounds_are_disjoint([(PairTest("a", "b", 0), PairTest("b", "a", 1))])
    with pytest.raises(ValueError, match="unknown link test mode"):
        schedule(names(4), [0], "ring")
