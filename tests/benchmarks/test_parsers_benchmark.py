"""benchmarks/parsers.py: every kind gets a figure and a 2 s target; inputs have the sizes asked for."""

from __future__ import annotations

from benchmarks.parsers import TARGET_S, run, shapes


def test_each_kind_asked_for_gets_its_figure_and_target() -> None:
    measured = run(["--megabytes", "0.02", "--kinds", "lldp,sonic-pfc,switch-table"])
    for kind in ("lldp", "sonic-pfc", "switch-table"):
        assert measured.results[f"{kind}_s"] >= 0 and measured.results[f"{kind}_wall_s"] >= 0
        assert measured.results[f"{kind}_worst"] in {"repeated", "one_line", "blank_run", "digit_run", "nesting", "binary"}
        assert measured.targets[f"{kind}_s"].max == TARGET_S
    assert "nccl_s" not in measured.results


def test_every_shape_is_about_the_size_asked_for() -> None:
    for name, text in shapes("a: 1\nb: 2\n", 50_000).items():
        assert 40_000 <= len(text) <= 60_000, name


def test_every_kind_has_an_input_even_without_a_detectable_capture() -> None:
    measured = run(["--megabytes", "0.002"])  # every kind: a capture told by detection, or its layout
    assert "roce-sysfs_s" in measured.results and "sonic-config-table_s" in measured.results
