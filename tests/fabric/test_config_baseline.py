"""The configuration in baselines, acceptance and reports: a baseline keeps what `fleet check` read and its
verdicts, `baseline diff` shows the drift, an acceptance criterion can require checks, and the reports carry
a configuration section."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_config_checks import fleet, nic, node

from fleet.console.report_html import render_html
from fleet.console.report_markdown import render_markdown
from fleet.fabric.acceptance import CriteriaError, evaluate, parse_criteria
from fleet.fabric.baseline import Baseline, FleetShape, Rank, diff
from fleet.fabric.config_checks import checks_json, run_checks
from fleet.fabric.report_model import acceptance_report, diff_report
from fleet.fabric.roce_config import FleetConfig, configuration_summary
from fleet.fabric.roce_profile import DEFAULT_PROFILE


def measured(config: FleetConfig | None, label: str = "b") -> Baseline:
    base = Baseline(label=label, ts=1000.0, tool_version="fleet test", shape=FleetShape(("gpu001", "gpu002")))
    if config is None:
        return base
    return replace(base, configuration=configuration_summary(config),
                   config_checks=checks_json(run_checks(config, DEFAULT_PROFILE)))


HEALTHY = fleet()
DRIFTED = fleet([node("gpu001", nics=(nic("gpu001", 0, pfc=()), nic("gpu001", 1))), node("gpu002")])


def test_a_baseline_keeps_the_configuration_through_json() -> None:
    baseline = measured(DRIFTED)
    again = Baseline.from_json(baseline.to_json())
    assert again.configuration == baseline.configuration
    assert again.config_checks["nic_pfc"]["fail"] == 1
    assert again.config_checks["nic_pfc"]["failed"] == [
        {"part": "gpu001:mlx5_0", "verdict": "fail", "expected": "on priority 3 only", "found": "on priorities none"}]
    assert Baseline.from_json(measured(None).to_json()).config_checks == {}  # older baselines read as before


def test_diff_shows_the_drift_a_new_failure_first() -> None:
    result = diff(measured(HEALTHY, "jan"), measured(DRIFTED, "feb"))
    subjects = [(c.subject, c.before, c.after, c.rank) for c in result.configuration]
    assert ("check nic_pfc", "passes", "gpu001:mlx5_0", Rank.CRITICAL) in subjects
    assert ("check link_pfc", "passes", "gpu001:mlx5_0", Rank.CRITICAL) in subjects
    assert ("gpu001:mlx5_0 pfc", "3", "", Rank.WARNING) in subjects
    assert result.to_json()["configuration"][0]["severity"] == "critical"
    back = diff(measured(DRIFTED, "feb"), measured(HEALTHY, "mar"))
    assert ("check nic_pfc", "gpu001:mlx5_0", "passes", Rank.INFO) in [
        (c.subject, c.before, c.after, c.rank) for c in back.configuration]
    assert diff(measured(HEALTHY), measured(HEALTHY)).configuration == ()
    assert diff(measured(None), measured(DRIFTED)).configuration == ()  # nothing to compare with


CRITERIA = """
title = "t"
[[check]]
id = "roce"
kind = "config_checks_pass"
checks = ["nic_pfc", "switch_ecn"]
description = "PFC on the RoCE priority and ECN on the switches"
[[check]]
id = "all-config"
kind = "config_checks_pass"
nodes = "gpu002"
"""


def test_acceptance_requires_the_checks_it_names_in_its_scope() -> None:
    criteria = parse_criteria(CRITERIA)
    healthy = evaluate(criteria, measured(HEALTHY))
    assert [r.passed for r in healthy] == [True, True]
    assert healthy[0].summary.startswith("all ") and "nic_pfc, switch_ecn" in healthy[0].claim
    drifted = evaluate(criteria, measured(DRIFTED))
    assert not drifted[0].passed
    assert [f.part for f in drifted[0].failures] == ["config/nic_pfc/gpu001/mlx5_0"]
    assert "expected on priority 3 only, found on priorities none" in drifted[0].failures[0].note
    assert drifted[1].passed  # gpu001 is out of its scope
    unread = evaluate(criteria, measured(None))
    assert not unread[0].passed and unread[0].summary == "the suite did not read the configuration"


@pytest.mark.parametrize(("extra", "words"), [
    ('checks = ["nic_pcf"]', "'nic_pcf' is not a fleet check id"),
    ('checks = "nic_pfc"', "checks must be a list"),
])
def test_a_criterion_with_a_bad_check_is_named(extra: str, words: str) -> None:
    text = f'[[check]]\nid = "x"\nkind = "config_checks_pass"\n{extra}\n'
    with pytest.raises(CriteriaError, match=words):
        parse_criteria(text, "c.toml")
    with pytest.raises(CriteriaError, match="checks applies to config_checks_pass only"):
        parse_criteria('[[check]]\nid = "x"\nkind = "cabling_matches_plan"\nchecks = ["nic_pfc"]\n', "c.toml")


def test_reports_carry_a_configuration_section() -> None:
    criteria = parse_criteria(CRITERIA)
    baseline = measured(DRIFTED)
    report = acceptance_report(criteria, baseline, evaluate(criteria, baseline), (), 2000.0)
    section = report.data["configuration"]
    assert section["read"] and {"check": "nic_pfc", "fail": 1, "odd": ["gpu001:mlx5_0"]}.items() <= next(
        c for c in section["checks"] if c["check"] == "nic_pfc").items()
    html, markdown = render_html(report), render_markdown(report)
    assert "Configuration (fleet check)" in html and "gpu001:mlx5_0" in html
    assert "## Configuration (fleet check)" in markdown and "| NIC PFC | 127 |" not in markdown
    drift = diff_report(diff(measured(HEALTHY, "jan"), baseline), 2000.0)
    assert "Configuration drift (fleet check)" in render_html(drift)
    assert "check nic_pfc" in render_markdown(drift)
    empty = acceptance_report(criteria, measured(None), evaluate(criteria, measured(None)), (), 2000.0)
    assert "did not read the configuration" in render_markdown(empty)
