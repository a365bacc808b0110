"""The common document every benchmark prints: targets judged, missing figures never met."""

from __future__ import annotations

from benchmarks.report import Measured, at_least, at_most, document


def test_targets_are_judged_in_their_direction() -> None:
    measured = Measured({"open_round_s": 0.7, "speedup_x": 19.0, "rows": 3},
                        {"open_round_s": at_most(1.0), "speedup_x": at_least(20.0)})
    doc = document("collect", measured, 0.1, 0.9)
    assert doc["name"] == "collect"
    assert doc["machine"]["load_before"] == 0.1 and doc["machine"]["load_after"] == 0.9
    assert doc["targets"] == {"open_round_s": {"max": 1.0}, "speedup_x": {"min": 20.0}}
    assert doc["met"] == {"open_round_s": True, "speedup_x": False}


def test_a_target_without_its_figure_is_not_met() -> None:
    doc = document("x", Measured({}, {"first_frame_s": at_most(2.0)}), 0.0, 0.0)
    assert doc["met"] == {"first_frame_s": False}
