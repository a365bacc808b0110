"""``fleet check fix``'s plan: the exact commands that bring each failed check back to the profile, per node
and switch, each with the commands that undo it.

Only what one command sets and one command sets back is planned: ``mlnx_qos`` (trust, PFC, the DSCP map),
the DCQCN enables and the verbs traffic class in sysfs, RDMA-CM's defaults (``cma_roce_mode``,
``cma_roce_tos``), the netdev MTU (``ip link``), the peer-memory module (``modprobe``), a bridge's ACS
control (``setpci``), and the switch settings of NVUE (``nv set`` ... ``nv config apply``) and SONiC
(``config``, ``ecnconfig``, ``sonic-cfggen``). The rollback of each is built from the value the check read
before, so it returns exactly what was there. What needs a person (firmware, a card's slot, a GID table,
a driver, a buffer template, ETS bandwidths fleet does not read) is listed as advice, never run.

Why per host: a change is applied to one canary host first and verified by checking that host again
(``fleet.collectors.config_fix``); a host's commands are one guarded change.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fleet.fabric.config_checks import CheckResult, ConfigReport, Verdict, fleet_netdev_mtu
from fleet.fabric.roce_config import (
    FleetConfig,
    NicConfig,
    NodeConfig,
    SwitchConfig,
    SwitchPortConfig,
)
from fleet.fabric.roce_profile import RoceProfile

Argv = tuple[str, ...]

ACS_BITS = {"SrcValid": 0x01, "TransBlk": 0x02, "ReqRedir": 0x04, "CmpltRedir": 0x08, "UpstreamFwd": 0x10,
            "EgressCtrl": 0x20, "DirectTrans": 0x40}
"""ACS control register bits by the name ``lspci -vvv`` prints them (PCIe base spec, ACS Control Register)."""

NVUE_MTU = 9216
SONIC_MTU = 9100
"""The switch MTU a fix sets where the profile names none (NVIDIA's and SONiC's usual jumbo MTUs)."""

MANUAL_CHECKS = frozenset({"nic_ets", "gid_index", "versions_ofed", "versions_firmware", "versions_driver",
                           "versions_kernel", "pcie_link", "gpu_nic_path", "switch_buffer"})
"""Checks a person fixes (the check's own fix text says how)."""


def line(argv: Argv) -> str:
    """A planned command as the shell receives it (a sysfs write keeps its redirection)."""
    if len(argv) == 4 and argv[0] == "echo" and argv[2] == ">":
        return " ".join(argv)
    return shlex.join(argv)


@dataclass(frozen=True, slots=True)
class FixStep:
    """What one failed check needs on one host, and what undoes it (``rollback[i]`` undoes ``apply[i]``; a
    rollback runs them last first)."""

    check: str
    part: str
    apply: tuple[Argv, ...]
    rollback: tuple[Argv, ...]

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "part": self.part, "commands": [line(a) for a in self.apply],
                "rollback": [line(a) for a in self.rollback]}


@dataclass(frozen=True, slots=True)
class HostFix:
    """One host's guarded change: its steps in order, then (NVUE) the apply that commits them."""

    host: str
    role: str
    """``node`` or ``switch``."""
    os: str
    steps: tuple[FixStep, ...]

    @property
    def _commit(self) -> tuple[Argv, ...]:
        return (("nv", "config", "apply", "-y"),) if self.os == "cumulus" else ()

    @property
    def apply(self) -> tuple[Argv, ...]:
        return tuple(argv for step in self.steps for argv in step.apply) + self._commit

    @property
    def rollback(self) -> tuple[Argv, ...]:
        return tuple(argv for step in reversed(self.steps) for argv in reversed(step.rollback)) + self._commit

    @property
    def fixes(self) -> frozenset[tuple[str, str]]:
        """(check, part) this change must turn to pass."""
        return frozenset((step.check, step.part) for step in self.steps)

    def as_json(self) -> dict[str, Any]:
        return {"host": self.host, "role": self.role, "os": self.os, "steps": [s.as_json() for s in self.steps],
                "commands": [line(a) for a in self.apply], "rollback": [line(a) for a in self.rollback]}


@dataclass(frozen=True, slots=True)
class ManualFix:
    check: str
    part: str
    advice: str
    why: str

    def as_json(self) -> dict[str, str]:
        return {"check": self.check, "part": self.part, "advice": self.advice, "why": self.why}


@dataclass(frozen=True, slots=True)
class FixPlan:
    hosts: tuple[HostFix, ...]
    manual: tuple[ManualFix, ...]

    def host(self, name: str) -> HostFix | None:
        return next((h for h in self.hosts if h.host == name), None)

    def as_json(self) -> dict[str, Any]:
        return {"hosts": [h.as_json() for h in self.hosts], "manual": [m.as_json() for m in self.manual]}


def _mask(priorities: Sequence[int] | None) -> str:
    return ",".join("1" if p in (priorities or ()) else "0" for p in range(8))


def _nic_steps(result: CheckResult, nic: NicConfig, config: FleetConfig, p: RoceProfile) -> list[FixStep] | str:
    """The steps for a failed NIC check, or why there is none."""
    dev, nd = nic.nic, nic.netdev
    if not nd:
        return "the NIC's netdev is not known"
    qos = ("mlnx_qos", "-i", nd)
    check, part = result.check, result.target
    apply: list[Argv] = []
    back: list[Argv] = []
    if check == "nic_trust":
        if not nic.trust:
            return "the NIC's trust state was not read"
        return [FixStep(check, part, ((*qos, "--trust", p.trust),), ((*qos, "--trust", nic.trust),))]
    if check == "nic_pfc":
        if nic.pfc is None:
            return "the NIC's PFC was not read"
        return [FixStep(check, part, ((*qos, "--pfc", _mask((p.lossless_priority,))),),
                        ((*qos, "--pfc", _mask(nic.pfc)),))]
    if check == "nic_dscp_map":
        for dscp, prio in sorted(p.dscp_to_priority.items()):
            old = nic.dscp_to_priority.get(dscp)
            if old is not None and old != prio:
                apply.append((*qos, "--dscp2prio", f"set,{dscp},{prio}"))
                back.append((*qos, "--dscp2prio", f"set,{dscp},{old}"))
        if not apply:
            return "the NIC's DSCP map is not read under its trust state: the trust fix covers it"
        return [FixStep(check, part, tuple(apply), tuple(back))]
    if check == "nic_dcqcn":
        prio = p.lossless_priority
        for point, on in (("roce_np", nic.ecn_np.get(prio)), ("roce_rp", nic.ecn_rp.get(prio))):
            if on is False:
                path = f"/sys/class/net/{nd}/ecn/{point}/enable/{prio}"
                apply.append(("echo", "1", ">", path))
                back.append(("echo", "0", ">", path))
        return [FixStep(check, part, tuple(apply), tuple(back))] if apply else "the DCQCN flags were not read"
    if check == "rdma_cm":
        if nic.roce_mode and nic.roce_mode != p.roce_mode:
            mode = {"RoCE v2": "2", "IB/RoCE v1": "1"}
            if p.roce_mode not in mode or nic.roce_mode not in mode:
                return f"RDMA-CM mode {nic.roce_mode!r} has no cma_roce_mode number"
            apply.append(("cma_roce_mode", "-d", dev, "-p", "1", "-m", mode[p.roce_mode]))
            back.append(("cma_roce_mode", "-d", dev, "-p", "1", "-m", mode[nic.roce_mode]))
        if nic.roce_tos is not None and nic.roce_tos != p.tos:
            apply.append(("cma_roce_tos", "-d", dev, "-p", "1", "-t", str(p.tos)))
            back.append(("cma_roce_tos", "-d", dev, "-p", "1", "-t", str(nic.roce_tos)))
        if nic.traffic_class is not None and nic.traffic_class != p.tos:
            path = f"/sys/class/infiniband/{dev}/tc/1/traffic_class"
            apply.append(("echo", str(p.tos), ">", path))
            back.append(("echo", str(nic.traffic_class), ">", path))
        return [FixStep(check, part, tuple(apply), tuple(back))] if apply else "RDMA-CM's defaults were not read"
    if check == "mtu":
        want = fleet_netdev_mtu(config.nodes, p)
        if want is None or nic.netdev_mtu is None or nic.netdev_mtu == want:
            return "the netdev MTU is right: the RDMA active MTU follows the switch and the netdev (see the check)"
        return [FixStep(check, part, (("ip", "link", "set", "dev", nd, "mtu", str(want)),),
                        (("ip", "link", "set", "dev", nd, "mtu", str(nic.netdev_mtu)),))]
    return "not planned"


def _node_steps(result: CheckResult, node: NodeConfig, config: FleetConfig, p: RoceProfile) -> list[FixStep] | str:
    check, part = result.check, result.target
    apply: list[Argv] = []
    back: list[Argv] = []
    if check == "peermem":
        module = p.peermem_modules[0]
        return [FixStep(check, part, (("modprobe", module),), (("modprobe", "-r", module),))]
    if check == "pcie_acs":
        gpu = part.partition(":")[2].removeprefix("gpu")
        rail = next((r for r in node.rails if str(r.gpu) == gpu), None)
        if rail is None:
            return "the GPU's bridges were not read"
        for bdf, flags in sorted(rail.acs_on.items()):
            if flags:
                old = sum(ACS_BITS.get(flag, 0) for flag in flags)
                apply.append(("setpci", "-s", bdf, "ECAP_ACS+0x6.w=0000"))
                back.append(("setpci", "-s", bdf, f"ECAP_ACS+0x6.w={old:04x}"))
        return [FixStep(check, part, tuple(apply), tuple(back))] if apply else "no bridge with ACS on was read"
    nic = next((n for n in node.nics if n.part == part), None)
    if nic is None:
        return "the NIC was not read"
    return _nic_steps(result, nic, config, p)


def _ports(result: CheckResult, switch: SwitchConfig, bad: Any) -> list[SwitchPortConfig]:
    """The ports a switch result names: its own port, or (collapsed to the switch) every checked port failing."""
    port = result.target.partition(":")[2]
    if port:
        return [q for q in switch.ports if q.port == port]
    return [q for q in switch.ports if q.checked and bad(q)]


def _switch_steps(result: CheckResult, switch: SwitchConfig, p: RoceProfile,
                  host_mtu: int | None) -> list[FixStep] | str:
    check, nvue, prio = result.check, switch.os == "cumulus", p.lossless_priority
    steps: list[FixStep] = []
    apply: list[Argv] = []
    back: list[Argv] = []
    path: Argv
    if check == "switch_pfc":
        for q in _ports(result, switch, lambda q: q.pfc is not None and prio not in q.pfc):
            if q.pfc is None:
                continue
            part = f"{switch.switch}:{q.port}"
            if nvue:
                steps.append(FixStep(check, part, (("nv", "set", "interface", q.port, "qos", "pfc", "profile",
                                                    "default-global"),),
                                     (("nv", "unset", "interface", q.port, "qos", "pfc"),)))
            else:
                steps.append(FixStep(check, part, (("config", "interface", "pfc", "priority", q.port, str(prio), "on"),),
                                     (("config", "interface", "pfc", "priority", q.port, str(prio), "off"),)))
        return steps or "no port's PFC was read"
    if check == "switch_ecn":
        if switch.ecn_traffic_classes is None:
            return "the switch's ECN was not read"
        if prio in switch.ecn_traffic_classes:
            return "ECN is on; the thresholds differ from the profile's: set them by hand"
        if nvue:
            path = ("nv", "set", "qos", "congestion-control", "default-global", "traffic-class", str(prio), "ecn")
            return [FixStep(check, switch.switch, ((*path, "enable"),), ((*path, "disable"),))]
        return [FixStep(check, switch.switch, (("ecnconfig", "-q", str(prio), "on"),),
                        (("ecnconfig", "-q", str(prio), "off"),))]
    if check == "switch_pfc_watchdog":
        ports = [q for q in _ports(result, switch, lambda q: q.pfc_watchdog is False) if q.pfc_watchdog is False]
        if not ports:
            return "no port's watchdog was read"
        if nvue:
            for q in ports:
                path = ("nv", "set", "interface", q.port, "qos", "pfc-watchdog", "state")
                steps.append(FixStep(check, f"{switch.switch}:{q.port}", ((*path, "enable"),), ((*path, "disable"),)))
            return steps
        names = tuple(q.port for q in ports)
        part = switch.switch if not result.target.partition(":")[2] else result.target
        return [FixStep(check, part, (("config", "pfcwd", "start", "--action", "drop", *names, "200",
                                       "--restoration-time", "200"),),
                        (("config", "pfcwd", "stop", *names),))]
    if check == "switch_trust":
        if not nvue:
            return "SONiC binds the DSCP map per port in PORT_QOS_MAP: bind it by hand (see the check's fix)"
        old = {"pcp": "pcp", "dscp": "dscp", "pcp,dscp": "both", "both": "both"}.get(switch.trust)
        if old is None:
            return f"trust {switch.trust!r} has no NVUE setting to return to"
        path = ("nv", "set", "qos", "mapping", "default-global", "trust")
        return [FixStep(check, switch.switch, ((*path, "both"),), ((*path, old),))]
    if check == "switch_dscp_map":
        for dscp, want in sorted(p.dscp_to_priority.items()):
            was = switch.dscp_to_priority.get(dscp)
            if was is None or was == want:
                continue
            if nvue:
                path = ("nv", "set", "qos", "mapping", "default-global", "dscp", str(dscp), "switch-priority")
                apply.append((*path, str(want)))
                back.append((*path, str(was)))
            else:
                def write(value: int, dscp: int = dscp) -> Argv:
                    table = {"DSCP_TO_TC_MAP": {"AZURE": {str(dscp): str(value)}}}
                    return ("sonic-cfggen", "-a", json.dumps(table, separators=(",", ":")), "--write-to-db")
                apply.append(write(want))
                back.append(write(was))
        return [FixStep(check, switch.switch, tuple(apply), tuple(back))] if apply else "the DSCP map was not read"
    if check == "switch_mtu":
        want = p.switch_mtu or (NVUE_MTU if nvue else SONIC_MTU)
        floor = p.switch_mtu or host_mtu or 0
        for q in _ports(result, switch, lambda q: q.mtu is not None and q.mtu < floor):
            if q.mtu is None:
                continue
            part = f"{switch.switch}:{q.port}"
            if nvue:
                steps.append(FixStep(check, part, (("nv", "set", "interface", q.port, "link", "mtu", str(want)),),
                                     (("nv", "set", "interface", q.port, "link", "mtu", str(q.mtu)),)))
            else:
                steps.append(FixStep(check, part, (("config", "interface", "mtu", q.port, str(want)),),
                                     (("config", "interface", "mtu", q.port, str(q.mtu)),)))
        return steps or "no port's MTU was read"
    return "not planned"


def plan_fixes(report: ConfigReport, config: FleetConfig, profile: RoceProfile) -> FixPlan:
    """The commands per host that fix ``report``'s failed checks (read from ``config``); the rest as advice."""
    nodes = {n.node: n for n in config.nodes if not n.reason}
    switches = {s.switch: s for s in config.switches if not s.reason}
    host_mtu = profile.netdev_mtu or max((n.netdev_mtu for node in nodes.values() for n in node.nics
                                          if n.netdev_mtu), default=None)
    steps: dict[str, list[FixStep]] = {}
    manual: list[ManualFix] = []
    for result in report.results:
        if result.verdict is not Verdict.FAIL or result.check.startswith("link_"):
            continue  # a link's two ends are fixed by their own checks
        host = result.target.partition(":")[0]
        if result.check in MANUAL_CHECKS:
            manual.append(ManualFix(result.check, result.target, result.fix, "needs a person"))
            continue
        planned: list[FixStep] | str
        if host in nodes:
            planned = _node_steps(result, nodes[host], config, profile)
        elif host in switches:
            planned = _switch_steps(result, switches[host], profile, host_mtu)
        else:
            planned = "not read"
        if isinstance(planned, str):
            manual.append(ManualFix(result.check, result.target, result.fix, planned))
        else:
            steps.setdefault(host, []).extend(planned)
    hosts = []
    for host, host_steps in sorted(steps.items()):
        if host in nodes:
            hosts.append(HostFix(host, "node", "linux", tuple(host_steps)))
        else:
            hosts.append(HostFix(host, "switch", switches[host].os, tuple(host_steps)))
    return FixPlan(tuple(hosts), tuple(manual))
