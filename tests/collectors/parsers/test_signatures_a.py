"""signatures_a: every capture of these kinds scores highest as its own kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_a import OWN_SAMPLES

from fleet.collectors.parsers.signatures_a import SIGNATURES_A

FIXTURES = Path(__file__).parents[2] / "fixtures"


def test_kinds_are_the_issue_names() -> None:
    assert set(SIGNATURES_A) == {
        "ibstat", "ibstatus", "ibv_devinfo", "sysfs", "ethtool-stats", "ethtool-module", "rdma-qp",
        "rdma-statistic", "show-gids", "perfquery", "ibqueryerrors", "ibnetdiscover", "iblinkinfo", "lldp",
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(OWN_SAMPLES))
def test_each_capture_is_recognised_as_its_kind(name: str) -> None:
    text = (FIXTURES / name).read_text()
    scores = {kind: score(text) for kind, score in SIGNATURES_A.items()}
    best = max(scores, key=lambda k: scores[k])
    assert best == OWN_SAMPLES[name]
    assert scores[best] >= 0.8
    assert sorted(scores.values())[-2] <= 0.5  # no close second


def test_other_tools_captures_score_low() -> None:
    for path in sorted(FIXTURES.glob("*/*")):
        name = str(path.relative_to(FIXTURES))
        if name in OWN_SAMPLES or path.name == "SOURCES.md":
            continue
        text = path.read_text(errors="replace")
        assert max(score(text) for score in SIGNATURES_A.values()) < 0.5, name


@pytest.mark.parametrize("text", ["", "\x00\xff garbage", "x" * 100_000])
def test_scores_are_in_range_on_anything(text: str) -> None:
    for score in SIGNATURES_A.values():
        assert 0.0 <= score(text) <= 1.0
