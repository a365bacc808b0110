"""Snapshots of simulated machines at one instant: what the tool renderers print.

The model (``fleet.simulator.model``) computes these from the scenario, the traffic
model and the faults; the renderers in ``fleet.simulator.tools`` turn them into the
exact text layout of the real tools. Renderers never compute physics, the
model never formats text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fleet.simulator.qos_state import NicQos, NodeQos, SwitchQos


@dataclass(frozen=True, slots=True)
class OpticsLane:
    rx_power_mw: float
    tx_power_mw: float
    tx_bias_ma: float


@dataclass(frozen=True, slots=True)
class OpticsView:
    """A QSFP-DD/OSFP module as ``ethtool -m`` reports it (SFF-8636 / CMIS layout)."""

    identifier: str  # e.g. "0x18 (QSFP-DD Double Density 8X Pluggable Transceiver)"
    vendor_name: str
    vendor_pn: str
    vendor_sn: str
    temp_c: float
    voltage_v: float
    lanes: tuple[OpticsLane, ...]
    # alarm/warning thresholds, the module type's own (simulator.optics_modules):
    # (high alarm, low alarm, high warning, low warning)
    rx_power_thresholds_dbm: tuple[float, float, float, float]
    tx_power_thresholds_dbm: tuple[float, float, float, float]
    bias_thresholds_ma: tuple[float, float, float, float]
    temp_thresholds_c: tuple[float, float, float, float]
    voltage_thresholds_v: tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class QpView:
    lqpn: int
    rqpn: int
    type: str  # "RC", "UD", "GSI"
    state: str  # "RTS", "INIT", "ERR", ...
    pid: int
    comm: str  # "python3", or "[ib_core]" style for kernel owners
    sq_psn: int = 0
    rq_psn: int = 0


@dataclass(frozen=True, slots=True)
class GidView:
    index: int
    gid: str  # "0000:0000:0000:0000:0000:ffff:0a00:0101"
    ipv4: str  # "" for link-local
    roce_version: str  # "v1" | "v2"
    netdev: str


@dataclass(frozen=True, slots=True)
class LldpNeighbor:
    switch: str
    switch_port: str
    chassis_mac: str
    mgmt_ip: str
    port_descr: str = ""
    system_descr: str = ""


@dataclass(frozen=True, slots=True)
class NicView:
    """One RDMA NIC (one port) of a node."""

    name: str  # "mlx5_0"
    port: int  # 1
    rail: int
    netdev: str  # RoCE netdev, e.g. "ens1np0"; IB: "ibp24s0"
    link_layer: str  # "InfiniBand" | "Ethernet"
    state: str  # "ACTIVE" | "DOWN" | "INIT" | "ARMED"
    phys_state: str  # "LinkUp" | "Disabled" | "Polling"
    rate_gbps: int  # trained rate, e.g. 400 (degraded_rate fault lowers it)
    width: str  # "4X"
    speed_name: str  # "NDR", "HDR", "EDR" (IB) or "" for Ethernet names
    hca_type: str  # "MT4129"
    fw_version: str  # "28.39.1002"
    board_id: str  # "MT_0000000838"
    node_guid: str  # "0xa088c20300e1e2f4" style
    port_guid: str
    sys_image_guid: str
    lid: int  # IB only, 0 on RoCE
    sm_lid: int
    mac: str  # "b8:3f:d2:aa:bb:cc"
    mtu: int  # active MTU bytes, e.g. 4096
    counters: dict[str, int]  # sysfs counters/*, raw (port_xmit_data in 4-byte words)
    hw_counters: dict[str, int]  # sysfs hw_counters/*
    ethtool: dict[str, int]  # ethtool -S of the netdev, in the driver's order
    optics: OpticsView | None
    gids: tuple[GidView, ...]
    qps: tuple[QpView, ...]
    lldp: LldpNeighbor | None  # who this NIC's cable reaches (after any miswire)
    qos: NicQos | None = None  # its RoCE configuration (mlnx_qos, ECN, RDMA-CM, MTU, PCIe); None on InfiniBand
    carrier_changes: int = 1  # the netdev's carrier losses and returns since boot: up once, then a down and an up per flap


@dataclass(frozen=True, slots=True)
class GpuView:
    index: int
    name: str  # "NVIDIA H100 80GB HBM3"
    uuid: str
    pci_bus_id: str  # "00000000:18:00.0"
    util_pct: int
    mem_used_mib: int
    mem_total_mib: int
    temp_c: int
    power_w: float
    power_limit_w: float
    sm_clock_mhz: int
    max_sm_clock_mhz: int
    throttle_reasons: int  # NVML bitmask
    ecc_volatile_uncorrected: int
    ecc_aggregate_uncorrected: int
    xid_last: int  # 0: none
    xid_count: int
    pcie_replay: int
    nvlink_crc_errors: tuple[int, ...]  # per link
    nvlink_replay_errors: tuple[int, ...]
    nvlink_recovery_errors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str  # "gpu001"
    hostname_fqdn: str
    kernel: str  # uname -r
    driver_version: str  # NVIDIA driver
    cuda_version: str
    ofed_version: str
    mgmt_ip: str
    nics: tuple[NicView, ...]
    gpus: tuple[GpuView, ...]
    has_python3: bool = True
    qos: NodeQos | None = None  # node-wide configuration: peer memory, ACS, GPU PCIe links


@dataclass(frozen=True, slots=True)
class SwitchPortView:
    name: str  # "swp1" (NVUE) | "Ethernet0" (SONiC)
    alias: str  # SONiC alias, e.g. "etp1"; "" on NVUE
    speed_gbps: int
    oper_up: bool
    admin_up: bool
    mtu: int
    rx_bytes: int
    tx_bytes: int
    rx_packets: int
    tx_packets: int
    rx_drops: int
    tx_drops: int
    rx_errors: int
    tx_errors: int
    rx_pfc_pause: tuple[int, ...]  # per priority 0..7
    tx_pfc_pause: tuple[int, ...]
    ecn_marked: int
    queue_drops: tuple[int, ...]  # per unicast queue 0..7
    rx_bps: float  # rate over the last second, as `show interfaces counters` prints it
    tx_bps: float
    lldp: LldpNeighbor | None  # the neighbour on this port
    description: str = ""  # "uplink to spine01", "gpu003:mlx5_2"
    carrier_transitions: int = 1  # link state changes since boot: up once, then a down and an up per flap


@dataclass(frozen=True, slots=True)
class SwitchView:
    name: str
    os: str  # "cumulus" | "sonic"
    role: str  # "leaf" | "spine"
    version: str  # "5.9.1" / "SONiC.202311"
    mgmt_ip: str
    chassis_mac: str
    ports: tuple[SwitchPortView, ...]
    hash_seed: int
    ecmp_hash_fields: tuple[str, ...]  # enabled fields, NVUE names
    adaptive_routing: bool
    pending_config: dict[str, str] = field(default_factory=dict)  # staged, not applied (NVUE)
    config_history: tuple[tuple[int, str, str], ...] = ()  # (revision, date, message)
    qos: SwitchQos | None = None  # RoCE QoS: trust, DSCP map, PFC, ECN, watchdog, MTU, buffers


@dataclass(frozen=True, slots=True)
class NodeDrainView:
    """A node drained in Slurm: why, by whom, since when (unix seconds)."""

    reason: str
    user: str
    since: float


@dataclass(frozen=True, slots=True)
class SlurmNodesView:
    """The nodes as the Slurm head knows them: names, their kernel (for ``OS=``), the drained ones."""

    names: tuple[str, ...]
    kernel: str
    drains: Mapping[str, NodeDrainView]


@dataclass(frozen=True, slots=True)
class JobView:
    job_id: int
    name: str
    user: str
    account: str  # the tenant
    partition: str
    state: str  # "RUNNING", "PENDING"
    nodes: str  # hostlist "gpu[001-008]"
    node_count: int
    start_time: float
    time_limit_min: int
