"""Each counter means what the hardware documentation says it means, and the rules judge the window.

One test (or a few) per meaning; each names the public source it follows (docs/diagnosis.md cites
them with their URLs). The fabric is ``helpers.diagnosis_fleet.Fleet``: four nodes, two rails, a 60 s
window, the newest 10 s of it as the ``recent`` span.
"""

from __future__ import annotations

import pytest
from helpers.diagnosis_fleet import LEAVES, NICS, NODES, T0, T1, Fleet, module_limits

from fleet.fabric.diagnosis import Thresholds, diagnose
from fleet.fabric.events import Severity
from fleet.fabric.records import JobRecord
from fleet.fabric.rules import links
from fleet.fabric.rules.context import Context, Moment, Reading
from fleet.fabric.rules.thresholds import with_overrides


@pytest.fixture
def fleet() -> Fleet:
    return Fleet()


def kinds(fleet: Fleet, thresholds: Thresholds | None = None) -> list[tuple[str, str, str]]:
    return [(f.kind, f.node or f.switch, f.nic) for f in diagnose(fleet.input(), thresholds)]


# --- link flaps: deltas in the window, from every counter that sees them ------------------------

def test_carrier_changes_in_the_window_are_flaps_when_the_phy_counters_say_nothing(fleet: Fleet) -> None:
    """The netdev's carrier_changes counts every loss and every return of carrier: 2 changes, one flap."""
    fleet.counter("gpu002", "carrier_changes", "mlx5_0", "1", 6.0, 8.0)
    assert kinds(fleet) == [("link_flapping", "gpu002", "mlx5_0")]


def test_carrier_changes_alone_are_flaps_on_a_nic_without_link_down_counters(fleet: Fleet) -> None:
    """A NIC whose driver has no ``link_down_events_phy`` (not mlx5; an IPoIB netdev) and whose ``link_downed``
    was not read: the netdev's carrier_changes (sysfs-class-net), stored under the RDMA device, is all the rule
    has, and enough. Four changes in the window, up now: two flaps."""
    def links_found() -> list[tuple[str, str, str, float]]:
        return [(f.kind, f.node, f.nic, f.evidence["link_down_events_in_window"])
                for f in links.rules(Context(fleet.input(), Thresholds()))]

    for metric in ("link_down_events_phy", "link_downed"):
        for readings in (fleet.first, fleet.latest):
            del readings[("gpu002", metric, "mlx5_0", "1")]
    assert links_found() == []
    fleet.counter("gpu002", "carrier_changes", "mlx5_0", "1", 1.0, 5.0)
    assert links_found() == [("link_flapping", "gpu002", "mlx5_0", 2.0)]


def test_link_downs_since_the_counters_were_cleared_are_not_a_flap_now(fleet: Fleet) -> None:
    """Two leaf reboots last month left link_downed at 2 on every NIC behind the leaf: nothing is flapping."""
    for node in NODES:
        fleet.counter(node, "link_downed", "mlx5_1", "1", 2.0, 2.0)
        fleet.counter(node, "link_down_events_phy", "mlx5_1", "1", 2.0, 2.0)
    assert kinds(fleet) == []


def test_a_link_down_now_after_a_pattern_of_downs_is_flapping_not_down(fleet: Fleet) -> None:
    fleet.gauge("gpu003", "port_state", "mlx5_1", "1", 1.0)
    fleet.gauge("gpu003", "phys_state", "mlx5_1", "1", 2.0)
    fleet.counter("gpu003", "link_down_events_phy", "mlx5_1", "1", 1.0, 2.0)
    fleet.history = [Moment(T0 - 240, {("gpu003", "link_down_events_phy", "mlx5_1", "1"): Reading(T0 - 240, 0.0)})]
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.evidence["up_now"], finding.evidence["link_down_events_in_history"]) == (
        "link_flapping", False, 2.0)
    fleet.history = []
    assert kinds(fleet) == [("link_down", "gpu003", "mlx5_1")]  # one down: down, not (yet) a pattern


# --- PFC storms: the time paused, not the frames -------------------------------------------------

def test_pause_duration_makes_a_storm_the_frame_rate_misses(fleet: Fleet) -> None:
    """mlx5 tx_prio3_pause_duration is microseconds of XOFF sent: 0.9 s of every second is a storm, even at
    a frame rate (long pause quanta refreshed rarely) under the frames-only limit."""
    fleet.rate("gpu001", "tx_prio3_pause", "mlx5_1", 4_000.0)
    fleet.rate("gpu001", "tx_prio3_pause_duration", "mlx5_1", 0.9e6)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic) == ("pfc_storm", "gpu001", "mlx5_1")
    assert finding.evidence["tx_paused_share"] == pytest.approx(0.9)


def test_many_short_pauses_that_hold_the_link_briefly_are_not_a_storm(fleet: Fleet) -> None:
    fleet.rate("gpu001", "tx_prio3_pause", "mlx5_1", 20_000.0)
    fleet.rate("gpu001", "tx_prio3_pause_duration", "mlx5_1", 0.02e6)  # 2 % of the time: DCQCN's business
    assert kinds(fleet) == []


def test_a_storm_that_started_in_the_newest_seconds_is_named_at_once(fleet: Fleet) -> None:
    fleet.counter("gpu004", "tx_prio3_pause_duration", "mlx5_0", "1", 0.0, 5.0e6)  # 5 s of 60: under half
    fleet.recent[("gpu004", "tx_prio3_pause_duration", "mlx5_0", "1")] = Reading(T1 - 10.0, 0.0)
    assert kinds(fleet) == [("pfc_storm", "gpu004", "mlx5_0")]


def test_after_the_watchdog_disabled_pause_the_drops_keep_the_storm_open(fleet: Fleet) -> None:
    """tx_pause_storm_error_events: pause transmission is disabled and drops may follow (mlx5 counters.rst)."""
    fleet.counter("gpu002", "tx_pause_storm_error_events", "mlx5_1", "1", 1.0, 1.0)
    fleet.counter("gpu002", "rx_discards_phy", "mlx5_1", "1", 0.0, 90_000.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.evidence["pause_disabled_by_watchdog"]) == ("pfc_storm", "gpu002", True)


# --- ECN onset in the newest part of the window -------------------------------------------------

def test_marks_left_unanswered_in_the_newest_seconds_are_named_before_the_window_fills(fleet: Fleet) -> None:
    """Over 60 s the NIC still answered most marks; over the newest 10 s it answered none."""
    fleet.rate("gpu003", "np_ecn_marked_roce_packets", "mlx5_1", 9_000.0)
    fleet.rate("gpu003", "np_cnp_sent", "mlx5_1", 3_000.0)
    fleet.recent[("gpu003", "np_ecn_marked_roce_packets", "mlx5_1", "1")] = Reading(T1 - 10, 1000.0 + 50 * 9_000)
    fleet.recent[("gpu003", "np_cnp_sent", "mlx5_1", "1")] = Reading(T1 - 10, 1000.0 + 60 * 3_000)
    assert kinds(fleet) == [("ecn_not_working", "gpu003", "mlx5_1")]


# --- RNR NAKs are back-pressure, out_of_buffer is evidence --------------------------------------

def test_rnr_naks_are_back_pressure_not_error_completions(fleet: Fleet) -> None:
    """rnr_nak_retry_err counts RNR NAKs received while the QP's retries remain (the mlx5 hw counter; the
    retries-exceeded error is req_rnr_retries_exceeded): the responder had no receive buffer posted."""
    fleet.rate("gpu002", "rnr_nak_retry_err", "mlx5_0", 250.0)
    fleet.rate("gpu002", "out_of_buffer", "mlx5_0", 4_000.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic, finding.severity) == (
        "rnr_backpressure", "gpu002", "mlx5_0", Severity.WARNING)
    assert finding.evidence["rnr_naks_per_s"] == pytest.approx(250.0)
    assert finding.evidence["out_of_buffer_in_window"] == pytest.approx(60 * 4_000.0)


def test_out_of_buffer_alone_names_nothing(fleet: Fleet) -> None:
    fleet.rate("gpu002", "out_of_buffer", "mlx5_0", 4_000.0)
    assert kinds(fleet) == []


# --- loss under go-back-N, Ethernet drops -------------------------------------------------------

def test_spine_loss_counts_one_loss_per_nak_not_the_receivers_out_of_sequence(fleet: Fleet) -> None:
    """Go-back-N: one lost packet = one NAK sequence error at the sender; the receiver discards the 64
    packets behind the gap as out of sequence. The loss ratio is the NAKs', not 64 times it."""
    sent = {("spine01", 0): 30e9, ("spine01", 1): 5e9, ("spine02", 0): 5e9, ("spine02", 1): 30e9}
    for (spine, li), per_s in sent.items():
        fleet.counter(LEAVES[li], "sw_tx_bytes", f"swp{8 + int(spine[-1])}", "", 0.0, per_s * 60)
    for li in range(len(LEAVES)):
        lost = sent[("spine01", li)] * 60 / 4096 * 2e-4
        for node in NODES:
            fleet.counter(node, "packet_seq_err", NICS[li], "1", 0.0, lost / len(NODES))
            fleet.counter(node, "out_of_sequence", NICS[li], "1", 0.0, 64 * lost / len(NODES))
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.switch) == ("spine_loss", "spine01")
    assert finding.evidence["estimated_loss_ratio"] == pytest.approx(2e-4, rel=0.01)
    assert finding.evidence["out_of_sequence_in_window"] == pytest.approx(64 * finding.evidence[
        "lost_packets_in_window"])


def test_receive_drops_for_lack_of_buffer_are_a_finding(fleet: Fleet) -> None:
    """rx_discards_phy: packets dropped for lack of buffers; on RoCE's lossless priority PFC should prevent it."""
    fleet.counter("gpu004", "rx_discards_phy", "mlx5_1", "1", 10.0, 5_010.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.evidence["rx_discards_in_window"]) == (
        "nic_rx_discards", "gpu004", 5_000.0)


def test_crc_errors_are_lost_frames(fleet: Fleet) -> None:
    """rx_crc_errors_phy: received packets dropped for a bad FCS: the link loses frames."""
    fleet.counter("gpu001", "rx_crc_errors_phy", "mlx5_0", "1", 0.0, 12.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.severity, finding.evidence["crc_errors_in_window"]) == (
        "high_ber", Severity.CRITICAL, 12.0)


# --- QPs: the alarm follows what the node's jobs need -------------------------------------------

def _big_job(fleet: Fleet, nodes: int) -> None:
    names = (*NODES, *(f"gpu{k:03d}" for k in range(100, 100 + nodes - len(NODES))))
    fleet.jobs = [JobRecord(T0, "88", "moe", "bob", "acme", "RUNNING", names)]


def test_an_all_to_all_job_of_many_nodes_needs_thousands_of_qps(fleet: Fleet) -> None:
    """An expert-parallel job of 128 nodes connects every rank to every remote one: 2 x 127 x 2 channels
    = 508 QPs per NIC at NCCL's defaults, 2,032 with NCCL_IB_QPS_PER_CONNECTION=4."""
    four = with_overrides(Thresholds(), {"nccl_ib_qps_per_connection": "4"})
    _big_job(fleet, 128)
    fleet.gauge("gpu001", "qp_count", "mlx5_0", "", 2_040.0)
    assert kinds(fleet, four) == []
    assert kinds(fleet) == [("qp_errors", "gpu001", "mlx5_0")]  # four times what one QP per connection needs
    fleet.gauge("gpu001", "qp_count", "mlx5_0", "", 9_000.0)
    [finding] = diagnose(fleet.input(), four)
    assert (finding.kind, finding.evidence["largest_job_nodes"]) == ("qp_errors", 128)


def test_a_node_without_a_job_holding_many_qps_leaks_them(fleet: Fleet) -> None:
    fleet.gauge("gpu004", "qp_count", "mlx5_1", "", 700.0)  # gpu004 runs no job
    assert kinds(fleet) == [("qp_errors", "gpu004", "mlx5_1")]


# --- XIDs per NVIDIA's catalog ------------------------------------------------------------------

def _xid(fleet: Fleet, node: str, gpu: str, xid: int, before: float, after: float) -> None:
    fleet.gauge(node, "gpu_xid_last", gpu, "", float(xid))
    fleet.counter(node, "gpu_xid_count", gpu, "", before, after)


def test_row_remap_and_single_bit_rate_xids_are_not_data_loss(fleet: Fleet) -> None:
    """XID 63 (row remapping recorded) and 92 (high single-bit ECC rate) are corrected errors."""
    _xid(fleet, "gpu001", "gpu0", 63, 0.0, 1.0)
    _xid(fleet, "gpu002", "gpu1", 92, 0.0, 1.0)
    _xid(fleet, "gpu003", "gpu0", 63, 1.0, 1.0)  # recorded before the window: nothing to do now
    found = [(f.node, f.severity, f.evidence["xid_data_loss"]) for f in diagnose(fleet.input())]
    assert found == [("gpu001", Severity.WARNING, False), ("gpu002", Severity.WARNING, False)]


@pytest.mark.parametrize("xid", [48, 61, 62, 64, 74, 79, 95, 119, 120, 140, 154])
def test_xids_that_need_a_reset_or_a_reboot_stay_critical_until_then(fleet: Fleet, xid: int) -> None:
    _xid(fleet, "gpu004", "gpu1", xid, 1.0, 1.0)  # logged before the window
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.severity, finding.basis) == ("gpu_xid", Severity.CRITICAL, "state")
    assert finding.evidence["xid_action"] in ("RESET_GPU", "RESTART_BM", "RECOVERY_ACTION")


def test_application_xids_are_events_of_the_window(fleet: Fleet) -> None:
    _xid(fleet, "gpu001", "gpu0", 13, 4.0, 5.0)
    _xid(fleet, "gpu002", "gpu0", 31, 2.0, 2.0)  # before the window: gone
    [finding] = diagnose(fleet.input())
    assert (finding.node, finding.severity, finding.basis, finding.evidence["xid_action"]) == (
        "gpu001", Severity.WARNING, "window", "RESTART_APP")


# --- optics: each module's own thresholds, low and high, every reading -------------------------

def _lanes(fleet: Fleet, node: str, nic: str, metric: str, value: float) -> None:
    for lane in range(4):
        fleet.gauge(node, metric, nic, f"L{lane}", value)


def test_a_module_with_a_low_warning_under_fleets_old_default_is_healthy_at_minus_9(fleet: Fleet) -> None:
    """A CWDM4 module's own Rx low warning is -12 dBm (its EEPROM): -9 dBm is within its range."""
    for nic, dbm in zip(NICS, (-9.0, -8.8), strict=True):  # a long fibre: every NIC of the node alike
        module_limits(fleet, "gpu002", nic, rx=(-16.0, -12.0, 2.5, 3.5))
        _lanes(fleet, "gpu002", nic, "optics_rx_power_dbm", dbm)
    assert kinds(fleet) == []


@pytest.mark.parametrize(("metric", "value", "kind", "past", "severity"), [
    ("optics_rx_power_dbm", 3.0, "optics_high_rx_power", "high_warning", Severity.WARNING),
    ("optics_rx_power_dbm", -10.5, "optics_low_rx_power", "low_alarm", Severity.CRITICAL),
    ("optics_tx_power_dbm", -4.5, "optics_tx_power", "low_warning", Severity.WARNING),
    ("optics_tx_bias_ma", 15.5, "optics_tx_bias", "high_alarm", Severity.CRITICAL),
])
def test_every_lane_reading_is_judged_both_ways(fleet: Fleet, metric: str, value: float, kind: str, past: str,
                                                severity: Severity) -> None:
    module_limits(fleet, "gpu003", "mlx5_0")
    fleet.gauge("gpu003", metric, "mlx5_0", "L2", value)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.evidence["past"], finding.severity) == (kind, "gpu003", past, severity)
    assert finding.evidence["lane"] == "L2"


def test_a_hot_module_is_named_against_its_own_temperature_thresholds(fleet: Fleet) -> None:
    module_limits(fleet, "gpu001", "mlx5_0", temp=(-5.0, 0.0, 70.0, 75.0))
    fleet.gauge("gpu001", "optics_temp_c", "mlx5_0", "", 72.5)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.evidence["temp_c"], finding.evidence["past"]) == (
        "optics_temperature", 72.5, "high_warning")


def test_the_switch_side_of_a_cable_is_judged_by_the_leafs_receive_errors(fleet: Fleet) -> None:
    fleet.counter("leaf02", "sw_rx_errors", "swp3", "", 100.0, 4_100.0)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.node, finding.nic, finding.switch, finding.port) == (
        "high_ber", "gpu003", "mlx5_1", "leaf02", "swp3")
    assert finding.evidence["seen_by"] == "switch" and finding.evidence["switch_rx_errors_in_window"] == 4_000.0


# --- FEC: RS(544,514)'s limit --------------------------------------------------------------------

def test_pre_fec_ber_well_inside_the_fec_limit_is_healthy(fleet: Fleet) -> None:
    """RS(544,514) corrects to a pre-FEC BER of 2.4e-4 (IEEE 802.3 cl. 119): 1.5e-5 is far inside it."""
    fleet.counter("gpu002", "rx_corrected_bits_phy", "mlx5_0", "1", 0.0, 60 * 4e11 * 1.5e-5)
    assert kinds(fleet) == []


def test_pre_fec_ber_at_the_fec_limit_is_critical_before_frames_are_lost(fleet: Fleet) -> None:
    fleet.counter("gpu002", "rx_corrected_bits_phy", "mlx5_0", "1", 0.0, 60 * 4e11 * 3e-4)
    [finding] = diagnose(fleet.input())
    assert (finding.kind, finding.severity) == ("high_ber", Severity.CRITICAL)
    assert finding.evidence["fec_limit_pre_fec_ber"] == 2.4e-4


# --- jobs ---------------------------------------------------------------------------------------

def _traffic(fleet: Fleet, rates: dict[str, tuple[float, float]]) -> None:
    """Per node (Gb/s over the 4 minutes before the window, Gb/s in the window), split over its NICs."""
    earlier: dict[tuple[str, str, str, str], Reading] = {}
    for node, (gbps_before, gbps_now) in rates.items():
        for nic in NICS:
            before, now = (g * 1e9 / 8 / len(NICS) for g in (gbps_before, gbps_now))
            start = 1e12
            fleet.counter(node, "tx_bytes", nic, "1", start + before * 240, start + before * 240 + now * 60)
            earlier[(node, "tx_bytes", nic, "1")] = Reading(T0 - 240, start)
    fleet.history = [Moment(T0 - 240, earlier)]


def test_a_job_that_fell_far_below_its_own_pace_names_its_straggler(fleet: Fleet) -> None:
    _traffic(fleet, {"gpu001": (600.0, 12.0), "gpu002": (600.0, 12.0)})  # job 77
    fleet.rate("gpu002", "tx_prio3_pause_duration", "mlx5_1", 0.97e6)
    found = diagnose(fleet.input())
    job = next(f for f in found if f.kind == "job_slow")
    assert (job.job, job.evidence["straggler"], job.evidence["straggler_why"]) == ("77", "gpu002", "pfc_storm mlx5_1")
    assert job.evidence["gbps_per_node"] == pytest.approx(12.0) and job.evidence["own_recent_gbps_per_node"] == 600.0


def test_a_job_at_its_usual_pace_is_fine(fleet: Fleet) -> None:
    _traffic(fleet, {"gpu001": (600.0, 560.0), "gpu002": (600.0, 570.0)})
    assert kinds(fleet) == []
