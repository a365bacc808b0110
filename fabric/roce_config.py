"""What a node's NICs and GPUs and a switch's ports are configured to do, as read from the machines.

Plain data the collectors fill from the tools' outputs (``fleet.collectors.config_read``)
and the checks judge (``fleet.fabric.config_checks``); baselines keep it to show
drift. A field left at its empty value (None, "", {}) was not read, and
``unread`` says why: a check then warns instead of guessing.

Units: MTUs and thresholds in bytes, PCIe speed in GT/s per lane, width in lanes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PATH_RANK = {"X": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}
"""``nvidia-smi topo -m`` PCIe connections, nearest first (SOC is the old name of SYS)."""


@dataclass(frozen=True, slots=True)
class PcieLinkState:
    speed_gts: float | None = None
    width: int | None = None
    cap_speed_gts: float | None = None
    cap_width: int | None = None

    @property
    def below_capability(self) -> bool:
        """Trained slower or narrower than the device can (both known)."""
        slow = self.speed_gts is not None and self.cap_speed_gts is not None and self.speed_gts < self.cap_speed_gts
        narrow = self.width is not None and self.cap_width is not None and self.width < self.cap_width
        return slow or narrow

    def words(self) -> str:
        def one(speed: float | None, width: int | None) -> str:
            return f"{speed:g} GT/s x{width}" if speed is not None and width is not None else "unknown"

        return f"{one(self.speed_gts, self.width)} (capable of {one(self.cap_speed_gts, self.cap_width)})"


@dataclass(frozen=True, slots=True)
class NicConfig:
    """One RDMA NIC port of a node."""

    node: str
    nic: str
    netdev: str = ""
    link_layer: str = ""
    trust: str = ""
    pfc: tuple[int, ...] | None = None
    """Priorities with PFC on (None: not read)."""
    dscp_to_priority: Mapping[int, int] = field(default_factory=dict)
    tc_tsa: Mapping[int, str] = field(default_factory=dict)
    """Priority -> the transmission selection of its traffic class (``ets``, ``strict``, ``vendor``)."""
    ecn_np: Mapping[int, bool] = field(default_factory=dict)
    ecn_rp: Mapping[int, bool] = field(default_factory=dict)
    roce_mode: str = ""
    roce_tos: int | None = None
    traffic_class: int | None = None
    netdev_mtu: int | None = None
    active_mtu: int | None = None
    gid_index: int | None = None
    """The RoCE v2 GID with an IPv4 address (what ``NCCL_IB_GID_INDEX`` must name)."""
    firmware: str = ""
    bdf: str = ""
    pcie: PcieLinkState | None = None
    unread: tuple[str, ...] = ()

    @property
    def part(self) -> str:
        return f"{self.node}:{self.nic}"


@dataclass(frozen=True, slots=True)
class GpuConfig:
    node: str
    index: int
    bdf: str = ""
    pcie: PcieLinkState | None = None

    @property
    def part(self) -> str:
        return f"{self.node}:gpu{self.index}"


@dataclass(frozen=True, slots=True)
class RailPair:
    """A NIC and the GPU it serves: the nearest GPU in ``nvidia-smi topo -m``."""

    nic: str
    gpu: int
    path: str
    """The topo connection between them (``PIX``); "" when unknown."""
    bridges: tuple[str, ...] = ()
    """PCIe bridges between the two (``lspci -tv``)."""
    acs_on: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Bridge -> ACS bits switched on, for those of ``bridges`` with any on."""


@dataclass(frozen=True, slots=True)
class NodeConfig:
    node: str
    reason: str = ""
    """Why the node could not be read at all (unreachable, ...); "" when it was."""
    nics: tuple[NicConfig, ...] = ()
    gpus: tuple[GpuConfig, ...] = ()
    rails: tuple[RailPair, ...] = ()
    peermem: str | None = None
    """The peer-memory module loaded ("" none; None: not read)."""
    ofed: str = ""
    driver: str = ""
    kernel: str = ""
    unread: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SwitchPortConfig:
    port: str
    peer: str = ""
    """``gpu003:mlx5_2`` or ``spine01:swp5``: who the cable reaches (LLDP, else the cabling plan)."""
    role: str = ""
    """``host`` (a node's NIC) or ``uplink`` (another switch); "" for ports without a peer."""
    pfc: tuple[int, ...] | None = None
    mtu: int | None = None
    pfc_watchdog: bool | None = None

    @property
    def checked(self) -> bool:
        """Host and uplink ports carry RoCE; an unused port is not judged."""
        return self.role in ("host", "uplink")


@dataclass(frozen=True, slots=True)
class SwitchConfig:
    switch: str
    os: str = ""
    reason: str = ""
    trust: str = ""
    dscp_to_priority: Mapping[int, int] = field(default_factory=dict)
    ecn_traffic_classes: tuple[int, ...] | None = None
    ecn_min_threshold_bytes: int | None = None
    ecn_max_threshold_bytes: int | None = None
    lossless_buffer: bool | None = None
    buffer: str = ""
    """The lossless pool or profile found, in the switch's words."""
    ports: tuple[SwitchPortConfig, ...] = ()
    unread: tuple[str, ...] = ()

    def port(self, name: str) -> SwitchPortConfig | None:
        return next((p for p in self.ports if p.port == name), None)


@dataclass(frozen=True, slots=True)
class LinkEnds:
    """A cable between a NIC and a switch port, from LLDP (else the cabling plan)."""

    node: str
    nic: str
    switch: str
    port: str

    @property
    def name(self) -> str:
        return f"{self.node}:{self.nic}<->{self.switch}:{self.port}"


@dataclass(frozen=True, slots=True)
class FleetConfig:
    """Everything one ``fleet check`` read."""

    nodes: tuple[NodeConfig, ...] = ()
    switches: tuple[SwitchConfig, ...] = ()
    links: tuple[LinkEnds, ...] = ()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    return value


def fleet_config_json(config: FleetConfig) -> dict[str, Any]:
    """The configuration as JSON data (what baselines keep)."""
    result: dict[str, Any] = _plain(config)
    return result


def configuration_summary(config: FleetConfig) -> dict[str, dict[str, Any]]:
    """Per part (``node``, ``node:mlx5_N``, ``switch``, ``switch:port``) the settings a drift is read from:
    flat strings and numbers, comparable between two baselines."""
    parts: dict[str, dict[str, Any]] = {}
    for node in config.nodes:
        if node.reason:
            continue
        parts[node.node] = {"ofed": node.ofed, "driver": node.driver, "kernel": node.kernel,
                            "peermem": node.peermem or ""}
        for nic in node.nics:
            parts[nic.part] = {
                "trust": nic.trust, "pfc": ",".join(map(str, nic.pfc or ())), "firmware": nic.firmware,
                "dscp26": nic.dscp_to_priority.get(26, ""), "roce_mode": nic.roce_mode,
                "roce_tos": "" if nic.roce_tos is None else nic.roce_tos,
                "netdev_mtu": "" if nic.netdev_mtu is None else nic.netdev_mtu,
                "active_mtu": "" if nic.active_mtu is None else nic.active_mtu,
                "gid_index": "" if nic.gid_index is None else nic.gid_index,
                "dcqcn": ",".join(str(p) for p, on in sorted(nic.ecn_np.items()) if on and nic.ecn_rp.get(p)),
            }
    for switch in config.switches:
        if switch.reason:
            continue
        parts[switch.switch] = {
            "trust": switch.trust, "ecn_tcs": ",".join(map(str, switch.ecn_traffic_classes or ())),
            "ecn_min_bytes": switch.ecn_min_threshold_bytes or "", "ecn_max_bytes": switch.ecn_max_threshold_bytes or "",
            "lossless_buffer": switch.lossless_buffer, "dscp26": switch.dscp_to_priority.get(26, ""),
        }
        for port in switch.ports:
            if port.checked:
                parts[f"{switch.switch}:{port.port}"] = {
                    "pfc": ",".join(map(str, port.pfc or ())), "mtu": port.mtu or "",
                    "pfc_watchdog": port.pfc_watchdog}
    return parts
