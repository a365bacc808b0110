"""The simulator's fast paths print exactly what the straightforward full build prints.

The fast path answers a stateless line at once (``Shell.run_now``) and reads a
node through its parts (``NodeParts``, the sysfs ``LazyTree``: a fixed layout,
values per NIC section); the reference runs the same line through the async
``Shell.run`` on a context holding the node's whole ``NodeView`` (so sysfs is
``build_tree`` of it, as before the fast path existed). Both run at the same
simulated instant, on scenarios with faults that change the values, the link
state and the cabling, and must agree byte for byte.
"""

from __future__ import annotations

import pytest
from sim_helpers import small_model

from fleet.collectors.command_mode import CommandModeNode
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous, StreamIO
from fleet.simulator.shell import Shell
from fleet.simulator.tools import ToolContext
from fleet.simulator.tools.sysfs import Layout
from fleet.simulator.traffic import SwitchConfig

SYS = "/sys/class/infiniband"
NODE_LINES = (
    f"grep -H . {SYS}/*/ports/*/counters/*",
    f"grep -H . {SYS}/*/ports/*/counters/* {SYS}/*/ports/*/hw_counters/* {SYS}/*/ports/*/state "
    f"{SYS}/*/ports/*/phys_state {SYS}/*/ports/*/rate {SYS}/*/ports/*/link_layer",
    f"grep -H . {SYS}/*/fw_ver {SYS}/*/ports/*/counters/{{port_xmit_data,port_rcv_data}}",
    f"ls {SYS}/*/device/net",
    "ls /sys/class/net",
    f"ls {SYS}/mlx5_0/ports/1 {SYS}/mlx5_0/ports/1/state /nope",
    f"cat {SYS}/mlx5_3/ports/1/state {SYS}/mlx5_3/ports/1/rate /nope {SYS}",
    f"cat {SYS}/*/node_guid {SYS}/*/ports/1/gids/* {SYS}/*/ports/1/gid_attrs/*/*",
    "grep -r . /sys/class/net",
    f"grep -rH . {SYS}/mlx5_2",
    f"grep -c . {SYS}/*/ports/*/counters/*",
    f"grep -v 0 {SYS}/*/ports/*/counters/*",
    f"grep -h . {SYS}/mlx5_1/ports/1/counters/*",
    f"grep -s . /nope {SYS}/mlx5_1/ports/1/counters/symbol_error",
    f"grep . /nope {SYS}//mlx5_1/ports/1/counters/link_downed {SYS}/mlx5_1/ports/",
    "grep -E '^[0-9]+$' /sys/class/net/*/statistics/*",
    f"grep -i active {SYS}/*/ports/*/state",
    f"grep -H . {SYS}/*/ports/*/counters/port_xmit_data | head -3",
    "ethtool -S enp12s0np0; ethtool -m enp12s0np0; ethtool -S ibp12s0",
    "ethtool enp31s0np0; ethtool -m enp31s0np0; ethtool -S enp31s0np0; ethtool -m nope0; ethtool -S nope0; ethtool nope0",
    "ethtool ibp31s0; ethtool -m ibp31s0; ethtool -S ibp31s0",
    "lldpctl enp59s0np0; lldpctl -f keyvalue; lldpcli -f json show neighbors ports enp31s0np0,enp59s0np0",
    "rdma -j res show",
    "nvidia-smi --query-gpu=index,name,utilization.gpu,temperature.gpu --format=csv,noheader",
    "ibstat; ibv_devinfo; show_gids",
    "show_gids mlx5_1 1; show_gids mlx5_9; show_gids mlx5_2 2; ethtool --module-info enp12s0np0",
    "lldpctl -f json",
    "perfquery",
    "hostname; uname -r; nope; exit 3",
)
SWITCH_LINES = (
    "nv show interface",
    "nv show interface swp1 counters -o json",
    "show interfaces counters",
    "show pfc counters",
    "lldpctl -f json",
)
FAULTS = {
    "healthy": "",
    "link_down": '[[faults]]\nkind = "link_down"\ntarget = "gpu002:mlx5_1"\nat = 10\n',
    "flapping": '[[faults]]\nkind = "link_flap"\ntarget = "gpu002:mlx5_1"\nperiod = 20\nat = 10\n',
    "miswire": '[[faults]]\nkind = "miswire"\ntarget = ["gpu001:mlx5_2", "gpu003:mlx5_2"]\nat = 10\n',
    "storm_and_rate": (
        '[[faults]]\nkind = "pfc_storm"\ntarget = "gpu004:mlx5_6"\nat = 10\n'
        '[[faults]]\nkind = "degraded_rate"\ntarget = "gpu001:mlx5_0"\ngbps = 200\nat = 10\n'
        '[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu003:mlx5_2"\ndb = 16\nat = 10\n'
    ),
}
TIMES = (5.0, 12.5, 61.0)
HOSTS = ("gpu001", "gpu002", "gpu003", "gpu004", "gpu008")  # the faults' targets, their peers, a bystander


class FullBuildShell(Shell):
    """The reference: every command sees the node's whole view, built up front."""

    def tool_context(self, t: float) -> ToolContext:
        model, host, role = self.machine.model, self.machine.host, self.machine.role
        return ToolContext(
            hostname=host,
            now=model.unix(t),
            node=model.node_view(host, t) if role == "node" else None,
            switch=model.switch_view(host, t) if role in ("leaf", "spine") else None,
            jobs=lambda: model.jobs_view(t),
            all_nodes=model.views(t),
            all_switches=lambda: tuple(model.switch_view(s, t) for s in model.topology.switches),
        )


def at(model: FleetModel, t: float) -> None:
    """Freeze the model's clock at ``t``: both paths must see one instant."""
    model.now = lambda: t  # type: ignore[method-assign]


async def full_build(shell: Shell, line: str) -> tuple[str, str, int]:
    out: list[str] = []
    err: list[str] = []
    status = await shell.run(line, StreamIO(out.append, err.append))
    return "".join(out), "".join(err), status


def fast(shell: Shell, line: str) -> tuple[str, str, int]:
    answer = shell.run_now(line)
    assert answer is not None, line
    chunks, status = answer
    return "".join(t for s, t in chunks if s == 1), "".join(t for s, t in chunks if s == 2), status


def collector_lines(model: FleetModel) -> tuple[str, ...]:
    """The command-mode collector's tick lines: the first (learning netdevs) and a later one (optics)."""
    node = CommandModeNode("any")
    first = node.tick_command().text
    node.netdevs = {f"mlx5_{rail}": model.netdev(rail) for rail in range(8)}
    return first, node.tick_command().text


@pytest.mark.parametrize("link_layer", ["roce", "ib"])
@pytest.mark.parametrize("faults", sorted(FAULTS))
async def test_node_commands_match_the_full_build(faults: str, link_layer: str) -> None:
    model = small_model(FAULTS[faults], link_layer=link_layer)
    lines = NODE_LINES + collector_lines(model)
    for t in TIMES:
        at(model, t)
        for host in HOSTS:
            machine = Machine(host, "node", model, Rendezvous())
            quick, reference = Shell(machine), FullBuildShell(machine)
            for line in lines:
                assert fast(quick, line) == await full_build(reference, line), (faults, t, host, line)


async def test_switch_commands_match_the_full_build() -> None:
    model = small_model(FAULTS["link_down"])
    model.apply_switch_config("leaf01", 20.0, SwitchConfig(hash_seed=7), restart=True, message="seed")
    for t in (11.0, 21.0, 40.0):
        at(model, t)
        for switch in ("leaf01", "leaf09", "spine01"):
            machine = Machine(switch, model.topology.role_of(switch), model, Rendezvous())
            for line in SWITCH_LINES:
                reference = await full_build(FullBuildShell(machine), line)
                assert fast(Shell(machine), line) == reference, (t, switch, line)


async def test_a_switchd_restart_reaches_the_node_counters_on_both_paths() -> None:
    model = small_model()
    model.apply_switch_config("leaf01", 20.0, SwitchConfig(hash_seed=7), restart=True, message="seed")
    at(model, 30.0)
    machine = Machine("gpu001", "node", model, Rendezvous())
    line = f"grep -H . {SYS}/mlx5_0/ports/1/counters/link_downed {SYS}/*/ports/1/state"
    assert fast(Shell(machine), line) == await full_build(FullBuildShell(machine), line)


def test_views_do_not_depend_on_the_order_they_are_asked_in() -> None:
    """The per-run caches (baselines, phases, the last instant's segments, effects) change no number."""
    text = FAULTS["flapping"] + FAULTS["storm_and_rate"]
    forward, backward = small_model(text), small_model(text)
    hosts = forward.topology.nodes
    ahead = {(h, t): forward.node_view(h, t) for t in TIMES for h in hosts}
    for t in reversed(TIMES):
        for h in reversed(hosts):
            parts = backward.node_parts(h, t)
            assert [parts.counters(rail) for rail in parts.rails] == [nic.counters for nic in ahead[(h, t)].nics]
            assert backward.node_view(h, t) == ahead[(h, t)], (h, t)


def test_stateful_lines_are_left_to_the_process_path() -> None:
    model = small_model()
    shell = Shell(Machine("gpu001", "node", model, Rendezvous()))
    for line in ("ib_write_bw -d mlx5_0", "timeout 5 ibstat", "sudo timeout 1 ibstat", "false; echo $?",
                 "python3 -c x --interval 1"):
        assert shell.run_now(line) is None, line
    assert shell.run_now("sudo -n ibstat | head -1") is not None


def test_remembered_glob_expansions_stay_bounded() -> None:
    """Words typed by people are remembered too, but not without limit."""
    model = small_model()
    at(model, 5.0)
    shell = Shell(Machine("gpu001", "node", model, Rendezvous()))
    for index in range(1100):
        assert fast(shell, f"grep . /sys/nope{index}")[2] == 2
    layout = model.memo[("sysfs-layout", "gpu001")]
    assert isinstance(layout, Layout)
    assert 0 < len(layout.globs) <= 1024 and 0 < len(layout.resolved) <= 1024
