"""A failed configuration check becomes a finding on the part it names: node or switch by the
inventory's role for the host, whatever the cluster calls its machines."""

from __future__ import annotations

from fleet.fabric.config_checks import CheckResult, ConfigReport, Verdict, report_event
from fleet.fabric.diagnosis import diagnose
from fleet.fabric.rules.context import DiagnosisInput

ROLES = {"dgx-a01": "node", "tor-7": "leaf", "core-1": "spine"}


def _failed(check: str, part: str) -> CheckResult:
    return CheckResult(check, part, Verdict.FAIL, "on", "off", culprits=(part,))


def _findings(*results: CheckResult, roles: dict[str, str] = ROLES) -> list[tuple[str, str, str, str, str]]:
    report = ConfigReport(1_000.0, "roce-lossless", results, {})
    data = DiagnosisInput(900.0, 1_060.0, events=[report_event(report, {})], roles=roles)
    return sorted((f.kind, f.node, f.nic, f.switch, f.port) for f in diagnose(data))


def test_parts_are_placed_by_the_hosts_role_not_by_its_name() -> None:
    found = _findings(_failed("nic_pfc", "dgx-a01:mlx5_1"), _failed("peermem", "dgx-a01"),
                      _failed("gpu_nic_path", "dgx-a01:gpu3"), _failed("switch_ecn", "tor-7"),
                      _failed("switch_pfc", "tor-7:swp12"), _failed("switch_mtu", "core-1"))
    assert found == sorted([
        ("misconfigured", "dgx-a01", "mlx5_1", "", ""),
        ("misconfigured", "dgx-a01", "", "", ""),
        ("misconfigured", "dgx-a01", "", "", ""),
        ("misconfigured", "", "", "tor-7", ""),
        ("misconfigured", "", "", "tor-7", "swp12"),
        ("misconfigured", "", "", "core-1", ""),
    ])


def test_a_host_the_store_has_no_role_for_is_a_node_when_the_part_names_a_nic_or_a_gpu() -> None:
    found = _findings(_failed("nic_pfc", "n17:mlx5_0"), _failed("gpu_nic_path", "n17:gpu0"),
                      _failed("switch_ecn", "sw3"), roles={})
    assert found == sorted([
        ("misconfigured", "n17", "mlx5_0", "", ""),
        ("misconfigured", "n17", "", "", ""),
        ("misconfigured", "", "", "sw3", ""),
    ])
