"""The link test's per-NIC verdicts: state, rate, error deltas, optics and LLDP against the plan."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.inventory import CablingRow
from fleet.collectors.parsers.ethtool_module import EthtoolModule, parse_ethtool_module
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.collectors.probes import nic_checks
from fleet.collectors.probes.nic_checks import (
    NodeChecks,
    expected_rate,
    judge,
    netdevs_of,
    sections,
)
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, run_collect


def node(**overrides: object) -> NodeChecks:
    checks = NodeChecks("gpu001")
    checks.ports = {"mlx5_0": {"state": "ACTIVE", "rate_gbps": 400.0, "counters": {"symbol_error": 5}}}
    checks.netdevs = {"mlx5_0": "enp12s0np0"}
    checks.lldp = {"enp12s0np0": ("leaf01", "swp1")}
    checks.optics = {"enp12s0np0": (0.9, 8.9)}
    checks.after = {"mlx5_0": {"symbol_error": 5}}
    for key, value in overrides.items():
        setattr(checks, key, value)
    return checks


PLAN = {("gpu001", "mlx5_0"): CablingRow("gpu001", "mlx5_0", "leaf01", "swp1")}


def test_a_healthy_nic_has_no_problem() -> None:
    [check] = judge(node(), PLAN, 400.0)
    assert check.problems == () and not check.cable_suspect
    assert (check.lldp_switch, check.planned_switch, check.rx_margin_db) == ("leaf01", "leaf01", 8.9)


def test_each_cable_symptom_flags_the_cable() -> None:
    symptoms = {
        "miswired": node(lldp={"enp12s0np0": ("leaf02", "swp7")}),
        "slow": node(ports={"mlx5_0": {"state": "ACTIVE", "rate_gbps": 200.0, "counters": {"symbol_error": 5}}}),
        "errors": node(after={"mlx5_0": {"symbol_error": 905}}),
        "dim": node(optics={"enp12s0np0": (-7.5, 0.5)}),
        "dark": node(optics={"enp12s0np0": (float("-inf"), float("-inf"))}),
    }
    words = {
        "miswired": "LLDP sees leaf02 swp7, the cabling plan says leaf01 swp1",
        "slow": "trained at 200 Gb/s, expected 400 Gb/s",
        "errors": "symbol_error +900 during the test",
        "dim": "rx power -7.50 dBm, only 0.50 dB above the module's low threshold",
        "dark": "no light received",
    }
    for name, checks in symptoms.items():
        [check] = judge(checks, PLAN, 400.0)
        assert check.cable_suspect, name
        assert check.problems == (words[name],), name


def test_a_down_port_is_a_nic_problem_not_a_cable_verdict() -> None:
    [check] = judge(node(ports={"mlx5_0": {"state": "DOWN", "rate_gbps": 400.0, "counters": {}}}), PLAN, 400.0)
    assert check.problems == ("port state DOWN",) and not check.cable_suspect


def test_expected_rate_is_what_most_nics_trained_at() -> None:
    fleet = [node(), node(), node(ports={"mlx5_0": {"state": "ACTIVE", "rate_gbps": 200.0, "counters": {}}})]
    assert expected_rate(fleet) == 400.0
    assert expected_rate([]) is None


def test_sections_and_netdevs_are_split_from_one_output() -> None:
    text = ("=== fleet-linktest sysfs\nA:1\n=== fleet-linktest net\n"
            "/sys/class/infiniband/mlx5_0/device/net:\nenp12s0np0\n\n"
            "/sys/class/infiniband/mlx5_1/device/net:\nenp31s0np0\n")
    parts = sections(text)
    assert parts["sysfs"] == "A:1\n"
    assert netdevs_of(parts["net"]) == {"mlx5_0": "enp12s0np0", "mlx5_1": "enp31s0np0"}


def _margin_inputs(module: EthtoolModule) -> tuple[object, ...]:
    """What ``_rx_margin`` reads of a parsed module: each lane's bias and rx power, the rx power thresholds."""
    lanes = tuple((lane.lane, lane.tx_bias_ma, lane.rx_power_dbm) for lane in module.lanes
                  if lane.rx_power_dbm is not None)
    return lanes, {k: v for k, v in module.thresholds.items() if k.startswith("rx_power")}


async def test_the_optics_margin_reads_the_same_from_the_kept_lines() -> None:
    captured = [path.read_text(encoding="utf-8") for path in
                sorted((Path(__file__).parents[2] / "fixtures/ethtool").glob("*ethtool-m*"))]
    simulated = []
    for fault in ("", 'kind = "optics_attenuation"\ntarget = "gpu001:mlx5_1"\ndb = 9',
                  'kind = "optics_attenuation"\ntarget = "gpu001:mlx5_1"\ndb = 40'):  # healthy, dim, all but dark
        text = '[fabric]\nnodes = 2\nnodes_per_leaf = 2\nspines = 1\nlink_layer = "roce"\nseed = 1\n'
        shell = Shell(Machine("gpu001", "node", FleetModel(parse_scenario(
            text + (f"[[faults]]\n{fault}\nat = 0\n" if fault else ""))), Rendezvous()))
        netdevs = netdevs_of((await run_collect(shell, "ls /sys/class/infiniband/*/device/net"))[0])
        simulated.append((await run_collect(shell, f"ethtool -m {netdevs['mlx5_1']}"))[0])
    assert len(captured) >= 2 and len({nic_checks._rx_margin(t) for t in simulated}) == 3
    for text in captured + simulated:
        kept = nic_checks._margin_lines(text)
        assert len(kept.splitlines()) < len(text.splitlines()) / 2
        assert _margin_inputs(parse_ethtool_module(kept)) == _margin_inputs(parse_ethtool_module(text))
        assert _margin_inputs(parse_ethtool_module(text))[0]  # there was something to read


async def test_the_checks_after_read_the_files_named_before_as_the_pattern_reads_them() -> None:
    """Named files (a probe runner starts the grep without a shell) read what the pattern reads."""
    text = '[fabric]\nnodes = 2\nnodes_per_leaf = 2\nspines = 1\nlink_layer = "roce"\nseed = 1\n'
    shell = Shell(Machine("gpu001", "node", FleetModel(parse_scenario(text)), Rendezvous()))
    by_pattern = nic_checks.after_command()
    assert by_pattern.argv == ()  # a shell must expand it
    checks = NodeChecks("gpu001")
    for port in parse_sysfs((await run_collect(shell, by_pattern.text))[0]).ports:
        checks.ports[port.device] = {"port": port.port, "counters": port.counters}
    by_name = nic_checks.after_command(checks)
    assert by_name.argv and not any("*" in word for word in by_name.argv)
    assert len(by_name.argv) == 3 + 8 * len(nic_checks.ERROR_COUNTERS)
    assert [(p.device, p.port, set(p.counters)) for p in
            parse_sysfs((await run_collect(shell, by_name.text))[0]).ports] == \
        [(d, 1, set(port["counters"])) for d, port in sorted(checks.ports.items())]  # type: ignore[arg-type]


def test_a_device_name_that_is_not_a_plain_word_is_never_made_a_path() -> None:
    for name in ("../../etc", "mlx5_0;reboot", "-rf", ""):
        checks = node(ports={name: {"port": 1, "counters": {"symbol_error": 0}}})
        assert nic_checks.after_command(checks) == nic_checks.after_command()
