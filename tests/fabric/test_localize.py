"""Localization on synthetic link-test matrices: one broken part each, named once."""

from __future__ import annotations

import zlib
from itertools import combinations

import pytest

from fleet.fabric.localize import (
    Probe,
    Suspect,
    cell_reference,
    is_outlier,
    localize,
    path_class,
    references,
)

NODES = [f"gpu{i:03d}" for i in range(1, 9)]
LEAF_OF = {(n, 0): ("leaf01" if i < 4 else "leaf09") for i, n in enumerate(NODES)}
SPINES = ("spine01", "spine02")


def spine_of(src: str, dst: str, flow: int) -> str | None:
    if LEAF_OF[(src, 0)] == LEAF_OF[(dst, 0)]:
        return None
    return SPINES[zlib.crc32(f"{src}|{dst}|{flow}".encode()) % 2]


def matrix(broken: str, *, spines_known: bool = True, flows: int = 2) -> list[Probe]:
    """Every pair on rail 0, ``flows`` flows each; a probe is bad when it crosses ``broken``."""
    probes = []
    for src, dst in combinations(NODES, 2):
        for flow in range(flows):
            spine = spine_of(src, dst, flow)
            parts = {f"{src}:mlx5_0", f"{dst}:mlx5_0", LEAF_OF[(src, 0)], LEAF_OF[(dst, 0)], spine}
            probes.append(Probe(src, dst, 0, broken in parts, (spine,) if spines_known and spine else ()))
    return probes


def test_a_clean_matrix_has_no_suspect() -> None:
    assert localize(matrix("nothing"), LEAF_OF) == []


def test_a_bad_nic_is_named_alone() -> None:
    [suspect] = localize(matrix("gpu003:mlx5_0"), LEAF_OF)
    assert suspect == Suspect("nic", "gpu003:mlx5_0", node="gpu003", nic="mlx5_0", bad=14, total=14, explains=14,
                              reason="all 14 probes of gpu003:mlx5_0 bad")


def test_a_flagged_cable_turns_the_nic_into_a_cable() -> None:
    [suspect] = localize(matrix("gpu003:mlx5_0"), LEAF_OF, cable_flagged=[("gpu003", 0)])
    assert suspect.kind == "cable" and suspect.node == "gpu003" and suspect.nic == "mlx5_0"


def test_a_dead_leaf_is_named_once_not_as_its_nics() -> None:
    [suspect] = localize(matrix("leaf09"), LEAF_OF)
    assert (suspect.kind, suspect.part, suspect.switch) == ("leaf", "leaf09", "leaf09")
    assert suspect.bad == suspect.total == 2 * (28 - 6)  # every pair but those inside leaf01


def test_a_spine_is_named_when_the_flows_spines_are_known() -> None:
    probes = matrix("spine02")
    [suspect] = localize(probes, LEAF_OF)
    assert (suspect.kind, suspect.part) == ("spine", "spine02")
    assert suspect.bad == sum(p.spines == ("spine02",) for p in probes)
    assert any(not p.bad and p.spines == ("spine01",) for p in probes)


def test_unknown_spines_point_at_the_spine_layer() -> None:
    [suspect] = localize(matrix("spine02", spines_known=False), LEAF_OF)
    assert (suspect.kind, suspect.part) == ("spine", "spines")
    assert 0 < suspect.bad < suspect.total == 2 * 16
    assert "none of the 24 within a leaf" in suspect.reason


def test_two_broken_nics_on_two_leaves_are_both_named() -> None:
    probes = [Probe(p.src, p.dst, 0, p.bad or ("gpu006" in (p.src, p.dst)), p.spines) for p in matrix("gpu002:mlx5_0")]
    suspects = localize(probes, LEAF_OF)
    assert sorted(s.part for s in suspects) == ["gpu002:mlx5_0", "gpu006:mlx5_0"]
    assert sum(s.explains for s in suspects) == sum(p.bad for p in probes)


def test_a_single_bad_probe_names_nothing_specific() -> None:
    probes = [Probe("gpu001", "gpu002", 0, True), Probe("gpu001", "gpu003", 0, False),
              Probe("gpu002", "gpu003", 0, False)]
    assert localize(probes, LEAF_OF) == []  # one bad probe within a leaf: not enough to blame a part


def test_outliers_against_the_reference_of_their_rail_and_path_class() -> None:
    refs = references([(0, "leaf", 1.6), (0, "leaf", 1.62), (0, "spine", 2.7), (0, "spine", 2.72), (0, "spine", 60.0),
                       (0, "spine", None), (1, "leaf", 5.0)])
    assert refs == {(0, "leaf"): pytest.approx(1.602), (0, "spine"): pytest.approx(2.704), (1, "leaf"): 5.0}
    assert is_outlier(None, 2.1)
    assert is_outlier(60.0, 2.7)
    assert not is_outlier(4.5, 2.1)  # over twice the reference but within the floor: noise
    assert not is_outlier(2.5, 2.1)
    assert path_class("leaf01", "leaf01") == "leaf" and path_class("leaf01", "leaf09") == "spine"
    assert path_class("", "leaf09") == ""


def test_a_matrix_cell_is_judged_against_its_path_class() -> None:
    matrix = {"leaves": ["leaf01", "leaf01", "leaf09"], "reference_p99_usec": {"leaf": 1.6, "spine": 2.7}}
    assert cell_reference(matrix, 0, 1) == 1.6 and cell_reference(matrix, 0, 2) == 2.7
    assert cell_reference({"reference_p99_usec": 2.0}, 0, 1) == 2.0  # a link test stored before the classes


def test_a_spine_known_one_way_only_explains_the_probes_whose_other_way_is_unknown() -> None:
    """Leaf group 2 cannot be asked: each probe between the groups has its group-1 direction's spine only.
    spine02 loses packets both ways: the probes whose known way is spine02 name it, and the bad ones whose
    unknown way must have crossed it are explained by it too, not blamed on their NICs."""
    probes = []
    for src, dst in combinations(NODES, 2):
        for flow in range(2):
            known = spine_of(src, dst, flow)
            if known is None:
                probes.append(Probe(src, dst, 0, False))
                continue
            other = spine_of(dst, src, flow + 7)  # the other way, hashed by the other leaf
            probes.append(Probe(src, dst, 0, "spine02" in (known, other), (known,), path_unknown=True))
    [suspect] = localize(probes, LEAF_OF)
    assert (suspect.kind, suspect.part) == ("spine", "spine02")
    assert suspect.explains == sum(p.bad for p in probes)
    assert "consistent with it" in suspect.reason
