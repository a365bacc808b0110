"""The suite's pure pieces: bandwidth pairing, the counters command, retry policy, settings from a criteria file."""

from __future__ import annotations

import pytest

from fleet.collectors.baseline_run import (
    LOSS_HW_COUNTERS,
    SuiteSettings,
    bandwidth_pairs,
    counters_command,
    missed_rendezvous,
)
from fleet.fabric.acceptance import CriteriaError
from fleet.fabric.records import ProbeRecord


def test_bandwidth_pairs_cross_to_the_far_half_and_keep_an_odd_node() -> None:
    assert bandwidth_pairs(["a", "b", "c", "d"]) == [("a", "c"), ("b", "d")]
    assert bandwidth_pairs(["a", "b", "c"]) == [("a", "b"), ("c", "a")]
    assert bandwidth_pairs(["a"]) == [] and bandwidth_pairs([]) == []


def test_counters_command_reads_packets_and_loss_counters_of_every_port() -> None:
    text = counters_command().text
    assert text.startswith("grep -H . /sys/class/infiniband/*/ports/*/counters/port_xmit_packets")
    assert "hw_counters/packet_seq_err" in text and "counters/port_xmit_discards" in text
    assert "statistics/rx_crc_errors" in text  # frames lost to a bad FCS, from the RoCE netdev


def test_a_loss_is_counted_once_under_go_back_n() -> None:
    """The sender's NAK sequence errors and ACK timeouts count one per lost packet; the receiver's
    out-of-sequence packets (a window of them per loss) and out_of_buffer are not losses."""
    assert set(LOSS_HW_COUNTERS) == {"packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err"}


def failed(stage: str, error: str) -> ProbeRecord:
    return ProbeRecord(ts=0.0, kind="bw", src="a", dst="b", ok=False, result={"stage": stage, "error": error})


def test_only_a_missed_rendezvous_is_retried() -> None:
    assert missed_rendezvous(failed("client", "a: perftest client failed (exit status 1: Couldn't connect to b:1)"))
    assert not missed_rendezvous(failed("gid", "b: mlx5_0 port 1 is RoCE but has no RoCE v2 GID"))
    assert not missed_rendezvous(failed("timeout", "probe did not finish within 60 s"))
    assert not missed_rendezvous(ProbeRecord(ts=0.0, kind="bw", src="a", result={"stage": "client"}))


def test_settings_from_a_criteria_suite_table() -> None:
    settings = SuiteSettings.from_table({"rails": "0,3", "probe_timeout_s": 30, "linktest_mode": "sample"},
                                        nodes=("gpu001", "gpu002"))
    assert settings.rails == (0, 3) and settings.probe_timeout_s == 30.0 and settings.linktest_mode == "sample"
    assert settings.nodes == ("gpu001", "gpu002") and settings.fleet_allreduce
    with pytest.raises(CriteriaError):
        SuiteSettings.from_table({"rails": "x"})
