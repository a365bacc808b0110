"""Criteria files and their verdicts: thresholds, scopes, unmeasured parts, findings, evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.fabric.acceptance import (
    CriteriaError,
    evaluate,
    evaluate_check,
    loss_pct,
    parse_criteria,
)
from fleet.fabric.baseline import Baseline, CableCheck, FleetShape
from fleet.fabric.events import Finding, Severity

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"


def fleet(**parts: dict[str, float]) -> Baseline:
    nodes = ("gpu001", "gpu002", "gpu003")
    return Baseline(label="t", ts=0.0, tool_version="fleet test",
                    shape=FleetShape(nodes, tuple(f"{n}:mlx5_{r}" for n in nodes for r in (0, 1)), (), (0, 1)),
                    parts={k.replace("__", "/").replace("_x_", ":"): v for k, v in parts.items()})


def criteria(body: str) -> str:
    return f'title = "T"\n{body}'


def test_the_example_file_parses_with_every_kind() -> None:
    parsed = parse_criteria(EXAMPLE.read_text(), source=str(EXAMPLE))
    assert {c.kind for c in parsed.checks} == {
        "allreduce_efficiency_min", "alltoall_efficiency_min", "link_loss_max", "latency_p99_max_usec",
        "bandwidth_min_gbps", "cabling_matches_plan", "optics_rx_power_min_dbm", "no_findings_of_kind"}
    assert parsed.suite["linktest_mode"] == "sample"
    node = parsed.checks[0]
    assert (node.id, node.threshold, node.threshold_words()) == ("allreduce-node", 0.94,
                                                                 ">= 0.94 (94 % of the hardware's)")


@pytest.mark.parametrize(("body", "message"), [
    ('[[check]]\nkind = "latency_max"\nmax = 5', "kind 'latency_max' is not one of"),
    ('[[check]]\nkind = "bandwidth_min_gbps"', "min must be a number"),
    ('[[check]]\nkind = "bandwidth_min_gbps"\nmin = 380\nmax = 400', "unknown key(s) max"),
    ('[[check]]\nkind = "bandwidth_min_gbps"\nmin = 1\nnodes = "gpu[001-"', "is not a host list"),
    ('[[check]]\nkind = "bandwidth_min_gbps"\nmin = 1\nrails = "a-b"', "is not a list such as 0-7"),
    ('[[check]]\nkind = "no_findings_of_kind"\nkinds = []', "kinds must be a non-empty list"),
    ('[[check]]\nkind = "link_loss_max"\nmax_pct = 0.01\nfleet = true', "fleet = true applies to"),
    ('[suite]\nmode = "mesh"\n[[check]]\nkind = "cabling_matches_plan"', "[suite]: unknown key 'mode'"),
    ('[[check]]\nid = "a"\nkind = "cabling_matches_plan"\n[[check]]\nid = "a"\nkind = "cabling_matches_plan"',
     "duplicate check id(s) a"),
    ("", "no [[check]] entries"),
])  # fmt: skip
def test_mistakes_are_named(body: str, message: str) -> None:
    with pytest.raises(CriteriaError, match=None) as error:
        parse_criteria(criteria(body), source="c.toml")
    assert message in str(error.value) and str(error.value).startswith("c.toml")


def test_allreduce_per_node_fails_the_slow_node_and_the_unmeasured_one() -> None:
    check = parse_criteria(criteria('[[check]]\nkind = "allreduce_efficiency_min"\nmin = 0.94')).checks[0]
    result = evaluate_check(check, fleet(node__gpu001={"allreduce_efficiency": 0.95},
                                         node__gpu002={"allreduce_efficiency": 0.81}))
    assert not result.passed and result.parts_checked == 3
    assert [(f.part, f.measured, f.note) for f in result.failures] == [
        ("node/gpu002", 0.81, "0.81 < 0.94"), ("node/gpu003", None, "not measured")]
    assert result.worst is not None and result.worst.part == "node/gpu002"
    assert result.measured["min"] == 0.81 and result.measured["count"] == 2.0


def test_all_to_all_per_node_and_across_every_node() -> None:
    nodes = ("gpu001", "gpu002")
    parts = {"node/gpu001": {"alltoall_efficiency": 0.82}, "node/gpu002": {"alltoall_efficiency": 0.69},
             "fleet/alltoall": {"alltoall_efficiency": 0.31, "alltoall_busbw_gbytes_s": 19.2}}
    measured = Baseline("b", 0.0, "t", FleetShape(nodes, (), (), (0,)), parts=parts)
    text = criteria('[[check]]\nid = "n"\nkind = "alltoall_efficiency_min"\nmin = 0.7\n'
                    '[[check]]\nid = "f"\nkind = "alltoall_efficiency_min"\nmin = 0.7\nfleet = true\n')
    per_node, fleet = evaluate(parse_criteria(text, source="c.toml"), measured)
    assert not per_node.passed and [f.part for f in per_node.failures] == ["node/gpu002"]
    assert per_node.check.threshold_words() == ">= 0.7 (70 % of the theoretical)"
    assert "alltoall_perf on each node's 8 GPUs (NVLink)" in per_node.claim
    assert not fleet.passed and fleet.parts_checked == 1 and fleet.worst is not None
    assert (fleet.worst.part, fleet.worst.measured) == ("fleet/alltoall", 0.31)
    assert fleet.claim.startswith("One alltoall_perf across the 2 reachable nodes (ran)")


def test_scope_limits_nodes_and_rails() -> None:
    check = parse_criteria(criteria('[[check]]\nkind = "bandwidth_min_gbps"\nmin = 380\nnodes = "gpu[001-002]"\n'
                                    'rails = "0"')).checks[0]
    measured = fleet(**{"nic__gpu001__mlx5_0": {"bw_avg_gbps": 394.0}, "nic__gpu002__mlx5_0": {"bw_avg_gbps": 390.0},
                        "nic__gpu002__mlx5_1": {"bw_avg_gbps": 100.0}, "nic__gpu003__mlx5_0": {"bw_avg_gbps": 50.0}})
    result = evaluate_check(check, measured)
    assert result.passed and result.parts_checked == 2, result.summary
    assert result.summary == "all 2 pass; worst gpu002 mlx5_0 390 Gb/s"
    assert check.scope.words() == "nodes gpu[001-002], rails 0"


def test_link_loss_is_a_share_of_the_packets_and_never_above_100_percent() -> None:
    measured = fleet(**{"nic__gpu001__mlx5_0": {"errors": 9.0, "lost": 3.0, "packets": 9_997.0},
                        "nic__gpu001__mlx5_1": {"errors": 0.0, "lost": 0.0, "packets": 0.0},
                        "nic__gpu002__mlx5_0": {"errors": 38_000.0, "lost": 12.0, "packets": 0.0},
                        "nic__gpu002__mlx5_1": {"errors": 3_793.0, "packets": 1_000.0}})  # stored before ``lost``
    assert loss_pct(measured, "nic/gpu001/mlx5_0") == pytest.approx(0.03)  # lost / (moved + lost)
    assert loss_pct(measured, "nic/gpu001/mlx5_1") == 0.0
    assert loss_pct(measured, "nic/gpu002/mlx5_0") == 100.0  # everything it sent was lost: 100 %, not inf
    assert loss_pct(measured, "nic/gpu002/mlx5_1") == pytest.approx(79.1, abs=0.1)  # not 379.3 %
    check = parse_criteria(criteria('[[check]]\nkind = "link_loss_max"\nmax_pct = 0.01\nnodes = "gpu001"')).checks[0]
    result = evaluate_check(check, measured)
    assert [(f.part, f.note) for f in result.failures] == [("nic/gpu001/mlx5_0", "0.03 > 0.01 %")]


def test_the_claims_say_what_was_measured_never_more() -> None:
    nodes = [f"gpu{i:03d}" for i in range(1, 5)]
    parts = {f"pair__0__{a}__{b}": {"p99_usec": 2.0} for a, b in (("gpu001", "gpu002"), ("gpu003", "gpu004"))}
    parts |= {f"nic__{n}__mlx5_0": {"bw_avg_gbps": 390.0} for n in nodes[:3]}
    measured = Baseline(label="t", ts=0.0, tool_version="fleet test",
                        shape=FleetShape(tuple(nodes), tuple(f"{n}:mlx5_0" for n in nodes), (), (0,)),
                        parts={k.replace("__", "/"): v for k, v in parts.items()})
    text = criteria('[suite]\nlinktest_mode = "sample"\nsample_rounds = 1\n'
                    '[[check]]\nkind = "latency_p99_max_usec"\nmax = 5\ndescription = "every pair on every rail"\n'
                    '[[check]]\nkind = "bandwidth_min_gbps"\nmin = 380\n')
    latency, bandwidth = evaluate(parse_criteria(text), measured)
    assert latency.claim == ("Link-test p99 latency <= 5 usec (2-byte RDMA writes) on 2 node pairs x rail it measured "
                             "on rail 0, of 6 in scope (33.3 %): 1 round of random disjoint pairs (sample mode), "
                             "each node meeting 1 peer per rail")
    assert latency.to_json()["claim"] == latency.claim and latency.to_json()["description"] == "every pair on every rail"
    assert bandwidth.claim.endswith("3 of 4 NICs in scope measured (75 %) on rail 0")


def test_cabling_and_findings() -> None:
    checks = parse_criteria(criteria(
        '[[check]]\nkind = "cabling_matches_plan"\n'
        '[[check]]\nkind = "no_findings_of_kind"\nkinds = ["linktest_cable"]\nnodes = "gpu002"\n'))
    measured = Baseline(label="t", ts=0.0, tool_version="", shape=FleetShape(("gpu001", "gpu002")),
                        cabling={"gpu001:mlx5_0": CableCheck("leaf01 swp1", "leaf01 swp1"),
                                 "gpu002:mlx5_0": CableCheck("leaf01 swp3", "leaf01 swp2")})
    findings = [Finding("linktest_cable", Severity.CRITICAL, node="gpu001", nic="mlx5_0", evidence={"bad": 3}),
                Finding("linktest_cable", Severity.CRITICAL, node="gpu002", nic="mlx5_1", evidence={"bad": 4})]
    cabling, found = evaluate(checks, measured, findings)
    assert not cabling.passed and cabling.failures[0].note == "LLDP sees leaf01 swp3, the plan says leaf01 swp2"
    assert not found.passed and [f.part for f in found.failures] == ["nic/gpu002/mlx5_1"]  # gpu001: out of scope
    assert "bad=4" in found.failures[0].note


def test_an_empty_measurement_never_passes() -> None:
    check = parse_criteria(criteria('[[check]]\nkind = "latency_p99_max_usec"\nmax = 5')).checks[0]
    result = evaluate_check(check, fleet())
    assert not result.passed and result.summary == "nothing in scope was measured"
