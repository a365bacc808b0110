"""ethtool -S: the real excerpts (with and without header, grep-filtered), priorities."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ethtool"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_mlx5_kernel_4_15_without_header_or_indent() -> None:
    r = parse_ethtool_stats(_read("ethq-mlx5-cx4-ethtool-S-kernel4.15.txt"))
    assert r.problems == () and r.unknown_lines == 0 and not r.has_header
    c = r.counters
    assert len(c) == 143
    assert (c["rx_packets"], c["tx_bytes"], c["tx_pci_signal_integrity"]) == (845320277, 2655285206479, 34)
    assert c["rx_discards_phy"] == 0 and c["module_bad_shorted"] == 0
    names = list(c)
    assert (names[0], names[-1]) == ("rx_packets", "module_bad_shorted")
    # per-priority bytes/packets exist, but no per-priority pause: PFC is not enabled
    assert r.priorities() == (0, 1, 2, 3, 4, 5, 6, 7)
    assert r.priority(0) == {
        "rx_bytes": 2202570777997, "rx_packets": 845715962, "tx_bytes": 2662454044895, "tx_packets": 896117891,
    }  # fmt: skip
    assert r.pause_frames("rx") == {} and r.pause_frames("tx") == {}


def test_grep_pause_global_pause_sender() -> None:
    r = parse_ethtool_stats(_read("cn-notes-ethtool-S-grep-pause-cx4lx-tx-global-pause.txt"))
    assert r.problems == () and len(r.counters) == 17
    assert r.counters["tx_global_pause"] == 1266552
    assert r.counters["tx_global_pause_duration"] == 555665182  # microseconds
    assert r.counters["tx_pause_storm_error_events"] == 0 and r.counters["tx_pci_signal_integrity"] == 3


def test_grep_discards_per_priority() -> None:
    r = parse_ethtool_stats(_read("cn-notes-ethtool-S-grep-discards-cx4lx-prio-discards.txt"))
    assert r.problems == () and len(r.counters) == 14
    assert r.counters["rx_steer_missed_packets"] == 24627
    assert r.priority(3) == {"rx_discards": 0}


def test_full_output_with_header_and_pfc_on_priority_3() -> None:
    text = (
        "NIC statistics:\n"
        "     rx_packets: 10\n"
        "     rx_prio3_pause: 1234\n"
        "     rx_prio3_pause_duration: 5678\n"
        "     tx_prio3_pause: 9\n"
        "     rx_pause_prio_5: 77\n"  # mlx4 spelling
    )
    r = parse_ethtool_stats(text)
    assert r.has_header and r.problems == ()
    assert r.pause_frames("rx") == {3: 1234, 5: 77} and r.pause_frames("tx") == {3: 9}
    assert r.priority(3) == {"rx_pause": 1234, "rx_pause_duration": 5678, "tx_pause": 9}


def test_newer_version_extra_counters_and_groups_are_kept() -> None:
    text = _read("cn-notes-ethtool-S-grep-pause-cx4lx-tx-global-pause.txt") + (
        "     rx_pause_storm_hypothetical_new: 4\n"
        "Standard stats for eth0:\n"
        "eth-mac-FramesTransmittedOK: 99\n"
    )
    r = parse_ethtool_stats(text)
    assert r.problems == ()
    assert r.counters["rx_pause_storm_hypothetical_new"] == 4 and r.counters["eth-mac-FramesTransmittedOK"] == 99


def test_error_message_and_non_numbers_are_problems() -> None:
    r = parse_ethtool_stats("NIC statistics:\n     rx_packets: 1\n     weird: n/a\nno stats available\n")
    assert r.counters == {"rx_packets": 1} and r.unknown_lines == 2
    assert [p.line for p in r.problems] == [3, 4]
