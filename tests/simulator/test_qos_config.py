"""The simulator's RoCE, PCIe and driver configuration: what the real tools print reads back through fleet's own
parsers and checks; each misconfiguration fault shows where the real one shows and nowhere else; the fix a
check proposes, typed into the simulated shell, restores the profile; the physics follow the configuration.

The reads go through ``fleet.collectors.config_read`` with a pool that types each command into the
in-process shell (no SSH: the end-to-end runs are in tests/console/test_cli_check.py).
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from sim_helpers import small_model

from fleet.collectors.config_read import read_node, read_switch
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import RunResult, SshPool
from fleet.fabric.config_checks import CheckResult, Verdict, run_checks
from fleet.fabric.roce_config import FleetConfig
from fleet.fabric.roce_profile import DEFAULT_PROFILE
from fleet.fabric.states import HostState
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, run_collect

NODES = ("gpu001", "gpu002", "gpu005")
"""gpu001/gpu002 behind the Cumulus leaves (leaf01..08), gpu005 behind the SONiC ones (leaf09..16)."""
SWITCHES = ("leaf02", "leaf10")
"""Rail 1's leaves: NVUE for gpu001/gpu002, SONiC for gpu005."""


class ShellPool:
    """``SshPool.run`` typed into the simulated shells."""

    def __init__(self, model: FleetModel) -> None:
        self.model = model
        self.rendezvous = Rendezvous()
        self.shells: dict[str, Shell] = {}

    def shell(self, host: str) -> Shell:
        if host not in self.shells:
            role = "node" if host in self.model.topology.nodes else "spine" if host.startswith("spine") else "leaf"
            self.shells[host] = Shell(Machine(host, role, self.model, self.rendezvous))
        return self.shells[host]

    async def run(self, host: str, cmd: Any, timeout_s: float) -> RunResult:
        del timeout_s
        out, err, status = await run_collect(self.shell(host), cmd.text)
        return RunResult(host, HostState.OK if status == 0 else HostState.COMMAND_FAILED, out, err, status)

    async def type(self, host: str, line: str) -> str:
        out, err, status = await run_collect(self.shell(host), line)
        assert status == 0, (host, line, err)
        return out


async def read(pool: ShellPool) -> FleetConfig:
    ssh = cast(SshPool, pool)
    nodes = tuple([await read_node(ssh, node, 10.0) for node in NODES])
    names = set(pool.model.topology.nodes)
    switches = tuple([await read_switch(ssh, InventoryHost(s, "leaf", os="sonic" if s >= "leaf09" else "cumulus"),
                                        {}, names, set(pool.model.topology.switches), 10.0) for s in SWITCHES])
    return FleetConfig(nodes, switches)


async def failures(pool: ShellPool) -> list[CheckResult]:
    config = await read(pool)
    assert all(not n.reason and not n.unread for n in config.nodes), [(n.reason, n.unread) for n in config.nodes]
    assert all(not s.reason and not s.unread for s in config.switches)
    report = run_checks(config, DEFAULT_PROFILE)
    assert report.unreachable == {}
    return [r for r in report.results if r.verdict is not Verdict.PASS]


def fault(kind: str, target: str, **params: object) -> str:
    return "\n".join(["[[faults]]", f'kind = "{kind}"', f'target = "{target}"',
                      *(f"{k} = {v}" for k, v in params.items())]) + "\n"


async def test_every_tool_reads_back_through_fleets_parsers_and_every_check_passes() -> None:
    pool = ShellPool(small_model())
    config = await read(pool)
    gpu001 = config.nodes[0]
    assert [n.nic for n in gpu001.nics] == [f"mlx5_{i}" for i in range(8)]
    nic = gpu001.nics[1]
    assert (nic.trust, nic.pfc, nic.dscp_to_priority[26], nic.roce_mode, nic.roce_tos) == \
        ("dscp", (3,), 3, "RoCE v2", 106)
    assert nic.ecn_np[3] and nic.ecn_rp[3] and nic.netdev_mtu == 9000 and nic.active_mtu == 4096
    assert nic.pcie is not None and not nic.pcie.below_capability
    assert gpu001.peermem == "nvidia_peermem" and len(gpu001.rails) == 8
    assert all(rail.path in ("PIX", "PXB") and not rail.acs_on for rail in gpu001.rails)
    cumulus, sonic = config.switches
    assert cumulus.trust and 3 in (cumulus.ecn_traffic_classes or ()) and cumulus.lossless_buffer
    assert sonic.trust == "dscp" and 3 in (sonic.ecn_traffic_classes or ()) and sonic.lossless_buffer
    assert all(port.pfc == (3,) and port.pfc_watchdog for s in config.switches for port in s.ports if port.checked)
    assert await failures(pool) == []


# (fault, the check that must fail, the part it must name, the fix restores the profile)
CASES = [
    (fault("pfc_disabled", "gpu002:mlx5_1"), "nic_pfc", "gpu002:mlx5_1", True),
    (fault("trust_pcp", "gpu002:mlx5_1"), "nic_trust", "gpu002:mlx5_1", True),
    (fault("dscp_map_mismatch", "gpu002:mlx5_1", dscp=26, priority=0), "nic_dscp_map", "gpu002:mlx5_1", True),
    (fault("ecn_disabled", "gpu002:mlx5_1"), "nic_dcqcn", "gpu002:mlx5_1", True),
    (fault("mtu_mismatch", "gpu002:mlx5_1", mtu=1500), "mtu", "gpu002:mlx5_1", True),
    (fault("gid_index_mismatch", "gpu002:mlx5_1"), "gid_index", "gpu002:mlx5_1", False),
    (fault("firmware_drift", "gpu002:mlx5_1"), "versions_firmware", "gpu002:mlx5_1", False),
    (fault("peermem_missing", "gpu002"), "peermem", "gpu002", True),
    (fault("acs_enabled", "gpu002:gpu1"), "pcie_acs", "gpu002:gpu1", True),
    (fault("pcie_downtrained", "gpu002:gpu1", gts=16.0, width=16), "pcie_link", "gpu002:gpu1", False),
    (fault("pcie_downtrained", "gpu002:mlx5_1", gts=32.0, width=8), "pcie_link", "gpu002:mlx5_1", False),
    (fault("nic_far_from_gpu", "gpu002:mlx5_1"), "gpu_nic_path", "gpu002:mlx5_1", False),
    (fault("pfc_disabled", "leaf10:Ethernet8"), "switch_pfc", "leaf10:Ethernet8", True),
    (fault("ecn_disabled", "leaf02"), "switch_ecn", "leaf02", True),
    (fault("ecn_disabled", "leaf10"), "switch_ecn", "leaf10", True),
    (fault("pfc_watchdog_disabled", "leaf02"), "switch_pfc_watchdog", "leaf02", True),
    (fault("pfc_watchdog_disabled", "leaf10:Ethernet8"), "switch_pfc_watchdog", "leaf10:Ethernet8", True),
    (fault("trust_pcp", "leaf02"), "switch_trust", "leaf02", True),
    (fault("dscp_map_mismatch", "leaf10", dscp=26, priority=0), "switch_dscp_map", "leaf10", True),
    (fault("mtu_mismatch", "leaf02:swp2", mtu=1500), "switch_mtu", "leaf02:swp2", True),
]


def _switch_port(model: FleetModel, node: str, rail: int) -> str:
    leaf, port = model.nic_cable(node, rail, model.effects(0.0))
    return f"{leaf}:{port}"


@pytest.mark.parametrize(("faults", "check", "culprit", "fixable"), CASES,
                         ids=[f"{c[1]}-{c[2]}" for c in CASES])
async def test_a_misconfiguration_is_named_exactly_and_its_fix_restores_the_profile(
        faults: str, check: str, culprit: str, fixable: bool) -> None:
    model = small_model(faults)
    pool = ShellPool(model)
    failed = await failures(pool)
    named = {(r.check, part) for r in failed for part in r.culprits if r.verdict is Verdict.FAIL}
    # a switch-side setting is also seen from across the link (the link checks name both ends)
    own = {(c, p) for c, p in named if not c.startswith("link_")}
    assert own == {(check, culprit)}, failed
    assert {p for c, p in named if c.startswith("link_")} <= {culprit, *_peers(model, culprit)}
    # what cannot be judged because of it (the DSCP map under PCP trust) warns about the same part only
    assert {part for r in failed if r.verdict is Verdict.WARN for part in r.culprits} <= {culprit}
    if not fixable:
        return
    for result in failed:
        if result.check.startswith("link_"):
            continue
        host = result.target.partition(":")[0]
        for line in result.fix.split("; "):
            await pool.type(host, line)
        if host.startswith("leaf") and host < "leaf09":
            await pool.type(host, "nv config apply -y")
    assert await failures(pool) == []


def _peers(model: FleetModel, culprit: str) -> set[str]:
    """The far end of a NIC's cable, or the NICs behind a switch (port)."""
    host, _, part = culprit.partition(":")
    if part.startswith("mlx5_"):
        return {_switch_port(model, host, int(part.removeprefix("mlx5_")))}
    return {f"{node}:mlx5_{rail}" for node in NODES for rail in range(8)
            if _switch_port(model, node, rail).startswith(f"{host}:{part}")}


async def test_nvue_config_apply_of_the_previous_revision_rolls_a_fix_back() -> None:
    model = small_model(fault("ecn_disabled", "leaf02"))
    pool = ShellPool(model)
    await pool.type("leaf02", "nv set qos congestion-control default-global traffic-class 3 ecn enable")
    await pool.type("leaf02", "nv config apply -y")
    assert "3" in (await pool.type("leaf02", "nv show qos roce"))
    assert await failures(pool) == []
    await pool.type("leaf02", "nv config apply startup -y")
    assert [r.check for r in await failures(pool)] == ["switch_ecn"]


async def test_sysfs_module_and_pci_writes_are_what_the_tools_then_print() -> None:
    pool = ShellPool(small_model())
    netdev = (await pool.type("gpu002", "ls /sys/class/infiniband/mlx5_1/device/net")).strip()
    await pool.type("gpu002", f"echo 0 > /sys/class/net/{netdev}/ecn/roce_np/enable/3")
    assert (await pool.type("gpu002", f"cat /sys/class/net/{netdev}/ecn/roce_np/enable/3")).strip() == "0"
    await pool.type("gpu002", "modprobe -r nvidia_peermem")
    assert "nvidia_peermem" not in await pool.type("gpu002", "lsmod")
    await pool.type("gpu002", f"ip link set dev {netdev} mtu 4200")
    assert (await pool.type("gpu002", f"cat /sys/class/net/{netdev}/mtu")).strip() == "4200"
    checks = {(r.check, r.target) for r in await failures(pool)}
    assert {("nic_dcqcn", "gpu002:mlx5_1"), ("peermem", "gpu002")} <= checks
    assert any(check == "mtu" for check, _ in checks)
    _out, err, status = await run_collect(pool.shell("gpu002"), "echo 1 > /sys/class/net/eth9/ecn/roce_np/enable/3")
    assert status == 2 and "Directory nonexistent" in err


def _leaf_drops(model: FleetModel, leaf: str, a: float, b: float) -> int:
    first = {p.name: p.tx_drops for p in model.switch_view(leaf, a).ports}
    return sum(p.tx_drops - first[p.name] for p in model.switch_view(leaf, b).ports)


@pytest.mark.parametrize("off", ["nic", "port"])
def test_without_pfc_congestion_drops_where_it_would_have_paused(off: str) -> None:
    congested = fault("ecn_disabled", "gpu002:mlx5_1")  # no DCQCN: the leaf pauses gpu001's NIC hard
    base = small_model(congested)
    sender = "gpu001:mlx5_1" if off == "nic" else _switch_port(base, "gpu001", 1)
    model = small_model(congested + fault("pfc_disabled", sender))
    leaf = _switch_port(model, "gpu001", 1).partition(":")[0]
    pauses = lambda m: m.node_view("gpu001", 60.0).nics[1].ethtool["rx_prio3_pause"] - \
        m.node_view("gpu001", 30.0).nics[1].ethtool["rx_prio3_pause"]  # noqa: E731
    assert pauses(base) > 1000 and _leaf_drops(base, leaf, 30.0, 60.0) == 0
    assert pauses(model) == 0 and _leaf_drops(model, leaf, 30.0, 60.0) > 1000


async def test_a_pfc_fix_stops_the_drops_from_the_moment_it_is_written() -> None:
    model = small_model(fault("ecn_disabled", "gpu002:mlx5_1") + fault("pfc_disabled", "gpu001:mlx5_1"))
    pool = ShellPool(model)
    netdev = (await pool.type("gpu001", "ls /sys/class/infiniband/mlx5_1/device/net")).strip()
    written = model.now()
    await pool.type("gpu001", f"mlnx_qos -i {netdev} --pfc 0,0,0,1,0,0,0,0")
    leaf = _switch_port(model, "gpu001", 1).partition(":")[0]
    assert _leaf_drops(model, leaf, written + 1.0, written + 30.0) == 0
    view = lambda t: model.node_view("gpu001", t).nics[1].ethtool["rx_prio3_pause"]  # noqa: E731
    assert view(written + 30.0) - view(written + 1.0) > 1000


def test_ecn_off_on_a_switch_queue_turns_cnps_into_pauses() -> None:
    base, model = small_model(), small_model(fault("ecn_disabled", "leaf02"))
    cnp = lambda m: sum(m.node_view(n, 60.0).nics[1].hw_counters["np_cnp_sent"] -  # noqa: E731
                        m.node_view(n, 30.0).nics[1].hw_counters["np_cnp_sent"] for n in ("gpu001", "gpu002"))
    pause = lambda m: sum(m.node_view(n, 60.0).nics[1].ethtool["rx_prio3_pause"] -  # noqa: E731
                          m.node_view(n, 30.0).nics[1].ethtool["rx_prio3_pause"] for n in ("gpu001", "gpu002"))
    assert cnp(model) < cnp(base) / 2  # what the spines and the far leaves mark still comes back
    assert pause(model) > 3 * max(1, pause(base))
