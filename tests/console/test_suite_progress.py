"""The progress view on stderr: short logs off a terminal, one redrawn line per step on one."""

from __future__ import annotations

import io

from fleet.collectors.baseline_run import SuiteProgress
from fleet.console.cli.suite_progress import ProgressView
from fleet.fabric.acceptance import evaluate_check, parse_criteria
from fleet.fabric.baseline import Baseline, FleetShape


def test_off_a_terminal_each_step_logs_its_start_and_end_only() -> None:
    out = io.StringIO()
    view = ProgressView(out, live=False)
    for done in range(4):
        view(SuiteProgress("bandwidth", done, 3, "ib_write_bw"))
    view(SuiteProgress("done", 1, 1, "9 parts measured"))
    assert out.getvalue().splitlines() == ["bandwidth: 0/3 ib_write_bw", "bandwidth: 3/3 ib_write_bw",
                                           "done: 1/1 9 parts measured"]


def test_on_a_terminal_a_step_is_redrawn_in_place_and_checks_get_their_own_lines() -> None:
    out = io.StringIO()
    view = ProgressView(out, live=True)
    view(SuiteProgress("linktest", 1, 2, "probes"))
    view(SuiteProgress("linktest", 2, 2, "probes"))
    check = parse_criteria('[[check]]\nid = "bw"\nkind = "bandwidth_min_gbps"\nmin = 380').checks[0]
    measured = Baseline("t", 0.0, "", FleetShape(("gpu001",), ("gpu001:mlx5_0",)),
                        parts={"nic/gpu001/mlx5_0": {"bw_avg_gbps": 200.0}})
    view.check(evaluate_check(check, measured))
    text = out.getvalue()
    assert text.count("\r") == 2 and "[############............] 1/2" in text
    assert text.endswith("\nFAIL  bw  (>= 380 Gb/s): 1 of 1 failed; gpu001 mlx5_0 200 < 380 Gb/s\n")
