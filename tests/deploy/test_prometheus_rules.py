"""The shipped Prometheus configuration: valid for promtool, and every alert proven to fire and clear."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.prometheus import binary

from fleet.collectors.openmetrics import EXPORTED
from fleet.collectors.openmetrics_records import RECORD_FAMILIES
from fleet.fabric.diagnosis import FINDING_KINDS
from fleet.fabric.xid import XIDS, is_critical

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
ASKED_FOR = {"pfc_storm", "link_down", "link_flapping", "optics_low_rx_power", "optics_high_rx_power",
             "optics_tx_power", "optics_tx_bias", "optics_temperature", "ecn_not_working", "ecmp_imbalance",
             "gpu_xid", "gpu_thermal", "node_unreachable", "job_slow"}
"""The finding kinds the operators page on: PFC storm, link down and flapping, optics, ECN not working,
ECMP collision, XID, GPU thermal, node unreachable, job slow."""


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary("promtool"), *args], cwd=DEPLOY, capture_output=True, text=True, timeout=120)


def _alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load((DEPLOY / "alerts.rules.yml").read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_the_scrape_config_and_its_rules_pass_promtool_check() -> None:
    done = _promtool("check", "config", "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 2 rule files found" in done.stdout
    for rules in ("recording.rules.yml", "alerts.rules.yml"):
        done = _promtool("check", "rules", rules)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("tests", ["recording.test.yml", "alerts.test.yml"])
def test_the_rules_pass_their_unit_tests(tests: str) -> None:
    done = _promtool("test", "rules", f"tests/{tests}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_fires_and_then_clears_in_the_unit_tests() -> None:
    document = yaml.safe_load((DEPLOY / "tests" / "alerts.test.yml").read_text())
    fired: set[tuple[str, str]] = set()
    cleared: set[str] = set()
    for case in document["tests"]:
        checks = sorted(case["alert_rule_test"], key=lambda check: _seconds(check["eval_time"]))
        for before, after in itertools.pairwise(checks):
            if before["exp_alerts"] and not after["exp_alerts"] and before["alertname"] == after["alertname"]:
                fired |= {(before["alertname"], alert["exp_labels"]["severity"]) for alert in before["exp_alerts"]}
                cleared.add(after["alertname"])
    rules = {(rule["alert"], rule["labels"]["severity"]) for rule in _alert_rules()}
    assert rules - fired == set(), "alerts never shown to fire and then clear"
    assert {name for name, _ in rules} - cleared == set()


def test_the_alerts_cover_the_kinds_operators_page_on_and_only_real_kinds() -> None:
    kinds = {rule["labels"]["kind"] for rule in _alert_rules()}
    assert kinds >= ASKED_FOR
    assert kinds - set(FINDING_KINDS) == {"collector_down"}  # a shard not answering is no finding of its own
    for rule in _alert_rules():
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert set(rule["annotations"]) == {"summary", "evidence", "next_step"}


def test_the_critical_xids_are_the_catalogues() -> None:
    critical = next(rule for rule in _alert_rules() if rule["alert"] == "FleetGpuXid"
                    and rule["labels"]["severity"] == "critical")
    codes = {int(code) for code in re.findall(r"fleet_gpu_xid_last == (\d+)", critical["expr"])}
    assert codes == {code for code in XIDS if is_critical(code)}


def test_the_rules_name_only_exported_series() -> None:
    """A renamed family would leave a rule silently matching nothing."""
    exported = {entry.sample_name for entry in EXPORTED.values()} | {r.sample_name for r in RECORD_FAMILIES} | {"up"}
    texts = [*(rule["expr"] for rule in _alert_rules()),
             *(rule["expr"] for group in yaml.safe_load((DEPLOY / "recording.rules.yml").read_text())["groups"]
               for rule in group["rules"])]
    named = {name for text in texts for name in re.findall(r"\b(fleet_[a-z0-9_]+|up)\b", text)}
    assert named - exported == set()


def _seconds(text: str) -> float:
    units = {"h": 3600.0, "m": 60.0, "s": 1.0}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([hms])", text))
