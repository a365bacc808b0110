"""Cumulus counters: NVUE text (docs capture), NVUE JSON, NCLU net show counters (docs capture)."""

from __future__ import annotations

import json
from pathlib import Path

from fleet.collectors.parsers.switch_nvue import parse_nvue_counters

FIXTURES = Path(__file__).parents[2] / "fixtures" / "switch"


def test_nv_show_interface_counters_sections() -> None:
    text = (
        FIXTURES / "cumulus-docs-nv-show-interface-swp1-counters-sections-truncated.txt"
    ).read_text()
    result = parse_nvue_counters(text)
    assert result.source_format == "nvue-text"
    assert result.problems == () and result.unknown_lines == 0
    assert result.get("", "carrier-transitions", "operational") == 4
    assert result.get("Drop Counters", "Buffer Drops", "Receive") == 0
    assert result.get("Drop Counters", "Buffer Drops", "Transmit") is None  # n/a
    assert result.get("Error Counters", "Symbol Errors", "Receive") == 0
    assert result.get("Packet Size Statistics", "4096-16383", "Transmit") == 0
    pg7 = [c for c in result.counters if c.section == "Ingress Buffer Statistics" and c.name == "7"]
    assert [(c.column, c.value, c.unit, c.raw) for c in pg7] == [
        ("rx-frames", 0, "", "0"),
        ("rx-buffer-discards", 0, "bytes", "0 Bytes"),
        ("rx-shared-buffer-discards", 0, "bytes", "0 Bytes"),
    ]
    sections = {c.section for c in result.counters}
    assert sections == {
        "",
        "Detailed Counters",
        "Drop Counters",
        "Error Counters",
        "Packet Size Statistics",
        "Ingress Buffer Statistics",
    }
    assert len(result.counters) == 2 + 5 * 2 + 5 * 2 + 8 * 2 + 9 * 2 + 8 * 3


def test_nclu_net_show_counters() -> None:
    text = (FIXTURES / "cumulus-docs-mlag-net-show-counters-peerlink-rxdrp.txt").read_text()
    result = parse_nvue_counters(text)
    assert result.source_format == "nclu-kernel-table"
    assert result.problems == () and result.unknown_lines == 0
    assert result.get("kernel", "RX_DRP", interface="peerlink") == 520
    assert result.get("kernel", "RX_OK", interface="peerlink") == 23626
    assert result.get("kernel", "TX_DRP", interface="mgmt") == 33
    assert result.get("kernel", "MTU", interface="lo") == 65536
    flags = [c for c in result.counters if c.interface == "peerlink.4094" and c.name == "Flg"]
    assert [(c.value, c.raw) for c in flags] == [(None, "BMRU")]
    assert len({c.interface for c in result.counters}) == 13


def test_nvue_json() -> None:
    data = {
        "carrier-transitions": 4,
        "in-bytes": 123456789012,
        "in-drops": 0,
        "out-pkts": 42,
        "drop": {"rx-buffer": "12 Bytes", "tx-queue": None},
        "a-newer-section": {"ecn-marked": 7},
    }
    result = parse_nvue_counters(json.dumps(data, indent=2))
    assert result.source_format == "nvue-json" and result.problems == ()
    assert result.get("", "in-bytes") == 123456789012
    assert result.get("drop", "rx-buffer") == 12
    assert result.get("drop", "tx-queue") is None
    assert result.get("a-newer-section", "ecn-marked") == 7


def test_hostile() -> None:
    broken = parse_nvue_counters('{"carrier-transitions": 4, "in-')
    assert broken.counters == () and broken.problems[0].reason.startswith("not JSON")
    text = (
        FIXTURES / "cumulus-docs-nv-show-interface-swp1-counters-sections-truncated.txt"
    ).read_text()
    cut = parse_nvue_counters(text[: text.index("    Total Drops") + 8])
    assert cut.get("Drop Counters", "Queue Drops", "Transmit") == 0
    assert not any(c.name == "Tota" for c in cut.counters)  # no half row
    assert cut.unknown_lines == 1
    short = parse_nvue_counters(text[: text.index("    Total Drops") + 26])
    total = [c for c in short.counters if c.name == "Total Drops"]
    assert [(c.column, c.value) for c in total] == [("Receive", 0)]
    assert short.problems[-1].reason == "row ends before column 'Transmit'"
    other = parse_nvue_counters(
        (FIXTURES / "lolyu-sonic-show-queue-counters-uc3-drops.txt").read_text()
    )
    assert other.counters == ()  # a table, but not NVUE's: its rows are not counters
    assert other.unknown_lines == 2
    squeue_json = FIXTURES.parent / "slurm" / "rivos-squeue-json-slurm21.08.5-openapi-v0.0.37.txt"
    foreign_json = parse_nvue_counters(squeue_json.read_text())
    assert (
        foreign_json.counters == ()
        and "without NVUE counter keys" in foreign_json.problems[0].reason
    )
