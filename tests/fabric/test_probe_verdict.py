"""A probe's verdict line: bandwidth against the link and the reference, latency against the reference,
all-reduce against the delivery standard."""

from __future__ import annotations

from fleet.fabric.probe_verdict import (
    FAIL,
    PASS,
    UNJUDGED,
    WARN,
    Reference,
    allreduce_verdict,
    bandwidth_verdict,
    latency_verdict,
)


def test_a_third_of_the_link_fails_against_both_the_link_and_the_baseline() -> None:
    verdict = bandwidth_verdict(131.0, 400.0, Reference(392.0, "baseline"))
    assert verdict.words == "131 Gb/s = 33 % of 400G, baseline 392: FAIL"
    assert verdict.verdict == FAIL and len(verdict.reasons) == 2


def test_a_healthy_bandwidth_passes_and_a_slide_from_the_previous_result_fails() -> None:
    assert bandwidth_verdict(389.0, 400.0, None).words == "389 Gb/s = 97 % of 400G: PASS"
    slid = bandwidth_verdict(370.0, 400.0, Reference(430.0, "previous 2026-12-01 03:00"))
    assert slid.verdict == FAIL and "under its previous" in slid.reasons[0]
    assert bandwidth_verdict(370.0, None, None).verdict == UNJUDGED


def test_latency_is_judged_against_its_reference_only() -> None:
    assert latency_verdict(2.7, Reference(2.65, "baseline")).verdict == PASS
    assert latency_verdict(4.2, Reference(2.65, "baseline")).verdict == WARN  # 1.6x, not an outlier
    failed = latency_verdict(52.8, Reference(2.65, "baseline"))
    assert failed.verdict == FAIL and failed.words.startswith("p99 52.80 usec = 19.92x baseline 2.65")
    assert latency_verdict(2.7, None).verdict == UNJUDGED


def test_allreduce_against_the_delivery_standard() -> None:
    one = allreduce_verdict(400.0, 0.93, 430.0, 1, None)
    assert one.verdict == FAIL and "94 %" in one.reasons[0]
    assert allreduce_verdict(170.0, 0.85, 200.0, 4, None).verdict == PASS  # across nodes: 82 %
