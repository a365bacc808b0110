"""The detect benchmark's bookkeeping: which finding a fault should open, and the times it reports.

The benchmark itself runs for minutes in real time (``python -m benchmarks detect``); this checks
its arithmetic on finding events as the diagnosis stores them.
"""

from __future__ import annotations

from benchmarks.detect import FINDING_OF, Timing, expected, results, strays, timings
from fleet.fabric.diagnosis import finding_event
from fleet.fabric.events import Finding, Severity
from fleet.fabric.finding_life import cleared_event
from fleet.simulator.scenario import FAULT_KINDS, MISCONFIG_KINDS, FaultSpec, load_scenario

START = 1_000.0


def raised(finding: Finding, ts: float) -> tuple:
    event = finding_event(finding, ts)
    return event, cleared_event(event, ts + 1)


def test_every_fault_kind_that_can_end_is_in_the_scenario_or_explained() -> None:
    scenario = load_scenario("detect")
    kinds = {f.kind for f in scenario.faults}
    assert kinds == set(FINDING_OF)
    explained = {"miswire", "ecmp_collision", "hostile_output"} | MISCONFIG_KINDS
    assert set(FAULT_KINDS) - kinds == explained  # the module doc says why
    assert all(f.until is not None for f in scenario.faults)


def test_times_run_from_the_faults_start_and_end_to_the_findings_open_and_close() -> None:
    flap = FaultSpec("link_flap", "gpu006:mlx5_1", at=20.0, until=80.0)
    hot = FaultSpec("gpu_thermal", "gpu014:gpu2", at=20.0, until=80.0)
    assert expected(flap) == ("link_flapping", "gpu006", "mlx5_1")
    opened, _ = raised(Finding("link_flapping", Severity.CRITICAL, node="gpu006", nic="mlx5_1"), START + 32.5)
    closed = cleared_event(opened, START + 110.0)
    other, _ = raised(Finding("gpu_thermal", Severity.WARNING, node="gpu014", evidence={"gpu": "gpu1"}), START + 25)
    found = timings([flap, hot], START, [closed, opened, other])
    assert found == [Timing("link_flap", "gpu006:mlx5_1", 12.5, 30.0), Timing("gpu_thermal", "gpu014:gpu2", None, None)]
    measured = results(found, [])
    assert measured.results["detect_link_flap_s"] == 12.5 and measured.results["clear_link_flap_s"] == 30.0
    assert measured.results["detect_max_s"] == 10_000.0  # a fault never found misses the target


def test_a_finding_on_a_host_no_fault_touched_is_a_stray() -> None:
    faults = [FaultSpec("link_down", "gpu005:mlx5_0")]
    mine, _ = raised(Finding("link_down", Severity.CRITICAL, node="gpu005", nic="mlx5_0", switch="leaf01"), START)
    stray, _ = raised(Finding("qp_errors", Severity.WARNING, node="gpu009", nic="mlx5_2"), START)
    job, _ = raised(Finding("job_slow", Severity.WARNING, job="7001"), START)
    assert strays(faults, [mine, stray, job]) == ["qp_errors gpu009 mlx5_2"]
