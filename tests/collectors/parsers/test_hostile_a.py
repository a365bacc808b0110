"""Hostile input for every InfiniBand/RDMA/netdev/topology parser.

Empty, whitespace, truncated mid-line, binary garbage, 10 MB of output, another
tool's output and every other captured sample: a parser never raises, never
invents data from text that is not its tool's, and lists what it could not read.
(The fuzz suite, tests/security/test_parser_fuzz.py, holds every parser to the same
contract on mutated captures; benchmarks/parsers.py times 10 MB per kind.)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats
from fleet.collectors.parsers.iblinkinfo import parse_iblinkinfo
from fleet.collectors.parsers.ibnetdiscover import parse_ibnetdiscover
from fleet.collectors.parsers.ibstat import parse_ibstat, parse_ibstatus
from fleet.collectors.parsers.ibv_devinfo import parse_ibv_devinfo
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.parsers.perfquery import parse_ibqueryerrors, parse_perfquery
from fleet.collectors.parsers.problem_log import MAX_LISTED
from fleet.collectors.parsers.rdma_qp import parse_rdma_qp
from fleet.collectors.parsers.rdma_statistic import parse_rdma_statistic
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.parsers.sysfs import parse_sysfs

FIXTURES = Path(__file__).parents[2] / "fixtures"


@dataclass(frozen=True)
class Kind:
    parse: Callable[[str], Any]
    sample: str  # a real capture of this kind (under tests/fixtures)
    data: Callable[[Any], Sized]  # what the parser read; empty = nothing
    other: str  # another tool's capture that must not be read as this kind
    accumulates: bool = True  # repeated input gives repeated records (else merged)


def _module_data(r: Any) -> tuple[Any, ...]:
    return (*r.lanes, *((r.identifier,) if r.identifier else ()), *((r.temp_c,) if r.temp_c is not None else ()))


KINDS: dict[str, Kind] = {
    "ibstat": Kind(parse_ibstat, "ibstat/gpud-h100-ib-with-bf3-bond.txt", lambda r: r.devices, "ibstat/gpud-ibstatus-a100-hdr-azure.txt"),
    "ibstatus": Kind(parse_ibstatus, "ibstat/gpud-ibstatus-a100-hdr-azure.txt", lambda r: r.ports, "ibstat/gpud-h100-ib-with-bf3-bond.txt"),
    "ibv_devinfo": Kind(parse_ibv_devinfo, "rdma/dgx-spark-ibv_devinfo-cx7-roce-rocep-names.txt", lambda r: r.devices, "ibstat/gpud-h100-cx7-ib-some-eth-down.txt"),
    "sysfs": Kind(parse_sysfs, "sysfs/procfs-ttar-mlx5_0-cx4lx.ttar.txt", lambda r: r.ports, "ethtool/ethq-mlx5-cx4-ethtool-S-kernel4.15.txt", accumulates=False),
    "ethtool-stats": Kind(parse_ethtool_stats, "ethtool/ethq-mlx5-cx4-ethtool-S-kernel4.15.txt", lambda r: r.counters, "ibstat/gpud-h100-ib-with-bf3-bond.txt", accumulates=False),
    "ethtool-module": Kind(parse_ethtool_module, "ethtool/cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt", _module_data, "ethtool/ethq-mlx5-cx4-ethtool-S-kernel4.15.txt", accumulates=False),
    "rdma-qp": Kind(parse_rdma_qp, "rdma/cn-notes-rdma-resource-show-qp-mlnx-ofed.txt", lambda r: r.qps, "rdma/cn-notes-rdma-statistic-show-4x-mlx5-errors.txt"),
    "rdma-statistic": Kind(parse_rdma_statistic, "rdma/cn-notes-rdma-statistic-show-4x-mlx5-errors.txt", lambda r: r.ports, "rdma/iproute2-rdma-res-show-qp-kernel-qps-mlx5-hns.txt"),
    "show-gids": Kind(parse_show_gids, "rdma/cn-notes-show_gids-mlx5-bond-roce-v1-v2.txt", lambda r: r.gids, "rdma/cn-notes-rdma-resource-show-qp-mlnx-ofed.txt"),
    "perfquery": Kind(parse_perfquery, "perfquery/infiniband_exporter-perfquery-x-switch-2ports.txt", lambda r: r.blocks, "perfquery/linux-rdma-ibqueryerrors-sx6036-saturated.txt"),
    "ibqueryerrors": Kind(parse_ibqueryerrors, "perfquery/linux-rdma-ibqueryerrors-sx6036-saturated.txt", lambda r: r.nodes, "perfquery/infiniband_exporter-perfquery-x-switch-2ports.txt"),
    "ibnetdiscover": Kind(parse_ibnetdiscover, "topology/infiniband_exporter-ibnetdiscover-p-edr.txt", lambda r: r.links, "topology/cn-notes-iblinkinfo-qdr-is4-switch-32-ports-down.txt"),
    "iblinkinfo": Kind(parse_iblinkinfo, "topology/cn-notes-iblinkinfo-qdr-is4-switch-32-ports-down.txt", lambda r: r.ports, "topology/infiniband_exporter-ibnetdiscover-p-edr.txt"),
    "lldp": Kind(parse_lldp, "topology/schmaustech-lldpcli-show-nei-sn5600-cumulus59-dcbx-tlvs.txt", lambda r: r.neighbors, "ibstat/gpud-h100-cx7-ib-some-eth-down.txt"),
}  # fmt: skip

# Every capture of these kinds under tests/fixtures, and the kind it is.
OWN_SAMPLES: dict[str, str] = {
    "ibstat/blog-ibstatus-mixed-ib-roce-down.txt": "ibstatus",
    "ibstat/gpud-h100-cx7-ib-some-eth-down.txt": "ibstat",
    "ibstat/gpud-h100-ib-with-bf3-bond.txt": "ibstat",
    "ibstat/gpud-ibstatus-a100-hdr-azure.txt": "ibstatus",
    "ibstat/sglang-ibstatus-h20-bf3-roce-bond.txt": "ibstatus",
    "rdma/cmeiohas-rdma-res-show-qp-dd-mlx5-umr.txt": "rdma-qp",
    "rdma/cn-notes-rdma-resource-show-qp-mlnx-ofed.txt": "rdma-qp",
    "rdma/cn-notes-rdma-statistic-show-4x-mlx5-errors.txt": "rdma-statistic",
    "rdma/cn-notes-show_gids-mixed-huawei-hrn3-mlx5.txt": "show-gids",
    "rdma/cn-notes-show_gids-mlx5-bond-roce-v1-v2.txt": "show-gids",
    "rdma/dgx-spark-ibv_devinfo-cx7-roce-rocep-names.txt": "ibv_devinfo",
    "rdma/hns-rdma-res-show-qp-jp-dd-after-fix.txt": "rdma-qp",
    "rdma/hns-rdma-res-show-qp-jp-dd-before-fix-broken.txt": "rdma-qp",
    "rdma/iproute2-rdma-res-show-qp-kernel-qps-mlx5-hns.txt": "rdma-qp",
    "rdma/stelline-asus-esc8000a-ibv_devinfo-4x-cx7-mixed-fw.txt": "ibv_devinfo",
    "rdma/tensorflow-gdr-ibv_devinfo-mlx4-roce-dualport.txt": "ibv_devinfo",
    "ethtool/cn-notes-ethtool-S-grep-discards-cx4lx-prio-discards.txt": "ethtool-stats",
    "ethtool/cn-notes-ethtool-S-grep-pause-cx4lx-tx-global-pause.txt": "ethtool-stats",
    "ethtool/cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt": "ethtool-module",
    "ethtool/ethq-mlx5-cx4-ethtool-S-kernel4.15.txt": "ethtool-stats",
    "ethtool/netdev-ethtool-m-qsfp-plus-cx3-one-lane.txt": "ethtool-module",
    "perfquery/infiniband-diags-issue16-perfquery-x-rhel75.txt": "perfquery",
    "perfquery/infiniband_exporter-perfquery-E-rcverrdetails.txt": "perfquery",
    "perfquery/infiniband_exporter-perfquery-x-switch-2ports.txt": "perfquery",
    "perfquery/linux-rdma-ibqueryerrors-sx6036-saturated.txt": "ibqueryerrors",
    "sysfs/cn-notes-show_counters-mlx5_bond_0-hw_counters-ecn.txt": "sysfs",
    "sysfs/gpud-pr943-mlx5_1-counters-saturated.txt": "sysfs",
    "sysfs/procfs-ttar-mlx5_0-cx4lx.ttar.txt": "sysfs",
    "topology/cn-notes-iblinkinfo-qdr-is4-switch-32-ports-down.txt": "iblinkinfo",
    "topology/hpl-notes-iblinkinfo-grep-up-edr-sb7700.txt": "iblinkinfo",
    "topology/infiniband_exporter-ibnetdiscover-p-edr.txt": "ibnetdiscover",
    "topology/schmaustech-lldpcli-show-nei-sn5600-cumulus59-dcbx-tlvs.txt": "lldp",
    "topology/schmaustech-lldpcli-show-stat-unrecognized-tlvs.txt": "lldp",
}
# Pairs whose texts share a syntax: show_counters' "name: value" lines are
# ethtool -S lines too. The parser still lists the section header it cannot place.
SAME_SYNTAX = {("ethtool-stats", "sysfs/cn-notes-show_counters-mlx5_bond_0-hw_counters-ecn.txt")}

ALL = sorted(KINDS)


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(errors="replace")


def test_every_sample_of_these_kinds_is_known() -> None:
    dirs = ("ibstat", "rdma", "ethtool", "perfquery", "sysfs", "topology")
    on_disk = {str(p.relative_to(FIXTURES)) for d in dirs for p in (FIXTURES / d).iterdir()}
    assert on_disk == {name for name in OWN_SAMPLES if name.split("/")[0] in dirs}


@pytest.mark.parametrize("kind", ALL)
@pytest.mark.parametrize("text", ["", "\n\n   \n\t\n"], ids=["empty", "blank"])
def test_empty_input(kind: str, text: str) -> None:
    k = KINDS[kind]
    r = k.parse(text)
    assert len(k.data(r)) == 0 and r.problems == () and r.unknown_lines == 0


@pytest.mark.parametrize("kind", ALL)
def test_truncated_mid_line_keeps_what_was_read(kind: str) -> None:
    k = KINDS[kind]
    text = _read(k.sample)
    cut = int(len(text) * 0.6)
    while text[cut - 1] == "\n" or text[cut] == "\n":
        cut += 1
    r = k.parse(text[:cut])
    assert len(k.data(r)) > 0


@pytest.mark.parametrize("kind", ALL)
def test_binary_garbage(kind: str) -> None:
    rnd = random.Random(20260302)
    garbage = rnd.randbytes(1_000_000).decode(errors="replace")
    r = KINDS[kind].parse(garbage)
    assert len(KINDS[kind].data(r)) == 0
    assert r.unknown_lines > 1000
    assert len(r.problems) == MAX_LISTED + 1  # listing capped; the last says how many more
    assert r.problems[-1].reason.endswith("more problems not listed")


@pytest.mark.parametrize("kind", ALL)
def test_ten_megabytes(kind: str) -> None:
    """10 MB of a real capture repeated parses whole (its time is benchmarks/parsers.py's job)."""
    k = KINDS[kind]
    one = _read(k.sample)
    one = one if one.endswith("\n") else one + "\n"
    repeats = 10_000_000 // len(one) + 1
    r = k.parse(one * repeats)
    single = len(k.data(k.parse(one)))
    if k.accumulates:
        assert len(k.data(r)) == single * repeats
    else:
        assert len(k.data(r)) == single
        assert r.problems and len(r.problems) <= MAX_LISTED + 1  # the repeats are reported


@pytest.mark.parametrize("kind", ALL)
def test_another_tools_output_is_not_read_as_this_kind(kind: str) -> None:
    k = KINDS[kind]
    r = k.parse(_read(k.other))
    assert len(k.data(r)) == 0
    assert r.problems and r.unknown_lines > 0


@pytest.mark.parametrize("kind", ALL)
def test_no_other_capture_is_read_silently(kind: str) -> None:
    """Every capture in tests/fixtures of another kind gives nothing, or says what it skipped."""
    k = KINDS[kind]
    for path in sorted(FIXTURES.glob("*/*")):
        name = str(path.relative_to(FIXTURES))
        if OWN_SAMPLES.get(name) == kind or (kind == "ibstat" and OWN_SAMPLES.get(name) == "ibstatus"):
            continue
        if kind == "ibstatus" and OWN_SAMPLES.get(name) == "ibstat":
            continue
        r = k.parse(_read(name))
        assert len(k.data(r)) == 0 or r.problems, name
        if (kind, name) not in SAME_SYNTAX:
            assert len(k.data(r)) == 0, name


def test_truncated_json_is_reported() -> None:
    r = parse_lldp('{"lldp": {"interface": {"eth0": {"via": "LL')
    assert r.neighbors == () and r.unknown_lines == 1 and "invalid JSON" in r.problems[0].reason
    q = parse_rdma_qp('[{"ifname": "mlx5_0", "port": 1, "lqpn": 1, "type": "GSI"}, {"ifname": "mlx5_0", "po')
    assert [qp.lqpn for qp in q.qps] == [1]
    assert any("never closed" in p.reason for p in q.problems)
