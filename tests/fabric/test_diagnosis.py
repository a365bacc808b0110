"""Each diagnosis rule fires on its pattern, names the right part, and stays quiet on a healthy fleet.

The fabric is ``helpers.diagnosis_fleet.Fleet``: four nodes, two rails, two
leaves, two spines, a 60 s window; each test breaks one thing.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers.diagnosis_fleet import (
    LEAVES,
    NICS,
    NODES,
    PLAN,
    T0,
    T1,
    Fleet,
    module_limits,
    parts,
    ports_of,
)

from fleet.fabric.diagnosis import Thresholds, diagnose, finding_event, finding_json
from fleet.fabric.events import Event, Severity
from fleet.fabric.records import HostStatus, ProbeRecord
from fleet.fabric.rules.thresholds import with_overrides
from fleet.fabric.states import HostState


@pytest.fixture
def fleet() -> Fleet:
    return Fleet()


def test_a_healthy_fleet_has_no_findings(fleet: Fleet) -> None:
    assert diagnose(fleet.input()) == []


def test_link_down_names_the_nic_and_its_switch_port(fleet: Fleet) -> None:
    fleet.gauge("gpu002", "port_state", "mlx5_1", "1", 1.0)
    fleet.gauge("gpu002", "phys_state", "mlx5_1", "1", 2.0)
    fleet.counter("gpu002", "link_downed", "mlx5_1", "1", 0.0, 1.0)
    for lane in range(4):
        fleet.gauge("gpu002", "optics_rx_power_dbm", "mlx5_1", f"L{lane}", -40.0)  # dark: not an optics finding
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic, finding.switch, finding.port) == (
        "link_down", "gpu002", "mlx5_1", "leaf02", "swp2")
    assert finding.severity is Severity.CRITICAL and finding.job == "77"
    assert finding.evidence["port_state_code"] == 1.0


def test_a_link_that_went_down_in_the_window_and_is_up_again_is_flapping(fleet: Fleet) -> None:
    fleet.counter("gpu003", "link_downed", "mlx5_0", "1", 3.0, 3.0)  # downs long ago (leaf reboots): not now
    fleet.counter("gpu004", "link_down_events_phy", "mlx5_1", "1", 0.0, 1.0)
    assert parts(fleet) == [("link_flapping", "gpu004", "mlx5_1", "leaf02", "swp4")]


def test_a_switch_port_down_names_the_planned_nic_when_the_node_said_nothing(fleet: Fleet) -> None:
    fleet.drop("gpu003", "mlx5_0")
    fleet.gauge("leaf01", "sw_oper_up", "swp3", "", 0.0)
    fleet.gauge("leaf01", "sw_oper_up", "swp8", "", 0.0)  # nothing planned or ever seen there: unused
    assert parts(fleet) == [("link_down", "gpu003", "mlx5_0", "leaf01", "swp3")]


def test_an_uplink_down_is_named_by_its_last_neighbour(fleet: Fleet) -> None:
    fleet.gauge("leaf02", "sw_oper_up", "swp10", "", 0.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.switch, finding.port, finding.evidence["peer_host"]) == (
        "link_down", "leaf02", "swp10", "spine02")


def test_a_planned_cable_seen_by_nobody_is_down(fleet: Fleet) -> None:
    fleet.drop("gpu004", "mlx5_0")
    fleet.ports = [p for p in fleet.ports if (p.host, p.device) not in (("gpu004", "mlx5_0"), ("leaf01", "swp4"))]
    del fleet.latest[("leaf01", "sw_oper_up", "swp4", "")]
    assert parts(fleet) == [("link_down", "gpu004", "mlx5_0", "leaf01", "swp4")]


def test_degraded_rate_against_the_fleets_design_rate_or_a_configured_one(fleet: Fleet) -> None:
    fleet.gauge("gpu001", "rate_gbps", "mlx5_1", "1", 200.0)
    assert parts(fleet) == [("degraded_rate", "gpu001", "mlx5_1", "leaf02", "swp1")]
    assert parts(Fleet(), Thresholds(expected_rate_gbps=800.0))[0][0] == "degraded_rate"


def test_low_rx_power_takes_the_ber_it_causes_as_evidence(fleet: Fleet) -> None:
    module_limits(fleet, "gpu001", "mlx5_0")
    for lane in range(4):
        fleet.gauge("gpu001", "optics_rx_power_dbm", "mlx5_0", f"L{lane}", -8.5 + 0.2 * lane)
    fleet.counter("gpu001", "rx_corrected_bits_phy", "mlx5_0", "1", 0.0, 60 * 4e11 * 3e-5)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic) == ("optics_low_rx_power", "gpu001", "mlx5_0")
    assert finding.evidence["rx_power_dbm"] == -8.5 and finding.evidence["lane"] == "L0"
    assert finding.evidence["pre_fec_ber"] == pytest.approx(3e-5)
    assert finding.evidence["past"] == "low_warning" and finding.evidence["module_low_warning_dbm"] == -7.0


def test_rx_power_far_below_the_nodes_other_nics_is_flagged_before_the_alarm(fleet: Fleet) -> None:
    for nic in ("mlx5_0", "mlx5_1"):
        for lane in range(4):
            fleet.gauge("gpu002", "optics_rx_power_dbm", nic, f"L{lane}", -4.0 if nic == "mlx5_1" else 0.5)
    assert parts(fleet) == [("optics_low_rx_power", "gpu002", "mlx5_1", "leaf02", "swp2")]


def test_high_ber_warns_and_is_critical_once_fec_gives_up(fleet: Fleet) -> None:
    fleet.counter("gpu003", "rx_corrected_bits_phy", "mlx5_1", "1", 0.0, 60 * 4e11 * 1e-4)
    [warning] = diagnose(fleet.input())
    assert (warning.kind, warning.node, warning.nic, warning.severity) == (
        "high_ber", "gpu003", "mlx5_1", Severity.WARNING)
    fleet.counter("gpu003", "rx_pcs_symbol_err_phy", "mlx5_1", "1", 10.0, 250.0)
    [critical] = diagnose(fleet.input())
    assert critical.severity is Severity.CRITICAL and critical.evidence["post_fec_symbol_errors_in_window"] == 240.0


def test_swapped_cables_are_two_miswired_findings(fleet: Fleet) -> None:
    swapped = [replace(c, port={"swp1": "swp2", "swp2": "swp1"}[c.port])
               if c.switch == "leaf01" and c.port in ("swp1", "swp2") else c for c in PLAN]
    fleet.ports = ports_of(swapped)
    assert parts(fleet) == [("miswired", "gpu001", "mlx5_0", "leaf01", "swp2"),
                            ("miswired", "gpu002", "mlx5_0", "leaf01", "swp1")]


def test_pfc_storm_is_named_and_its_neighbours_pauses_are_not_blamed_on_ecn(fleet: Fleet) -> None:
    fleet.rate("gpu002", "tx_prio3_pause", "mlx5_0", 140_000.0)
    fleet.counter("gpu002", "tx_pause_storm_warning_events", "mlx5_0", "1", 0.0, 1.0)
    for node in ("gpu001", "gpu003", "gpu004"):  # same leaf: paused, and traffic too slow to mark
        fleet.rate(node, "rx_prio3_pause", "mlx5_0", 2_000.0)
        for metric in ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled"):
            fleet.rate(node, metric, "mlx5_0", 0.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic, finding.switch) == ("pfc_storm", "gpu002", "mlx5_0", "leaf01")
    assert finding.evidence["tx_pause_per_s"] == pytest.approx(140_000.0)


def test_a_storm_seen_by_the_watchdog_in_the_window_counts_and_an_old_one_does_not(fleet: Fleet) -> None:
    fleet.counter("gpu004", "tx_pause_storm_error_events", "mlx5_1", "1", 0.0, 1.0)
    fleet.counter("gpu003", "tx_pause_storm_error_events", "mlx5_1", "1", 4.0, 4.0)  # storms of last week
    assert parts(fleet) == [("pfc_storm", "gpu004", "mlx5_1", "leaf02", "swp4")]


def test_marks_without_cnps_mean_ecn_is_off_on_that_nic(fleet: Fleet) -> None:
    fleet.rate("gpu003", "np_ecn_marked_roce_packets", "mlx5_1", 9_000.0)
    fleet.rate("gpu003", "np_cnp_sent", "mlx5_1", 0.0)
    fleet.rate("gpu003", "rp_cnp_ignored", "mlx5_1", 4_500.0)
    fleet.rate("gpu003", "rx_prio3_pause", "mlx5_1", 2_400.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic) == ("ecn_not_working", "gpu003", "mlx5_1")
    assert finding.evidence["cnp_sent_per_s"] == 0.0 and finding.evidence["ecn_marked_per_s"] == 9_000.0


def test_pauses_without_any_mark_or_cnp_behind_one_leaf_point_at_the_leaf(fleet: Fleet) -> None:
    for node in NODES:
        fleet.rate(node, "rx_prio3_pause", "mlx5_1", 800.0)
        for metric in ("np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled"):
            fleet.rate(node, metric, "mlx5_1", 0.0)
    assert parts(fleet) == [("ecn_not_working", "", "", "leaf02", "")]


def _silent_spine_loss(fleet: Fleet, bad: str, ratio: float) -> None:
    """Uneven ECMP spread: leaf01 sends a lot through spine01 and little through spine02, leaf02 the reverse.

    Under go-back-N a lost packet costs its sender one NAK sequence error; the receivers count a window
    of out-of-sequence packets behind each loss (64 here), which says nothing about how many were lost.
    """
    sent = {("spine01", 0): 30e9, ("spine01", 1): 5e9, ("spine02", 0): 5e9, ("spine02", 1): 30e9}
    for (spine, li), per_s in sent.items():
        fleet.counter(LEAVES[li], "sw_tx_bytes", f"swp{9 + int(spine[-1]) - 1}", "", 0.0, per_s * 60)
    for li in range(len(LEAVES)):
        packets = sent[(bad, li)] * 60 / 4096 * ratio
        for node in NODES:  # the leaf's senders share the loss
            fleet.counter(node, "packet_seq_err", NICS[li], "1", 0.0, packets / len(NODES))
            fleet.counter(node, "out_of_sequence", NICS[1 - li], "1", 0.0, 64 * packets / len(NODES))


def test_silent_loss_following_one_spines_traffic_names_that_spine(fleet: Fleet) -> None:
    _silent_spine_loss(fleet, "spine02", 1e-3)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.switch) == ("spine_loss", "spine02")
    assert finding.evidence["estimated_loss_ratio"] == pytest.approx(1e-3, rel=0.01)
    assert finding.evidence["explained_share"] == pytest.approx(1.0)


def test_loss_below_the_delivery_standard_or_spread_evenly_names_no_spine(fleet: Fleet) -> None:
    _silent_spine_loss(fleet, "spine01", 2e-5)
    assert parts(fleet) == []
    even = Fleet()
    for node in NODES:
        for nic in NICS:
            even.counter(node, "packet_seq_err", nic, "1", 0.0, 5_000.0)
    assert parts(even) == []  # every leaf sends through every spine alike: no spine fits better than another


def test_drops_counted_on_one_spine_name_it(fleet: Fleet) -> None:
    fleet.counter("spine01", "sw_tx_drops", "swp2", "", 10.0, 5_010.0)
    fleet.counter("spine02", "sw_tx_drops", "swp1", "", 0.0, 3.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.switch, finding.evidence["drops_in_window"]) == ("spine_loss", "spine01", 5_000.0)


def test_a_link_test_that_localized_a_spine_names_it(fleet: Fleet) -> None:
    fleet.probes = [ProbeRecord(T1 - 5, "linktest", "gpu001", run_id="lt-1", result={"suspects": [
        {"kind": "spine", "part": "spine02", "bad": 12, "total": 12},
        {"kind": "spine", "part": "spines", "bad": 3, "total": 9}]})]
    assert parts(fleet) == [("spine_loss", "", "", "spine02", "")]


def test_leaked_qps_or_error_completions_are_qp_errors(fleet: Fleet) -> None:
    fleet.gauge("gpu004", "qp_count", "mlx5_0", "", 4009.0)
    fleet.counter("gpu001", "req_cqe_error", "mlx5_1", "1", 3.0, 9.0)
    assert parts(fleet) == [("qp_errors", "gpu001", "mlx5_1", "leaf02", "swp1"),
                            ("qp_errors", "gpu004", "mlx5_0", "leaf01", "swp4")]


def test_xids_critical_ones_stay_named_until_cleared(fleet: Fleet) -> None:
    fleet.gauge("gpu002", "gpu_xid_last", "gpu1", "", 79.0)
    fleet.counter("gpu002", "gpu_xid_count", "gpu1", "", 1.0, 1.0)  # before the window, still latched
    fleet.gauge("gpu003", "gpu_xid_last", "gpu0", "", 13.0)
    fleet.counter("gpu003", "gpu_xid_count", "gpu0", "", 0.0, 1.0)  # a new non-critical XID
    fleet.gauge("gpu004", "gpu_xid_last", "gpu0", "", 13.0)
    fleet.counter("gpu004", "gpu_xid_count", "gpu0", "", 1.0, 1.0)  # an old non-critical one: nothing
    found = [(f.kind, f.node, f.evidence["gpu"], f.severity) for f in diagnose(fleet.input())]
    assert found == [("gpu_xid", "gpu002", "gpu1", Severity.CRITICAL), ("gpu_xid", "gpu003", "gpu0", Severity.WARNING)]


def test_hot_or_thermally_throttled_gpus(fleet: Fleet) -> None:
    fleet.gauge("gpu001", "gpu_temp_c", "gpu1", "", 88.0)
    fleet.gauge("gpu004", "gpu_temp_c", "gpu0", "", 80.0)
    fleet.gauge("gpu004", "gpu_throttle_reasons", "gpu0", "", float(0x40))
    fleet.gauge("gpu003", "gpu_throttle_reasons", "gpu0", "", 1.0)  # idle: not heat
    found = [(f.kind, f.node, f.evidence["gpu"], f.severity) for f in diagnose(fleet.input())]
    assert found == [("gpu_thermal", "gpu004", "gpu0", Severity.CRITICAL),
                     ("gpu_thermal", "gpu001", "gpu1", Severity.WARNING)]


def test_host_states_become_host_findings(fleet: Fleet) -> None:
    fleet.statuses["gpu003"] = HostStatus("gpu003", HostState.UNREACHABLE, T0, "connection refused")
    fleet.statuses["gpu004"] = HostStatus("gpu004", HostState.HUNG, T0, "no output within 6 s")
    fleet.statuses["leaf02"] = HostStatus("leaf02", HostState.UNREACHABLE, T0, "no route to host")
    fleet.events = [Event(T0 + k, "host_state", Severity.WARNING, "gpu002: ok -> slow", host="gpu002",
                          data={"state": "slow", "reason": "first agent line after 5.1 s (slow above 2 s)"})
                    for k in (5, 35)]  # slow twice: once would be a hiccup
    assert parts(fleet) == [("node_unreachable", "", "", "leaf02", ""), ("node_unreachable", "gpu003", "", "", ""),
                            ("node_unresponsive", "gpu004", "", "", ""), ("node_slow", "gpu002", "", "", "")]
    fleet.events = fleet.events[:1]
    assert ("node_slow", "gpu002", "", "", "") not in parts(fleet)


def test_a_host_whose_output_cannot_be_read_is_a_finding_with_the_reason(fleet: Fleet) -> None:
    reason = "lldpctl -f json: RecursionError: maximum recursion depth exceeded"
    fleet.statuses["gpu002"] = HostStatus("gpu002", HostState.UNPARSABLE, T0, reason)
    [finding] = [f for f in diagnose(fleet.input()) if f.node == "gpu002"]
    assert (finding.kind, finding.severity, finding.basis) == ("host_unreadable", Severity.WARNING, "state")
    assert finding.evidence["reason"] == reason and "by hand" in finding.next_step


def test_when_most_hosts_are_slow_together_only_the_much_slower_one_is_named(fleet: Fleet) -> None:
    for node, seconds in (("gpu001", 3.1), ("gpu002", 3.3), ("gpu003", 3.2), ("gpu004", 6.4)):
        fleet.statuses[node] = HostStatus(node, HostState.SLOW, T0, f"answered in {seconds} s (slow above 2 s)")
    assert parts(fleet) == [("node_slow", "gpu004", "", "", "")]


def test_of_two_slow_nodes_the_much_slower_one_is_named(fleet: Fleet) -> None:
    for node, seconds in (("gpu001", 4.1), ("gpu002", 7.0)):
        fleet.events.append(Event(T0 + 1, "host_state", Severity.WARNING, f"{node}: ok -> slow", host=node,
                                  data={"state": "slow", "reason": f"first agent line after {seconds} s"}))
    assert parts(fleet) == [("node_slow", "gpu002", "", "", "")]
    fleet.statuses["leaf01"] = HostStatus("leaf01", HostState.SLOW, T0, "answered in 9.0 s (slow above 2 s)")
    assert parts(fleet) == [("node_slow", "gpu002", "", "", "")]  # switch CLIs are slow by design


def _lat(ts: float, p99: float, job: str = "", dst: str = "gpu002") -> ProbeRecord:
    return ProbeRecord(ts, "lat", "gpu001", dst, "mlx5_0", "mlx5_0", result={"p99_usec": p99}, job=job)


def test_latency_regression_against_the_pairs_and_the_jobs_own_baseline(fleet: Fleet) -> None:
    fleet.baseline = [_lat(T0 - 100 - k, 2.8 + 0.1 * (k % 3), job="77") for k in range(9)]
    fleet.baseline.append(_lat(T0 - 50, 2.9, dst="gpu003"))
    fleet.probes = [_lat(T1 - 10, 9.5, job="77"), _lat(T1 - 5, 10.5, job="77"), _lat(T1 - 5, 3.4, dst="gpu003")]
    found = diagnose(fleet.input())
    assert [(f.kind, f.node, f.nic, f.job) for f in found] == [("latency_regression", "", "", "77"),
                                                               ("latency_regression", "gpu001", "mlx5_0", "77")]
    assert found[1].evidence["p99_usec"] == 10.0 and found[1].evidence["baseline_p99_usec"] == 2.9


def test_uplink_imbalance_on_a_leaf(fleet: Fleet) -> None:
    ts = tuple(T0 + 5 * k for k in range(13))
    fleet.uplinks = {("leaf01", "swp9"): (ts, (380.0,) * 13), ("leaf01", "swp10"): (ts, (60.0,) * 13),
                     ("leaf02", "swp9"): (ts, (200.0,) * 13), ("leaf02", "swp10"): (ts, (210.0,) * 13)}
    fleet.gauge("leaf01", "sw_util_pct", "swp9", "", 95.0)
    fleet.gauge("leaf01", "sw_tx_gbps", "swp9", "", 380.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.switch, finding.port, finding.job) == ("ecmp_imbalance", "leaf01", "swp9", "77")
    assert finding.evidence["hot_spine"] == "spine01" and finding.evidence["imbalance_max_over_mean"] > 1.5


def test_thresholds_are_changed_by_name_and_checked() -> None:
    changed = with_overrides(Thresholds(), {"gpu_temp_warn_c": "80", "ecn_switch_min_nics": "5",
                                            "expected_rate_gbps": "200"})
    assert (changed.gpu_temp_warn_c, changed.ecn_switch_min_nics, changed.expected_rate_gbps) == (80.0, 5, 200.0)
    for bad in ({"ecmp": "1"}, {"no_such_limit": "1"}, {"gpu_temp_warn_c": "hot"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            with_overrides(Thresholds(), bad)


def test_findings_as_json_and_as_store_events(fleet: Fleet) -> None:
    fleet.gauge("gpu001", "gpu_temp_c", "gpu1", "", 90.0)
    [finding] = diagnose(fleet.input())
    document = finding_json(finding)
    assert set(document) == {"kind", "severity", "node", "nic", "switch", "port", "job", "evidence", "next_step",
                             "basis"}
    assert document["basis"] == "state"  # a hot GPU is hot now, whatever the window held
    assert document["severity"] == "warning" and document["next_step"]
    event = finding_event(finding, T1)
    assert (event.kind, event.host, event.device, event.job) == ("gpu_thermal", "gpu001", "gpu1", "77")
    assert "gpu_temp_c=90.0" in event.message and event.data["finding"] is True


def test_a_node_slow_all_along_since_its_one_state_change_stays_named(fleet: Fleet) -> None:
    """Streaming agents change state once when they turn slow: slow for 30 s is no hiccup."""
    fleet.statuses["gpu002"] = HostStatus("gpu002", HostState.SLOW, T1 - 30, "agent lines 4.2 s apart")
    assert parts(fleet) == [("node_slow", "gpu002", "", "", "")]
    fleet.statuses["gpu002"] = HostStatus("gpu002", HostState.SLOW, T1 - 2, "agent lines 4.2 s apart")
    assert parts(fleet) == []  # just turned slow, once: not yet
