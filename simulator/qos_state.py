"""The simulated machines' RoCE, PCIe and driver configuration: healthy, misconfigured by the scenario, changed
by commands.

A node's NICs start as a well-run lossless RoCE cluster configures them
(NVIDIA's doRoCE settings: trust DSCP, PFC on priority 3, DCQCN on, RDMA-CM
RoCE v2 with ToS 106, jumbo frames), its GPUs and NICs at PCIe Gen5 x16 under
one PCIe switch per rail with ACS off, nvidia_peermem loaded; switches run
their OS's lossless RoCE defaults (Cumulus ``nv set qos roce``: trust
``pcp,dscp``, PFC on switch priority 3, ECN on traffic classes 0 and 3 from
150,000 to 1,500,000 bytes; SONiC's lossless PG profiles, AZURE maps and
WRED profile), the PFC watchdog on every port.

Misconfiguration faults of the scenario (``MISCONFIG_KINDS``) change that
while they are active; commands (``mlnx_qos``, sysfs writes, ``cma_roce_*``,
``ip link``, ``modprobe``, ``setpci``, ``nv set``, SONiC ``config``) write
settings at the time they run, and a written setting wins over a fault. What
the physics needs (which ends have no working PFC or ECN for RoCE) is
:meth:`QosState.physics`, a pure function of the faults and the writes up to
``t``.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.simulator.scenario import MISCONFIG_KINDS, FaultSpec
from fleet.simulator.topology import Topology

PRIORITIES = 8
LOSSLESS_PRIORITY = 3
"""RoCE's lossless priority (doRoCE: ToS 106 >> 5)."""
ROCE_DSCP = 26
ROCE_TOS = 106
DEFAULT_DSCP_MAP = tuple(d // 8 for d in range(64))
"""The ConnectX and Spectrum default DSCP -> priority map (DSCP >> 3), which puts DSCP 26 in priority 3."""

FW_VERSION = "28.39.1002"
DRIFTED_FW_VERSION = "28.36.1010"
"""What a NIC left behind by a firmware update runs (an older ConnectX-7 release)."""
KERNEL = "5.15.0-119-generic"
NVIDIA_DRIVER = "550.90.07"
OFED_VERSION = "MLNX_OFED_LINUX-24.04-0.7.0.0"
ROCE_NETDEV_MTU = 9000
NVUE_PORT_MTU = 9216
SONIC_PORT_MTU = 9100
ECN_MIN_BYTES = 150_000
ECN_MAX_BYTES = 1_500_000
"""Cumulus RoCE defaults: marking from 150,000 bytes, every packet above 1,500,000 bytes."""
PCIE_GEN5 = (32.0, 16)
GPU_PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)
NIC_PCI_BUSES = (0x0C, 0x1F, 0x3B, 0x4C, 0x8C, 0x9F, 0xBC, 0xCC)
"""PCI buses of the GPUs and NICs of an HGX H100 node, by rail (the netdevs are named after them)."""

def active_mtu(netdev_mtu: int) -> int:
    """The RDMA path MTU RoCE gets from a netdev MTU: the largest IB MTU (256..4096) that fits beside the
    RoCE headers (the kernel's ``iboe_get_mtu`` subtracts the IB headers and rounds down)."""
    payload = netdev_mtu - 70
    return next((m for m in (4096, 2048, 1024, 512) if payload >= m), 256)


@dataclass(frozen=True, slots=True)
class NicQos:
    trust: str = "dscp"
    pfc: tuple[bool, ...] = tuple(p == LOSSLESS_PRIORITY for p in range(PRIORITIES))
    dscp_to_priority: tuple[int, ...] = DEFAULT_DSCP_MAP
    ets: bool = True
    """ETS 50/50 between traffic classes 0 and 3, CNPs strict on 6; False: the factory ``tsa: vendor``."""
    ecn_np: tuple[bool, ...] = (True,) * PRIORITIES
    ecn_rp: tuple[bool, ...] = (True,) * PRIORITIES
    roce_mode: str = "RoCE v2"
    roce_tos: int = ROCE_TOS
    traffic_class: int | None = ROCE_TOS
    netdev_mtu: int = ROCE_NETDEV_MTU
    extra_ipv6: bool = False
    """A global IPv6 address on the netdev: its GIDs come before the IPv4 ones (RoCE v2 IPv4 at index 5)."""
    firmware: str = FW_VERSION
    pcie: tuple[float, int] = PCIE_GEN5
    far: bool = False
    """Cabled to a root port of the other socket, away from its GPU's PCIe switch."""

    @property
    def active_mtu(self) -> int:
        return active_mtu(self.netdev_mtu)

    @property
    def lossless(self) -> bool:
        """RoCE (DSCP 26) is classified into the PFC-protected priority on receive."""
        return (self.trust == "dscp" and self.pfc[LOSSLESS_PRIORITY]
                and self.dscp_to_priority[ROCE_DSCP] == LOSSLESS_PRIORITY)


@dataclass(frozen=True, slots=True)
class NodeQos:
    nics: tuple[NicQos, ...]
    peermem: bool = True
    acs_gpus: frozenset[int] = frozenset()
    """GPUs whose PCIe switch port has ACS redirection on."""
    gpu_pcie: tuple[tuple[float, int], ...] = (PCIE_GEN5,) * RAILS_PER_NODE
    kernel: str = KERNEL
    driver: str = NVIDIA_DRIVER
    ofed: str = OFED_VERSION


@dataclass(frozen=True, slots=True)
class PortQos:
    pfc: bool = True
    mtu: int = NVUE_PORT_MTU
    pfc_watchdog: bool = True


@dataclass(frozen=True, slots=True)
class SwitchQos:
    os: str
    trust: str
    dscp_to_priority: tuple[int, ...] = DEFAULT_DSCP_MAP
    ecn_traffic_classes: tuple[int, ...] = (0, LOSSLESS_PRIORITY)
    ecn_min_bytes: int = ECN_MIN_BYTES
    ecn_max_bytes: int = ECN_MAX_BYTES
    lossless_buffer: bool = True
    ports: Mapping[str, PortQos] = field(default_factory=dict)

    @property
    def classifies_roce(self) -> bool:
        """RoCE lands in the lossless priority: trust includes DSCP and DSCP 26 maps to priority 3."""
        return "dscp" in self.trust and self.dscp_to_priority[ROCE_DSCP] == LOSSLESS_PRIORITY


@dataclass(frozen=True, slots=True)
class QosPhysics:
    """What the traffic model needs: where RoCE has no working PFC, where no DCQCN."""

    pfc_off: frozenset[tuple[str, str]] = frozenset()
    """Ends (node, mlx5_N) and (switch, port) that neither pause nor honour pauses for RoCE."""
    ecn_off_nics: frozenset[tuple[str, int]] = frozenset()
    ecn_off_switches: frozenset[str] = frozenset()


Write = tuple[float, tuple[Hashable, ...], Any]
"""(t, key, value): a setting written by a command at ``t``."""


def _nic_of(target: str) -> tuple[str, int] | None:
    node, _, part = target.partition(":")
    return (node, int(part.removeprefix("mlx5_"))) if part.startswith("mlx5_") else None


class QosState:
    """Every machine's configuration at any ``t``: healthy, then the active faults, then the writes."""

    def __init__(self, topology: Topology, faults: Sequence[FaultSpec], roce: bool, *,
                 firmware: str = FW_VERSION, kernel: str = KERNEL, driver: str = NVIDIA_DRIVER) -> None:
        self.topology = topology
        self.firmware, self.kernel, self.driver = firmware, kernel, driver
        """What every machine runs where no fault drifts it (a scenario's ``[reported]`` may change it)."""
        self.faults = tuple(f for f in faults if f.kind in MISCONFIG_KINDS or f.kind == "ecn_disabled")
        self.roce = roce
        self._writes: dict[str, list[Write]] = {}
        self._times: list[float] = []
        """Every write's time, sorted: what moves physics."""
        self._physics: dict[tuple[frozenset[int], int], QosPhysics] = {}
        self._revisions: dict[tuple[str, int], float] = {}
        """(switch, NVUE revision) -> when it was applied: what ``nv config apply REV`` returns to."""

    # ------------------------------------------------------------------ writes

    def write(self, host: str, key: tuple[Hashable, ...], value: Any, t: float) -> None:
        """A command set ``key`` on ``host`` at ``t`` (later writes of the same key win)."""
        self._writes.setdefault(host, []).append((t, key, value))
        bisect.insort(self._times, t)
        self._physics.clear()

    @property
    def write_times(self) -> tuple[float, ...]:
        return tuple(self._times)

    def _written(self, host: str, t: float) -> dict[tuple[Hashable, ...], Any]:
        return {key: value for when, key, value in self._writes.get(host, ()) if when <= t}

    def snapshot(self, switch: str, revision: int, t: float) -> None:
        """NVUE applied ``revision`` on ``switch`` at ``t``."""
        self._revisions[(switch, revision)] = t

    def restore(self, switch: str, revision: int, t: float) -> None:
        """Write back ``switch``'s QoS as it was at ``revision`` (0: as it booted, before any write)."""
        then = self.switch(switch, t, writes=False) if revision == 0 else \
            self.switch(switch, self._revisions.get((switch, revision), t))
        now = self.switch(switch, t)
        for name in ("trust", "lossless_buffer", "ecn_min_bytes", "ecn_max_bytes"):
            if getattr(then, name) != getattr(now, name):
                self.write(switch, (name,), getattr(then, name), t)
        for dscp, prio in enumerate(then.dscp_to_priority):
            if prio != now.dscp_to_priority[dscp]:
                self.write(switch, ("dscp", dscp), prio, t)
        for tc in set(then.ecn_traffic_classes) ^ set(now.ecn_traffic_classes):
            self.write(switch, ("ecn_tc", tc), tc in then.ecn_traffic_classes, t)
        for port, settings in then.ports.items():
            for name in ("pfc", "mtu", "pfc_watchdog"):
                if getattr(settings, name) != getattr(now.ports[port], name):
                    self.write(switch, ("port", port, name), getattr(settings, name), t)

    # ------------------------------------------------------------------ nodes

    def node(self, node: str, t: float) -> NodeQos:
        nics = [NicQos(firmware=self.firmware) for _ in range(RAILS_PER_NODE)]
        state: dict[str, Any] = {"peermem": True, "acs": set(), "gpu_pcie": [PCIE_GEN5] * RAILS_PER_NODE}
        for fault in self.faults:
            if fault.active(t) and fault.target.partition(":")[0] == node:
                self._node_fault(fault, nics, state)
        written = self._written(node, t)
        for key, value in written.items():
            if key[0] == "nic":
                rail, name = int(key[1]), str(key[2])  # type: ignore[call-overload]
                nics[rail] = _write_nic(nics[rail], name, key[3:], value)
            elif key[0] == "peermem":
                state["peermem"] = bool(value)
            elif key[0] == "acs":
                gpu = int(key[1])  # type: ignore[call-overload]
                (state["acs"].add if value else state["acs"].discard)(gpu)
        return NodeQos(tuple(nics), state["peermem"], frozenset(state["acs"]), tuple(state["gpu_pcie"]),
                       kernel=self.kernel, driver=self.driver)

    def _node_fault(self, fault: FaultSpec, nics: list[NicQos], state: dict[str, Any]) -> None:
        kind, target = fault.kind, fault.target
        nic = _nic_of(target)
        rails = [nic[1]] if nic is not None else list(range(RAILS_PER_NODE))
        gpu_part = target.partition(":")[2]
        for rail in rails:
            q = nics[rail]
            if kind == "pfc_disabled":
                q = replace(q, pfc=(False,) * PRIORITIES)
            elif kind == "trust_pcp":
                q = replace(q, trust="pcp")
            elif kind == "dscp_map_mismatch":
                mapping = list(q.dscp_to_priority)
                mapping[int(fault.param("dscp"))] = int(fault.param("priority"))
                q = replace(q, dscp_to_priority=tuple(mapping))
            elif kind == "ecn_disabled":
                q = replace(q, ecn_np=(False,) * PRIORITIES, ecn_rp=(False,) * PRIORITIES)
            elif kind == "mtu_mismatch":
                q = replace(q, netdev_mtu=int(fault.param("mtu")))
            elif kind == "gid_index_mismatch":
                q = replace(q, extra_ipv6=True)
            elif kind == "firmware_drift":
                q = replace(q, firmware=DRIFTED_FW_VERSION)
            elif kind == "nic_far_from_gpu":
                q = replace(q, far=True)
            elif kind == "pcie_downtrained" and nic is not None:
                q = replace(q, pcie=(fault.param("gts"), int(fault.param("width"))))
            nics[rail] = q
        if kind == "peermem_missing":
            state["peermem"] = False
        elif kind == "acs_enabled":
            state["acs"].update([int(gpu_part.removeprefix("gpu"))] if gpu_part.startswith("gpu")
                                else range(RAILS_PER_NODE))
        elif kind == "pcie_downtrained" and gpu_part.startswith("gpu"):
            state["gpu_pcie"][int(gpu_part.removeprefix("gpu"))] = (fault.param("gts"), int(fault.param("width")))

    # ------------------------------------------------------------------ switches

    def switch(self, switch: str, t: float, *, writes: bool = True) -> SwitchQos:
        os_name = self.topology.os_of(switch)
        mtu = SONIC_PORT_MTU if os_name == "sonic" else NVUE_PORT_MTU
        ports = {port: PortQos(mtu=mtu) for port in self.topology.switch_port_names(switch)}
        sw = SwitchQos(os_name, "dscp" if os_name == "sonic" else "pcp,dscp",
                       ecn_traffic_classes=(LOSSLESS_PRIORITY,) if os_name == "sonic" else (0, LOSSLESS_PRIORITY))
        for fault in self.faults:
            host, _, port = fault.target.partition(":")
            if not fault.active(t) or host != switch:
                continue
            names = [port] if port else list(ports)
            if fault.kind == "pfc_disabled":
                for name in names:
                    ports[name] = replace(ports[name], pfc=False)
            elif fault.kind == "mtu_mismatch":
                for name in names:
                    ports[name] = replace(ports[name], mtu=int(fault.param("mtu")))
            elif fault.kind == "pfc_watchdog_disabled":
                for name in names:
                    ports[name] = replace(ports[name], pfc_watchdog=False)
            elif fault.kind == "trust_pcp":
                sw = replace(sw, trust="pcp")
            elif fault.kind == "dscp_map_mismatch":
                mapping = list(sw.dscp_to_priority)
                mapping[int(fault.param("dscp"))] = int(fault.param("priority"))
                sw = replace(sw, dscp_to_priority=tuple(mapping))
            elif fault.kind == "ecn_disabled":
                sw = replace(sw, ecn_traffic_classes=tuple(tc for tc in sw.ecn_traffic_classes
                                                           if tc != LOSSLESS_PRIORITY))
        for key, value in (self._written(switch, t) if writes else {}).items():
            if key[0] == "port":
                name, setting = str(key[1]), str(key[2])
                if name in ports:
                    ports[name] = replace(ports[name], **{setting: value})
            elif key[0] == "dscp":
                mapping = list(sw.dscp_to_priority)
                mapping[int(key[1])] = int(value)  # type: ignore[call-overload]
                sw = replace(sw, dscp_to_priority=tuple(mapping))
            elif key[0] == "ecn_tc":
                tcs = set(sw.ecn_traffic_classes)
                (tcs.add if value else tcs.discard)(int(key[1]))  # type: ignore[call-overload]
                sw = replace(sw, ecn_traffic_classes=tuple(sorted(tcs)))
            elif key[0] in ("trust", "lossless_buffer", "ecn_min_bytes", "ecn_max_bytes"):
                sw = replace(sw, **{str(key[0]): value})
        return replace(sw, ports=ports)

    # ------------------------------------------------------------------ physics

    def physics(self, t: float, active: frozenset[int]) -> QosPhysics:
        """Where RoCE lacks PFC or ECN at ``t`` (``active``: indices of the scenario's active faults)."""
        key = (active, bisect.bisect_right(self._times, t))
        cached = self._physics.get(key)
        if cached is not None:
            return cached
        hosts = {f.target.partition(":")[0] for f in self.faults if f.active(t)} | set(self._writes)
        pfc_off: set[tuple[str, str]] = set()
        ecn_nics: set[tuple[str, int]] = set()
        ecn_switches: set[str] = set()
        for host in sorted(hosts):
            if host in self.topology.nodes:
                for rail, nic in enumerate(self.node(host, t).nics):
                    if not nic.lossless:
                        pfc_off.add((host, nic_name(rail)))
                    if not (nic.ecn_np[LOSSLESS_PRIORITY] and nic.ecn_rp[LOSSLESS_PRIORITY]):
                        ecn_nics.add((host, rail))
            elif host in self.topology.switches:
                sw = self.switch(host, t)
                for port, qos in sw.ports.items():
                    if not qos.pfc or not sw.classifies_roce:
                        pfc_off.add((host, port))
                if LOSSLESS_PRIORITY not in sw.ecn_traffic_classes or not sw.classifies_roce:
                    ecn_switches.add(host)
        physics = QosPhysics(frozenset(pfc_off), frozenset(ecn_nics), frozenset(ecn_switches))
        if len(self._physics) > 64:
            self._physics.clear()
        self._physics[key] = physics
        return physics


def _write_nic(nic: NicQos, name: str, args: tuple[Hashable, ...], value: Any) -> NicQos:
    if name == "dscp":
        mapping = list(nic.dscp_to_priority)
        mapping[int(args[0])] = int(value)  # type: ignore[call-overload]
        return replace(nic, dscp_to_priority=tuple(mapping))
    if name in ("ecn_np", "ecn_rp"):
        flags = list(getattr(nic, name))
        flags[int(args[0])] = bool(value)  # type: ignore[call-overload]
        changed: dict[str, Any] = {name: tuple(flags)}
        return replace(nic, **changed)
    return replace(nic, **{name: value})
