"""The common document every benchmark prints: targets judged, missing figures never met."""

from __future__ import annotations

import json
import math

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


def test_a_figure_that_is_not_a_number_is_null_and_its_target_not_met() -> None:
    """A benchmark that saw nothing (no clush, no lines) reports None, never NaN, which JSON lacks."""
    doc = document("x", Measured({"ratio_x": None, "cpu_ms_per_line": math.nan},
                                 {"ratio_x": at_least(20.0), "cpu_ms_per_line": at_most(1.0)}), 0.0, 0.0)
    assert doc["results"] == {"ratio_x": None, "cpu_ms_per_line": None}
    assert doc["met"] == {"ratio_x": False, "cpu_ms_per_line": False}
    json.dumps(doc, allow_nan=False)
