"""NVUE (Cumulus) renderers against the docs capture and NVUE's documented layouts."""

from __future__ import annotations

import json

import pytest
from builders_gpu import fixture, make_port, make_switch, switch_ctx

from fleet.simulator.state import SwitchView
from fleet.simulator.tools.nvue import nv

ZERO = {
    "rx_bytes": 0,
    "tx_bytes": 0,
    "rx_packets": 0,
    "tx_packets": 0,
    "rx_drops": 0,
    "tx_drops": 0,
    "rx_errors": 0,
    "tx_errors": 0,
}


# the docs page lost the cell padding of these two rows (last rows of a table)
TRUNCATED_BY_DOCS = (
    "    4096-16383  0        0",
    "    7               0          0 Bytes             0 Bytes ",
)


def run(*args: str, switch: SwitchView | None = None) -> tuple[str, str, int]:
    out = nv(switch_ctx(switch or make_switch()), ["nv", *args])
    return out.stdout, out.stderr, out.exit_status


def test_counters_text_has_the_docs_sections_line_for_line() -> None:
    real = fixture("switch", "cumulus-docs-nv-show-interface-swp1-counters-sections-truncated.txt")
    switch = make_switch(ports=(make_port("swp1", **ZERO),))
    out, _, rc = run("show", "interface", "swp1", "counters", switch=switch)
    assert rc == 0
    ours = out.splitlines()
    theirs = real.splitlines()
    assert len(ours) == len(theirs)
    for o, r in zip(ours, theirs, strict=True):
        if r.startswith("carrier-transitions"):
            assert o.split()[0] == "carrier-transitions" and len(o) == len(r)
        elif r in TRUNCATED_BY_DOCS:
            assert o.rstrip() == r.rstrip()
        else:
            assert o == r


def test_counters_text_carries_the_port_numbers() -> None:
    out, _, _ = run("show", "interface", "swp2", "counters")
    lines = out.splitlines()
    assert "    Total Octets       123456789012  98765432109" in lines
    assert any(ln.split()[:4] == ["Queue", "Drops", "n/a", "91786"] for ln in lines)
    assert any(ln.split()[:4] == ["FCS", "Errors", "3", "n/a"] for ln in lines)
    sizes = [
        ln.split() for ln in lines if ln.startswith("    64 ") or ln.startswith("    4096-16383")
    ]
    assert sum(int(s[1]) for s in sizes) == 29_876_543


def test_counters_json_keys_and_values() -> None:
    out, _, rc = run("show", "interface", "swp1", "counters", "-o", "json")
    doc = json.loads(out)
    assert rc == 0
    assert {k: doc[k] for k in ("in-bytes", "out-bytes", "in-pkts", "out-pkts")} == {
        "in-bytes": 123_456_789_012,
        "out-bytes": 98_765_432_109,
        "in-pkts": 29_876_543,
        "out-pkts": 23_456_789,
    }
    assert (doc["in-drops"], doc["out-drops"], doc["in-errors"], doc["out-errors"]) == (
        7,
        91_786,
        3,
        0,
    )
    assert doc["carrier-transitions"] == 1
    assert doc["pfc"]["3"] == {"rx-pause-frames": 12_345, "tx-pause-frames": 678}
    assert doc["ecn-marked-packets"] == 4_321


def test_show_interface_table() -> None:
    down = make_port("swp10", oper_up=False, lldp=None)
    switch = make_switch(ports=(down, make_port("swp2"), make_port("swp1")))
    out, _, _ = run("show", "interface", switch=switch)
    lines = out.splitlines()
    assert lines[0].split() == [
        "Interface",
        "State",
        "Speed",
        "MTU",
        "Type",
        "Remote",
        "Host",
        "Remote",
        "Port",
        "Summary",
    ]
    assert set(lines[1]) == {"-", " "}
    names = [ln.split()[0] for ln in lines[2:]]
    assert names == ["eth0", "lo", "swp1", "swp2", "swp10"]
    assert lines[4].split() == ["swp1", "up", "400G", "9216", "swp", "gpu003", "ens2np0"]
    assert lines[6].split() == ["swp10", "down", "9216", "swp"]
    assert len({len(ln) for ln in lines}) == 1  # every cell padded to its column


def test_system_forwarding_like_the_nvue_reference() -> None:
    out, _, _ = run("show", "system", "forwarding")
    lines = out.splitlines()
    assert lines[0].rstrip() == " " * 24 + "  applied"
    assert lines[1] == "-" * 24 + "  -------"
    assert lines[2].rstrip() == "ecmp-hash"
    assert lines[3] == "  destination-ip          on     "
    assert lines[5] == "  gtp-teid                off    "
    assert f"{'hash-seed':<24}  {'42':<7}" in lines
    assert lines[-1] == "host-route-preference     route  "


def test_adaptive_routing() -> None:
    out, _, _ = run("show", "router", "adaptive-routing", switch=make_switch(adaptive_routing=True))
    assert out.splitlines()[2] == "state  enabled      enabled"


def test_config_diff_and_history() -> None:
    switch = make_switch(
        pending_config={
            "system forwarding hash-seed": "50",
            "system forwarding ecmp-hash source-port": "off",
            "router adaptive-routing state": "enabled",
        },
        config_history=(
            (1, "2026-05-01 10:00:00", "Config update by cumulus"),
            (2, "2026-05-28 20:00:00", "hash seed"),
        ),
    )
    out, _, _ = run("config", "diff", switch=switch)
    assert out == (
        "- set:\n"
        "    router:\n"
        "      adaptive-routing:\n"
        "        state: enabled\n"
        "    system:\n"
        "      forwarding:\n"
        "        ecmp-hash:\n"
        "          source-port: off\n"
        "        hash-seed: 50\n"
    )
    assert run("config", "diff")[0] == ""
    out, _, _ = run("config", "history", switch=switch)
    assert out.splitlines()[:5] == [
        "- apply-id: rev_2_apply_1",
        "  date: 2026-05-28 20:00:00",
        "  message: hash seed",
        "  ref: rev_2",
        "  user: cumulus",
    ]
    assert out.splitlines()[5] == "- apply-id: rev_1_apply_1"


def test_lldp_of_a_port() -> None:
    out, _, _ = run("show", "interface", "swp1", "lldp")
    assert out.splitlines()[4].split()[:4] == [
        "gpu003",
        "ens2np0",
        "b8:3f:d2:aa:bb:02",
        "10.0.0.13",
    ]


@pytest.mark.parametrize(
    ("args", "rc"),
    [
        (("show", "interface", "swp99"), 1),
        (("show", "interface", "swp1", "bogus"), 1),
        (("show", "bogus"), 1),
        (("frobnicate",), 2),
        (("show", "interface", "-o", "xml"), 1),
    ],
)
def test_errors(args: tuple[str, ...], rc: int) -> None:
    out, err, code = run(*args)
    assert code == rc and out == "" and err


def test_nv_is_not_found_on_sonic() -> None:
    assert run("show", "interface", switch=make_switch(os="sonic"))[2] == 127
