"""`fleet check fix`'s plan: the exact commands per host for each failed check, each rollback built from the
value read before, what needs a person left as advice, and every planned command one fleet can send."""

from __future__ import annotations

import pytest
from test_config_checks import fleet, nic, node, switch

from fleet.collectors.commands import CommandError, write_sysfs
from fleet.collectors.config_fix import build_fix_command
from fleet.fabric.config_checks import run_checks
from fleet.fabric.config_fix import FixPlan, line, plan_fixes
from fleet.fabric.roce_config import FleetConfig, RailPair, SwitchPortConfig
from fleet.fabric.roce_profile import DEFAULT_PROFILE


def plan(config: FleetConfig) -> FixPlan:
    return plan_fixes(run_checks(config, DEFAULT_PROFILE), config, DEFAULT_PROFILE)


def lines(config: FleetConfig, host: str) -> tuple[list[str], list[str]]:
    fix = plan(config).host(host)
    assert fix is not None
    for argv in (*fix.apply, *fix.rollback):
        build_fix_command(argv)  # every planned command is one fleet may send
    return [line(a) for a in fix.apply], [line(a) for a in fix.rollback]


def one_nic(**changes: object) -> FleetConfig:
    return fleet([node("gpu001", nics=(nic("gpu001", 0, **changes), nic("gpu001", 1))), node("gpu002")])


def test_a_healthy_fleet_plans_nothing() -> None:
    assert plan(fleet()) == FixPlan((), ())


@pytest.mark.parametrize(("changes", "apply", "rollback"), [
    ({"pfc": ()}, ["mlnx_qos -i enp0s0np0 --pfc 0,0,0,1,0,0,0,0"], ["mlnx_qos -i enp0s0np0 --pfc 0,0,0,0,0,0,0,0"]),
    ({"pfc": (3, 4)}, ["mlnx_qos -i enp0s0np0 --pfc 0,0,0,1,0,0,0,0"],
     ["mlnx_qos -i enp0s0np0 --pfc 0,0,0,1,1,0,0,0"]),
    ({"trust": "pcp", "dscp_to_priority": {}}, ["mlnx_qos -i enp0s0np0 --trust dscp"],
     ["mlnx_qos -i enp0s0np0 --trust pcp"]),
    ({"dscp_to_priority": {d: 0 if d == 26 else d // 8 for d in range(64)}},
     ["mlnx_qos -i enp0s0np0 --dscp2prio set,26,3"], ["mlnx_qos -i enp0s0np0 --dscp2prio set,26,0"]),
    ({"ecn_np": {3: False}, "ecn_rp": {3: False}},
     ["echo 1 > /sys/class/net/enp0s0np0/ecn/roce_np/enable/3", "echo 1 > /sys/class/net/enp0s0np0/ecn/roce_rp/enable/3"],
     ["echo 0 > /sys/class/net/enp0s0np0/ecn/roce_rp/enable/3", "echo 0 > /sys/class/net/enp0s0np0/ecn/roce_np/enable/3"]),
    ({"roce_mode": "IB/RoCE v1", "roce_tos": 0, "traffic_class": 0},
     ["cma_roce_mode -d mlx5_0 -p 1 -m 2", "cma_roce_tos -d mlx5_0 -p 1 -t 106",
      "echo 106 > /sys/class/infiniband/mlx5_0/tc/1/traffic_class"],
     ["echo 0 > /sys/class/infiniband/mlx5_0/tc/1/traffic_class", "cma_roce_tos -d mlx5_0 -p 1 -t 0",
      "cma_roce_mode -d mlx5_0 -p 1 -m 1"]),
    ({"netdev_mtu": 1500, "active_mtu": 1024}, ["ip link set dev enp0s0np0 mtu 9000"],
     ["ip link set dev enp0s0np0 mtu 1500"]),
])
def test_each_nic_setting_has_its_command_and_the_exact_inverse(changes: dict[str, object], apply: list[str],
                                                                 rollback: list[str]) -> None:
    assert lines(one_nic(**changes), "gpu001") == (apply, rollback)


def test_the_node_settings_and_the_order_of_a_rollback() -> None:
    rails = (RailPair("mlx5_0", 0, "PIX", ("0000:20:00.0", "0000:21:00.0"),
                      {"0000:21:00.0": ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd")}),
             RailPair("mlx5_1", 1, "PIX", ("0000:22:00.0",), {}))
    config = fleet([node("gpu001", peermem="", rails=rails, nics=(nic("gpu001", 0, pfc=()), nic("gpu001", 1))),
                    node("gpu002")])
    apply, rollback = lines(config, "gpu001")
    assert apply == ["mlnx_qos -i enp0s0np0 --pfc 0,0,0,1,0,0,0,0", "modprobe nvidia_peermem",
                     "setpci -s 0000:21:00.0 ECAP_ACS+0x6.w=0000"]
    assert rollback == ["setpci -s 0000:21:00.0 ECAP_ACS+0x6.w=001d", "modprobe -r nvidia_peermem",
                        "mlnx_qos -i enp0s0np0 --pfc 0,0,0,0,0,0,0,0"]


def test_nvue_settings_are_staged_and_applied_and_rolled_back_the_same_way() -> None:
    hosts = ["gpu001:mlx5_0", "gpu002:mlx5_0"]
    leaf = switch("leaf01", hosts, ecn_traffic_classes=(0,), trust="pcp",
                  dscp_to_priority={d: 0 if d == 26 else d // 8 for d in range(64)})
    leaf = switch("leaf01", hosts, ecn_traffic_classes=(0,), trust="pcp", dscp_to_priority=leaf.dscp_to_priority,
                  ports=(SwitchPortConfig("swp1", hosts[0], "host", (), 1500, False),
                         SwitchPortConfig("swp2", hosts[1], "host", (3,), 9216, True)))
    apply, rollback = lines(fleet(leaf=leaf), "leaf01")
    assert apply == [
        "nv set interface swp1 qos pfc profile default-global",
        "nv set qos congestion-control default-global traffic-class 3 ecn enable",
        "nv set interface swp1 qos pfc-watchdog state enable",
        "nv set qos mapping default-global trust both",
        "nv set qos mapping default-global dscp 26 switch-priority 3",
        "nv set interface swp1 link mtu 9216",
        "nv config apply -y"]
    assert rollback == [
        "nv set interface swp1 link mtu 1500",
        "nv set qos mapping default-global dscp 26 switch-priority 0",
        "nv set qos mapping default-global trust pcp",
        "nv set interface swp1 qos pfc-watchdog state disable",
        "nv set qos congestion-control default-global traffic-class 3 ecn disable",
        "nv unset interface swp1 qos pfc",
        "nv config apply -y"]


def test_sonic_settings_and_a_switch_wide_watchdog_name_every_port_it_changes() -> None:
    hosts = ["gpu001:mlx5_0", "gpu002:mlx5_0"]
    ports = (SwitchPortConfig("Ethernet0", hosts[0], "host", (), 9100, False),
             SwitchPortConfig("Ethernet4", hosts[1], "host", (3,), 9100, False),
             SwitchPortConfig("Ethernet8", "spine01:Ethernet0", "uplink", (3,), 9100, False),
             SwitchPortConfig("Ethernet12", "", "", None, 1500, True))
    leaf = switch("leaf01", hosts, os="sonic", trust="dscp", ecn_traffic_classes=(), ports=ports,
                  dscp_to_priority={d: 0 if d == 26 else d // 8 for d in range(64)})
    result = plan(fleet(leaf=leaf))
    apply, rollback = lines(fleet(leaf=leaf), "leaf01")
    assert apply == [
        "config interface pfc priority Ethernet0 3 on",
        "ecnconfig -q 3 on",
        "config pfcwd start --action drop Ethernet0 Ethernet4 Ethernet8 200 --restoration-time 200",
        "sonic-cfggen -a '{\"DSCP_TO_TC_MAP\":{\"AZURE\":{\"26\":\"3\"}}}' --write-to-db"]
    assert rollback == [
        "sonic-cfggen -a '{\"DSCP_TO_TC_MAP\":{\"AZURE\":{\"26\":\"0\"}}}' --write-to-db",
        "config pfcwd stop Ethernet0 Ethernet4 Ethernet8",
        "ecnconfig -q 3 off",
        "config interface pfc priority Ethernet0 3 off"]
    assert result.manual == ()


def test_what_needs_a_person_is_advice_and_never_a_command() -> None:
    config = fleet([node("gpu001", nics=(nic("gpu001", 0, firmware="28.36.1010", gid_index=5), nic("gpu001", 1)),
                         rails=(RailPair("mlx5_0", 0, "SYS"), RailPair("mlx5_1", 1, "PIX"))),
                    node("gpu002"), node("gpu003")])
    result = plan(config)
    assert result.hosts == ()
    assert {(m.check, m.part) for m in result.manual} == {
        ("versions_firmware", "gpu001:mlx5_0"), ("gid_index", "gpu001:mlx5_0"), ("gpu_nic_path", "gpu001:mlx5_0")}
    assert all(m.advice for m in result.manual)


@pytest.mark.parametrize("netdev", ["eth0; reboot", "eth0/../../../etc", "$(id)", "a b"])
def test_a_hostile_netdev_name_never_reaches_a_shell(netdev: str) -> None:
    fix = plan(one_nic(netdev=netdev, ecn_np={3: False})).host("gpu001")
    assert fix is not None
    with pytest.raises(CommandError):
        for argv in fix.apply:
            build_fix_command(argv)


@pytest.mark.parametrize(("path", "value"), [
    ("/etc/passwd", 1), ("/sys/class/net/../../etc/x", 1), ("/sys/class/net/eth0/mtu; id", 1),
    ("/sys/class/net/eth0/mtu", -1), ("/sys/class/net/eth0/mtu", True), ("/sys/class/net", 1),
    ("/sys/class/net/./mtu", 1)])
def test_write_sysfs_refuses_anything_but_a_number_into_a_sysfs_file(path: str, value: int) -> None:
    with pytest.raises(CommandError):
        write_sysfs(path, value)


def test_write_sysfs_is_the_plain_redirection() -> None:
    assert write_sysfs("/sys/class/net/enp12s0np0/ecn/roce_np/enable/3", 1).text == \
        "echo 1 > /sys/class/net/enp12s0np0/ecn/roce_np/enable/3"
