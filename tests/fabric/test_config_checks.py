"""The configuration checks on plain configurations: a healthy fleet passes everything, each kind of
misconfiguration fails its checks and names exactly the part at fault, the profile file parses."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fleet.fabric.config_checks import CHECKS, ConfigReport, Verdict, run_checks
from fleet.fabric.roce_config import (
    FleetConfig,
    GpuConfig,
    LinkEnds,
    NicConfig,
    NodeConfig,
    PcieLinkState,
    RailPair,
    SwitchConfig,
    SwitchPortConfig,
)
from fleet.fabric.roce_profile import DEFAULT_PROFILE, ProfileError, parse_profile

DOCS = Path(__file__).parents[2] / "docs"
DSCP_MAP = {d: d // 8 for d in range(64)}
GEN5 = PcieLinkState(32.0, 16, 32.0, 16)


def nic(node: str, rail: int, **changes: object) -> NicConfig:
    base = NicConfig(node, f"mlx5_{rail}", f"enp{rail}s0np0", "Ethernet", "dscp", (3,), DSCP_MAP,
                     {p: "ets" if p in (0, 3) else "strict" if p == 6 else "ets" for p in range(8)},
                     {3: True}, {3: True}, "RoCE v2", 106, 106, 9000, 4096, 3, "28.39.1002",
                     f"0000:{rail:02x}:00.0", GEN5)
    return replace(base, **changes)  # type: ignore[arg-type]


def node(name: str, count: int = 2, **changes: object) -> NodeConfig:
    base = NodeConfig(name, "", tuple(nic(name, r) for r in range(count)),
                      tuple(GpuConfig(name, r, f"0000:{r + 16:02x}:00.0", GEN5) for r in range(count)),
                      tuple(RailPair(f"mlx5_{r}", r, "PIX", (f"0000:{r + 32:02x}:00.0",), {}) for r in range(count)),
                      "nvidia_peermem", "MLNX_OFED_LINUX-24.04-0.7.0.0", "550.90.07", "5.15.0-119-generic")
    return replace(base, **changes)  # type: ignore[arg-type]


def switch(name: str, hosts: list[str], **changes: object) -> SwitchConfig:
    ports = tuple(SwitchPortConfig(f"swp{i + 1}", peer, "host", (3,), 9216, True) for i, peer in enumerate(hosts))
    ports += (SwitchPortConfig("swp9", "spine01:swp1", "uplink", (3,), 9216, True),
              SwitchPortConfig("swp10", "", "", None, 1500, False))
    base = SwitchConfig(name, "cumulus", "", "pcp,dscp", DSCP_MAP, (0, 3), 150000, 1500000, True,
                        "roce-reserved-egress", ports)
    return replace(base, **changes)  # type: ignore[arg-type]


def fleet(nodes: list[NodeConfig] | None = None, leaf: SwitchConfig | None = None) -> FleetConfig:
    nodes = nodes or [node("gpu001"), node("gpu002")]
    hosts = [f"{n.node}:mlx5_0" for n in nodes]
    leaf = leaf or switch("leaf01", hosts)
    links = tuple(LinkEnds(n.node, "mlx5_0", "leaf01", f"swp{i + 1}") for i, n in enumerate(nodes))
    return FleetConfig(tuple(nodes), (leaf,), links)


def failing(report: ConfigReport) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for result in report.results:
        if result.verdict is not Verdict.PASS:
            found.setdefault(result.check, set()).update(result.culprits)
    return found


def test_a_healthy_fleet_passes_every_check() -> None:
    report = run_checks(fleet(), DEFAULT_PROFILE)
    assert failing(report) == {}
    assert {s.check for s in report.summaries()} == {c.id for c in CHECKS}


@pytest.mark.parametrize(("nodes", "expected"), [
    ([node("gpu001", nics=(nic("gpu001", 0, pfc=()), nic("gpu001", 1))), node("gpu002")],
     {"nic_pfc": {"gpu001:mlx5_0"}, "link_pfc": {"gpu001:mlx5_0"}}),
    ([node("gpu001", nics=(nic("gpu001", 0, trust="pcp", dscp_to_priority={}), nic("gpu001", 1))), node("gpu002")],
     {"nic_trust": {"gpu001:mlx5_0"}, "nic_dscp_map": {"gpu001:mlx5_0"}, "link_dscp": {"gpu001:mlx5_0"}}),
    ([node("gpu001", nics=(nic("gpu001", 0, dscp_to_priority={**DSCP_MAP, 26: 0}), nic("gpu001", 1))),
      node("gpu002")],
     {"nic_dscp_map": {"gpu001:mlx5_0"}, "link_dscp": {"gpu001:mlx5_0"}}),
    ([node("gpu001", nics=(nic("gpu001", 0, ecn_np={3: False}), nic("gpu001", 1))), node("gpu002")],
     {"nic_dcqcn": {"gpu001:mlx5_0"}}),
    ([node("gpu001", nics=(nic("gpu001", 1, netdev_mtu=1500, active_mtu=1024), nic("gpu001", 0))),
      node("gpu002"), node("gpu003")],
     {"mtu": {"gpu001:mlx5_1"}}),
    ([node("gpu001", nics=(nic("gpu001", 0, gid_index=5), nic("gpu001", 1))), node("gpu002"), node("gpu003")],
     {"gid_index": {"gpu001:mlx5_0"}}),
    ([node("gpu001", peermem=""), node("gpu002")], {"peermem": {"gpu001"}}),
    ([node("gpu001", rails=(RailPair("mlx5_0", 0, "PIX", ("0000:20:00.0",), {"0000:20:00.0": ("ReqRedir",)}),
                            RailPair("mlx5_1", 1, "PIX", ("0000:21:00.0",), {}))), node("gpu002")],
     {"pcie_acs": {"gpu001:gpu0"}}),
    ([node("gpu001", gpus=(GpuConfig("gpu001", 0, "", PcieLinkState(16.0, 16, 32.0, 16)),
                           GpuConfig("gpu001", 1, "", GEN5))), node("gpu002")],
     {"pcie_link": {"gpu001:gpu0"}}),
    ([node("gpu001", rails=(RailPair("mlx5_0", 0, "SYS", ("0000:00:01.1", "0000:80:01.1")),
                            RailPair("mlx5_1", 1, "PIX", ("0000:21:00.0",)))), node("gpu002")],
     {"gpu_nic_path": {"gpu001:mlx5_0"}}),
    ([node("gpu001", nics=(nic("gpu001", 0, firmware="28.36.1010"), nic("gpu001", 1))), node("gpu002")],
     {"versions_firmware": {"gpu001:mlx5_0"}}),
    ([node("gpu001", kernel="6.8.0-45-generic"), node("gpu002"), node("gpu003")], {"versions_kernel": {"gpu001"}}),
])  # fmt: skip
def test_each_node_misconfiguration_names_its_part_and_nothing_else(nodes: list[NodeConfig],
                                                                    expected: dict[str, set[str]]) -> None:
    assert failing(run_checks(fleet(nodes), DEFAULT_PROFILE)) == expected


def test_switch_misconfigurations_name_the_port_or_the_whole_switch() -> None:
    nodes = [node("gpu001"), node("gpu002")]
    hosts = ["gpu001:mlx5_0", "gpu002:mlx5_0"]
    leaf = switch("leaf01", hosts)
    ports = list(leaf.ports)
    ports[0] = replace(ports[0], pfc=())
    ports[1] = replace(ports[1], mtu=1500)
    broken = replace(leaf, ports=tuple(replace(p, pfc_watchdog=False) for p in ports), ecn_traffic_classes=(0,),
                     trust="pcp", lossless_buffer=False, buffer="")
    report = run_checks(fleet(nodes, broken), DEFAULT_PROFILE)
    assert failing(report) == {
        "switch_pfc": {"leaf01:swp1"}, "link_pfc": {"leaf01:swp1"},
        "switch_ecn": {"leaf01"}, "switch_pfc_watchdog": {"leaf01"}, "switch_trust": {"leaf01"},
        "switch_mtu": {"leaf01:swp2"}, "link_mtu": {"leaf01:swp2"}, "switch_buffer": {"leaf01"},
        "link_dscp": {"leaf01"},
    }
    ecn = next(r for r in report.results if r.check == "switch_ecn")
    assert "min 150000 B, max 1500000 B" in ecn.found and ecn.fix.startswith("nv set qos congestion-control")
    watchdog = next(r for r in report.results if r.check == "switch_pfc_watchdog")
    assert watchdog.found.startswith("on all 3 ports")  # the unused swp10 is not judged


def test_unreachable_hosts_are_listed_not_judged() -> None:
    nodes = [node("gpu001"), NodeConfig("gpu002", reason="unreachable: connection refused")]
    report = run_checks(fleet(nodes), DEFAULT_PROFILE)
    assert report.unreachable == {"gpu002": "unreachable: connection refused"} and failing(report) == {}


def test_a_value_that_could_not_be_read_warns_and_names_the_part() -> None:
    nodes = [node("gpu001", nics=(nic("gpu001", 0, trust="", unread=("mlnx_qos: not found",)), nic("gpu001", 1))),
             node("gpu002")]
    report = run_checks(fleet(nodes), DEFAULT_PROFILE)
    trust = next(r for r in report.results if r.check == "nic_trust" and r.target == "gpu001:mlx5_0")
    assert trust.verdict is Verdict.WARN and "mlnx_qos: not found" in trust.found
    assert report.culprits() == set()  # nothing failed


def test_the_report_survives_json() -> None:
    report = run_checks(fleet([node("gpu001", peermem=""), node("gpu002")]), DEFAULT_PROFILE, ts=12.5)
    again = ConfigReport.from_json(report.to_json())
    assert again.results == report.results and again.ts == 12.5


def test_the_example_profile_is_the_default() -> None:
    text = (DOCS / "roce-profile.example.toml").read_text()
    assert parse_profile(text, "roce-profile.example.toml") == DEFAULT_PROFILE


def test_a_site_profile_changes_the_expectation() -> None:
    profile = parse_profile('[roce]\nlossless_priority = 4\nroce_dscp = 34\n[fleet]\ngid_index = 3\n')
    assert profile.dscp_to_priority == {34: 4, 48: 6} and profile.gid_index == 3
    report = run_checks(fleet(), profile)
    assert "nic_pfc" in failing(report)


@pytest.mark.parametrize(("text", "words"), [
    ("[roce]\nlosless_priority = 3\n", ":2: [roce] losless_priority: unknown key"),
    ("[nic]\ntrust = 'pcpp'\n", "must be one of dscp, pcp"),
    ("[roce]\nlossless_priority = 9\n", "between 0 and 7"),
    ("[switches]\nmtu = 9216\n", "[switches]: unknown table"),
    ("[fleet]\nsame_versions = ['bios']\n", "'bios' is not one of"),
    ("[roce\n", "not valid TOML"),
])  # fmt: skip
def test_profile_mistakes_are_named_with_their_line(text: str, words: str) -> None:
    with pytest.raises(ProfileError, match=None) as error:
        parse_profile(text, "site.toml")
    assert words in str(error.value) and str(error.value).startswith("site.toml")
