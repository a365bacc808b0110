"""The simulated fleet at any instant: NodeView, SwitchView and JobView snapshots.

Every number is a pure function of the scenario, its seed, the simulated time
``t`` (seconds since the simulator started) and the switch configuration
applied so far (the only mutable state: hash seeds, hash fields, adaptive
routing, staged NVUE changes and their history). Counters integrate the traffic
model's per-second rates over the stretches of time in which the network state
was constant, so they only grow, at the model's rates (hardware counters
saturate where the real ones do; a switchd restart clears a switch's port
counters, as on the real switch). Views are computed on demand, per command.
"""

from __future__ import annotations

import bisect
import fnmatch
import itertools
import math
import time
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

import hostlist

from fleet.fabric.counters import IB_SATURATING_COUNTER_BITS
from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.simulator import faults as fault_rules
from fleet.simulator.faults import ECC_XIDS, FaultEffects, NicKey
from fleet.simulator.optics_modules import ModuleType, module_type
from fleet.simulator.qos_state import (
    FW_VERSION,
    GPU_PCI_BUSES,
    KERNEL,
    NIC_PCI_BUSES,
    NVIDIA_DRIVER,
    NodeQos,
    QosPhysics,
    QosState,
)
from fleet.simulator.scenario import FaultSpec, Scenario
from fleet.simulator.state import (
    GidView,
    GpuView,
    JobView,
    LldpNeighbor,
    NicView,
    NodeDrainView,
    NodeView,
    OpticsLane,
    OpticsView,
    QpView,
    SwitchPortView,
    SwitchView,
)
from fleet.simulator.tools.ethtool import mlx5_ethtool_counter_names
from fleet.simulator.tools.sysfs import IB_PORT_COUNTERS
from fleet.simulator.topology import Topology
from fleet.simulator.traffic import (
    ECMP_FIELDS,
    LOS_DBM,
    PKT_BYTES,
    SWITCHD_RESTART_S,
    Fabric,
    NetState,
    ProbeEstimate,
    Solution,
    SwitchConfig,
    TxEnd,
    nic_ip,
    unit_random,
)

# --- the machines' fixed identity (an HGX H100 node with 8 ConnectX-7 NICs) -----------

GPU_NAME = "NVIDIA H100 80GB HBM3"
GPU_MEM_MIB = 81559
GPU_MAX_SM_MHZ = 1980
GPU_POWER_LIMIT_W = 700.0
NVLINKS_PER_GPU = 18
HCA_TYPE = "MT4129"
BOARD_ID = "MT_0000000838"
CUDA_VERSION = "12.4"
CUMULUS_VERSION = "5.9.1"
SONIC_VERSION = "SONiC.202311.1"

HW_COUNTERS_IB = (
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "rx_atomic_requests",
    "rx_dct_connect",
    "rx_read_requests",
    "rx_write_requests",
)
"""mlx5 ``hw_counters`` of an InfiniBand port (lifespan is added by the sysfs renderer)."""

HW_COUNTERS_ROCE = tuple(
    sorted(
        (
            *HW_COUNTERS_IB,
            "np_cnp_sent",
            "np_ecn_marked_roce_packets",
            "roce_adp_retrans",
            "roce_adp_retrans_to",
            "roce_slow_restart",
            "roce_slow_restart_cnps",
            "roce_slow_restart_trans",
            "rp_cnp_handled",
            "rp_cnp_ignored",
            "rx_icrc_encapsulated",
        )
    )
)
"""mlx5 ``hw_counters`` of a RoCE port, sorted as sysfs lists them."""

IPOIB_ETHTOOL = ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_queue_dropped", "rx_out_of_buffer")
"""``ethtool -S`` of an IPoIB netdev: software counters only."""


Source = tuple[tuple[str, float], ...]
"""A counter as a sum of model rate totals times factors."""

STEP = "step:"

BACKGROUND = {"bg_pkts": 35.0, "bg_bytes": 35.0 * 180, "mcast": 0.05}
"""Non-RDMA traffic of a RoCE netdev (ARP, LLDP, ND, management), per second."""

_UNMODULATED = frozenset({"rx_bits", "corrected_bits", "symbol_errors"})
_MOD_AMPLITUDE = 0.04
_MOD_OMEGA = 2 * math.pi / 37.0


def _s(*pairs: tuple[str, float]) -> Source:
    return pairs


def _counter_sources() -> dict[str, Source]:
    both = {
        "port_xmit_data": _s(("tx_bytes", 0.25)),
        "port_rcv_data": _s(("rx_bytes", 0.25)),
        "port_xmit_packets": _s(("tx_pkts", 1.0)),
        "port_rcv_packets": _s(("rx_pkts", 1.0)),
        "unicast_xmit_packets": _s(("tx_pkts", 1.0)),
        "unicast_rcv_packets": _s(("rx_pkts", 1.0)),
        "multicast_xmit_packets": _s(("mcast", 0.5)),
        "multicast_rcv_packets": _s(("mcast", 1.0)),
        "port_xmit_wait": _s(("xmit_wait", 1.0)),
        "symbol_error": _s(("symbol_errors", 1.0)),
        "port_rcv_errors": _s(("rcv_errors", 1.0)),
        "link_downed": _s((STEP + "link_down", 1.0)),
        "link_error_recovery": _s((STEP + "link_down", 1.0)),
    }
    return both


def _hw_sources() -> dict[str, Source]:
    return {
        "duplicate_request": _s(("dup_requests", 1.0)),
        "local_ack_timeout_err": _s(("ack_timeouts", 1.0)),
        "out_of_buffer": _s(("out_of_buffer", 1.0)),
        "out_of_sequence": _s(("out_of_sequence", 1.0)),
        "packet_seq_err": _s(("seq_naks", 1.0)),
        "rnr_nak_retry_err": _s(("rnr_retry", 1.0)),
        "req_cqe_error": _s(("cqe_errors", 1.0)),
        "req_cqe_flush_error": _s(("cqe_errors", 0.5)),
        "rx_write_requests": _s(("rx_write_requests", 1.0)),
        "rx_read_requests": _s(("rx_write_requests", 0.002)),
        "np_cnp_sent": _s(("cnp_sent", 1.0)),
        "np_ecn_marked_roce_packets": _s(("ecn_marked_rx", 1.0)),
        "rp_cnp_handled": _s(("cnp_handled", 1.0)),
        "rp_cnp_ignored": _s(("cnp_ignored", 1.0)),
        "roce_adp_retrans": _s(("retrans", 1.0)),
    }


def _ethtool_sources() -> dict[str, Source]:
    bg = (("bg_pkts", 1.0),)
    sources: dict[str, Source] = {
        "rx_packets": bg,
        "rx_bytes": (("bg_bytes", 1.0),),
        "tx_packets": (("bg_pkts", 0.6),),
        "tx_bytes": (("bg_bytes", 0.6),),
        "rx_csum_complete": bg,
        "tx_csum_partial": (("bg_pkts", 0.6),),
        "tx_cqes": (("bg_pkts", 0.6),),
        "ch_events": (("bg_pkts", 0.9),),
        "ch_poll": (("bg_pkts", 1.1),),
        "ch_arm": (("bg_pkts", 0.9),),
        "rx_out_of_buffer": (("out_of_buffer", 1.0),),
        "rx_vport_unicast_packets": bg,
        "rx_vport_unicast_bytes": (("bg_bytes", 1.0),),
        "tx_vport_unicast_packets": (("bg_pkts", 0.6),),
        "tx_vport_unicast_bytes": (("bg_bytes", 0.6),),
        "rx_vport_multicast_packets": (("mcast", 1.0),),
        "rx_vport_multicast_bytes": (("mcast", 90.0),),
        "rx_vport_rdma_unicast_packets": (("rx_pkts", 1.0),),
        "rx_vport_rdma_unicast_bytes": (("rx_bytes", 1.0),),
        "tx_vport_rdma_unicast_packets": (("tx_pkts", 1.0),),
        "tx_vport_rdma_unicast_bytes": (("tx_bytes", 1.0),),
        "tx_packets_phy": (("tx_pkts", 1.0), ("bg_pkts", 0.6)),
        "rx_packets_phy": (("rx_pkts", 1.0), ("bg_pkts", 1.0), ("mcast", 1.0)),
        "rx_crc_errors_phy": (("rcv_errors", 1.0),),
        "tx_bytes_phy": (("tx_bytes", 1.0), ("bg_bytes", 0.6)),
        "rx_bytes_phy": (("rx_bytes", 1.0), ("bg_bytes", 1.0), ("mcast", 90.0)),
        "rx_multicast_phy": (("mcast", 1.0),),
        "tx_mac_control_phy": (("tx_pause", 1.0),),
        "rx_mac_control_phy": (("rx_pause", 1.0),),
        "rx_pause_ctrl_phy": (("rx_pause", 1.0),),
        "tx_pause_ctrl_phy": (("tx_pause", 1.0),),
        "rx_discards_phy": (("rx_discards", 1.0),),
        "rx_65_to_127_bytes_phy": (("bg_pkts", 0.7), ("mcast", 1.0)),
        "rx_128_to_255_bytes_phy": (("bg_pkts", 0.3),),
        "rx_4096_to_8191_bytes_phy": (("rx_pkts", 1.0),),
        "link_down_events_phy": ((STEP + "link_down", 1.0),),
        "rx_pcs_symbol_err_phy": (("symbol_errors", 1.0),),
        "rx_corrected_bits_phy": (("corrected_bits", 1.0),),
        "rx_bits_phy": (("rx_bits", 1.0),),
        "rx_err_lane_0_phy": (("corrected_bits", 0.26),),
        "rx_err_lane_1_phy": (("corrected_bits", 0.24),),
        "rx_err_lane_2_phy": (("corrected_bits", 0.25),),
        "rx_err_lane_3_phy": (("corrected_bits", 0.25),),
        "rx_prio0_bytes": (("bg_bytes", 1.0),),
        "rx_prio0_packets": bg,
        "tx_prio0_bytes": (("bg_bytes", 0.6),),
        "tx_prio0_packets": (("bg_pkts", 0.6),),
        "rx_prio3_bytes": (("rx_bytes", 1.0),),
        "rx_prio3_packets": (("rx_pkts", 1.0),),
        "rx_prio3_discards": (("rx_discards", 1.0),),
        "tx_prio3_bytes": (("tx_bytes", 1.0),),
        "tx_prio3_packets": (("tx_pkts", 1.0),),
        "rx_prio3_pause": (("rx_pause", 1.0),),
        "rx_prio3_pause_duration": (("rx_pause_usec", 1.0),),
        "tx_prio3_pause": (("tx_pause", 1.0),),
        "tx_prio3_pause_duration": (("tx_pause_usec", 1.0),),
        "rx_prio3_pause_transition": (("rx_pause", 0.5),),
        "tx_pause_storm_warning_events": ((STEP + "storm_warning", 1.0),),
        "tx_pause_storm_error_events": ((STEP + "storm_error", 1.0),),
        "rx_prio3_buf_discard": (("rx_discards", 1.0),),
        "rx_prio3_marked": (("ecn_marked_rx", 1.0),),
    }
    return sources


@dataclass(frozen=True, slots=True)
class CounterTable:
    """One counter file or listing: every name in order (zeros), and the names the model drives.

    Most driven counters are one model total times a factor (``single``); the
    few that sum several totals or count steps are ``mixed``. Split once here so
    that filling a table, done for every NIC of every view, is one short loop.
    """

    zeros: dict[str, int]
    single: tuple[tuple[str, str, float, int], ...]  # (name, total, factor, saturation ceiling)
    mixed: tuple[tuple[str, Source, int], ...]  # (name, source, saturation ceiling)


def _table(names: tuple[str, ...], sources: Mapping[str, Source]) -> CounterTable:
    unbounded = 2**64 - 1
    sourced = [
        (name, sources[name], 2 ** IB_SATURATING_COUNTER_BITS[name] - 1 if name in IB_SATURATING_COUNTER_BITS else unbounded)
        for name in names
        if name in sources
    ]
    return CounterTable(
        zeros=dict.fromkeys(names, 0),
        single=tuple(
            (name, source[0][0], source[0][1], ceiling)
            for name, source, ceiling in sourced
            if len(source) == 1 and not source[0][0].startswith(STEP)
        ),
        mixed=tuple(
            (name, source, ceiling)
            for name, source, ceiling in sourced
            if len(source) != 1 or source[0][0].startswith(STEP)
        ),
    )


PORT_TABLE = _table(IB_PORT_COUNTERS, _counter_sources())
HW_ROCE_TABLE = _table(HW_COUNTERS_ROCE, _hw_sources())
HW_IB_TABLE = _table(HW_COUNTERS_IB, _hw_sources())
ETHTOOL_ROCE_TABLE = _table(mlx5_ethtool_counter_names(), _ethtool_sources())
ETHTOOL_IPOIB_TABLE = _table(IPOIB_ETHTOOL, _ethtool_sources())


@dataclass(frozen=True, slots=True)
class NicIdentity:
    """What a NIC is, as opposed to what it counts: the same at every instant of a run.

    perftest prints exactly these (device, link type, LID, MTU, GIDs); computing
    them alone costs a few microseconds where a whole NicView (counters, ethtool,
    optics, QPs) costs a millisecond.
    """

    name: str
    rail: int
    netdev: str
    link_layer: str  # "Ethernet" (RoCE) | "InfiniBand"
    lid: int
    mtu: int  # bytes
    mac: str
    guid: str
    gids: tuple[GidView, ...]


@dataclass(frozen=True, slots=True)
class _OpticsFixed:
    """The seeded constants of one optical module; only drift (time) and attenuation (faults) move its readings."""

    serial: str
    kind: ModuleType
    drift_phase: float  # radians
    temp_c: float  # before drift
    voltage_v: float
    lanes: tuple[tuple[float, float, float], ...]  # (rx offset dB, tx dBm before drift, bias mA) per lane


@dataclass(frozen=True, slots=True)
class _GpuFixed:
    """The seeded constants of one GPU; load, faults and time move the rest."""

    uuid: str
    phase: float  # radians, of its load wobble
    idle_temp_c: float
    idle_power_w: float
    busy_mem_mib: int


@dataclass(frozen=True, slots=True)
class HostBehaviour:
    """How a machine's SSH server behaves now: refuses, hangs, or answers after ``delay_s``."""

    unreachable: bool = False
    hung: bool = False
    delay_s: float = 0.0


class StateKey(NamedTuple):
    """What makes two instants' network states equal: the cache key of traffic solutions."""

    active: frozenset[int]  # indices of active faults
    escalated: frozenset[int]  # pfc_storm faults past their escalation
    configs: tuple[tuple[str, SwitchConfig], ...]  # switches whose applied config differs from default
    collision: frozenset[str]  # leaves whose ECMP collision is in effect
    restarting: frozenset[str]  # switches restarting switchd
    qos: QosPhysics  # where RoCE has no working PFC or DCQCN (misconfigurations, and fixes of them)


@dataclass(frozen=True, slots=True)
class AppliedConfig:
    t: float
    config: SwitchConfig
    restart: bool


class FleetModel:
    """The whole simulated fleet. Query with a simulated time ``t`` (seconds after start)."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None, start_unix: float | None = None) -> None:
        self.scenario = scenario
        self.seed = scenario.fabric.seed if seed is None else seed
        self.start_unix = time.time() if start_unix is None else start_unix
        self._start_monotonic = time.monotonic() - (time.time() - self.start_unix)
        os_map = {switch: spec.os for spec in scenario.switch_os for switch in spec.names}
        self.topology = Topology(scenario.fabric, os_map)
        self.fabric = Fabric(self.topology, scenario.jobs, self.seed)
        self.roce = scenario.fabric.link_layer == "roce"
        self._applied: dict[str, list[AppliedConfig]] = {}
        self.pending: dict[str, dict[str, str]] = {}
        self.drains: dict[str, NodeDrainView] = {}
        """Nodes drained in Slurm (``scontrol update ... State=DRAIN``), until resumed."""
        """Staged, not yet applied switch settings (NVUE ``nv set``), per switch."""
        self.history: dict[str, list[tuple[int, str, str]]] = {}
        """Applied configuration revisions per switch: (revision, date, message)."""
        reported = scenario.reported
        self.qos = QosState(
            self.topology, scenario.faults, self.roce,
            firmware=reported.nic_firmware if reported.nic_firmware is not None else FW_VERSION,
            kernel=reported.kernel if reported.kernel is not None else KERNEL,
            driver=reported.gpu_driver if reported.gpu_driver is not None else NVIDIA_DRIVER,
        )
        """Every machine's RoCE/PCIe/driver configuration: faults misconfigure it, commands write it."""
        self._fault_times = fault_rules.boundaries(scenario.faults)
        self._active_faults: dict[int, frozenset[int]] = {}
        """The faults active between two of ``_fault_times``, by how many of them have passed."""
        self._storms = frozenset(i for i, f in enumerate(scenario.faults) if f.kind == "pfc_storm")
        self._solutions: dict[StateKey, tuple[NetState, Solution]] = {}
        self._identities: dict[NicKey, NicIdentity] = {}
        self._optics_constants: dict[NicKey, _OpticsFixed] = {}
        self._neighbors: dict[TxEnd, LldpNeighbor] = {}
        self._gpu_constants: dict[tuple[str, int], _GpuFixed] = {}
        self._baselines: dict[tuple[TxEnd, str], dict[str, float]] = {}
        self._effects: dict[tuple[tuple[frozenset[int], frozenset[int]], QosPhysics], FaultEffects] = {}
        self._phases: dict[TxEnd, float] = {}
        self._config_revision = 0
        self._last_segments: tuple[tuple[float, float, int], list[tuple[float, float, Solution]]] | None = None
        self.memo: dict[Hashable, object] = {}
        """Run-long store for renderers: what depends only on the fleet's fixed shape (sysfs paths)."""
        self._hostile: dict[str, tuple[FaultSpec, ...]] = {}
        """``hostile_output`` faults by the machine they target."""
        for fault in scenario.faults:
            if fault.kind == "hostile_output":
                self._hostile[fault.target] = (*self._hostile.get(fault.target, ()), fault)
        reported = scenario.reported
        self.gpu_name = reported.gpu_name if reported.gpu_name is not None else GPU_NAME
        self.gpu_driver = reported.gpu_driver if reported.gpu_driver is not None else NVIDIA_DRIVER
        self.nic_firmware = reported.nic_firmware if reported.nic_firmware is not None else FW_VERSION
        self.kernel = reported.kernel if reported.kernel is not None else KERNEL

    # ------------------------------------------------------------------ time

    def now(self) -> float:
        """Simulated seconds since start, on the monotonic clock (a wall-clock step never rewinds counters)."""
        return time.monotonic() - self._start_monotonic

    def unix(self, t: float) -> float:
        return self.start_unix + t

    def boot(self) -> None:
        """Solve the traffic and draw every NIC's fixed parts (identity, counters' history, wobble) now.

        A real fleet's nodes booted and carried traffic long before anyone logs in; drawn on
        first use instead, the first commands (a link test's checks, on every node at once)
        paid for all of it while the probes waited.
        """
        self.solution(self.now())
        for node in self.topology.nodes:
            for rail in range(RAILS_PER_NODE):
                end = (node, nic_name(rail))
                self.nic_identity(node, rail)
                self._baseline(end, node)
                self._phase(end)

    # ------------------------------------------------------------------ switch configuration

    def switch_config(self, switch: str, t: float) -> SwitchConfig:
        """The configuration in effect on ``switch`` at ``t``."""
        config = self.fabric.default_config(switch)
        for applied in self._applied.get(switch, ()):
            if applied.t <= t:
                config = applied.config
        return config

    def apply_switch_config(self, switch: str, t: float, config: SwitchConfig, *, restart: bool, message: str) -> int:
        """Apply ``config`` at ``t``; ``restart``: switchd restarts (no forwarding for a moment).

        Returns the new configuration revision.
        """
        self._applied.setdefault(switch, []).append(AppliedConfig(t, config, restart))
        history = self.history.setdefault(switch, [])
        revision = (history[-1][0] if history else 0) + 1
        date = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.unix(t)))
        history.append((revision, date, message))
        self._solutions.clear()
        self._config_revision += 1
        return revision

    def switch_config_at_revision(self, switch: str, revision: int) -> SwitchConfig:
        """The hash configuration NVUE revision ``revision`` applied (0: the switch's default)."""
        applied = self._applied.get(switch, [])
        if revision <= 0 or revision > len(applied):
            return self.fabric.default_config(switch)
        return applied[revision - 1].config

    def restarting(self, t: float) -> frozenset[str]:
        return frozenset(
            switch
            for switch, applied in self._applied.items()
            if any(a.restart and a.t <= t < a.t + SWITCHD_RESTART_S for a in applied)
        )

    def last_restart(self, switch: str, t: float) -> float | None:
        starts = [a.t for a in self._applied.get(switch, ()) if a.restart and a.t <= t]
        return max(starts) if starts else None

    # ------------------------------------------------------------------ network state

    def effects(self, t: float) -> FaultEffects:
        """The faults' effects at ``t``, with the RoCE configuration in force then (``self.qos``): folded once
        per set of active (and escalated) faults and configuration."""
        key = self._fault_key(t)
        qos = self.qos.physics(t, key[0])
        effects = self._effects.get((key, qos))
        if effects is None:
            if len(self._effects) > 64:
                self._effects.clear()
            effects = replace(fault_rules.effects(self.scenario.faults, self.topology, t),
                              ecn_off_nics=qos.ecn_off_nics, ecn_off_switches=qos.ecn_off_switches,
                              pfc_off=qos.pfc_off)
            self._effects[(key, qos)] = effects
        return effects

    def _fault_key(self, t: float) -> tuple[frozenset[int], frozenset[int]]:
        """The faults active at ``t`` and the pfc_storm faults past their escalation: all that moves effects."""
        faults = self.scenario.faults
        # every fault starts and ends on one of _fault_times: between two of them the same faults are
        # active, so they are worked out once per stretch, not once per command and per probe
        passed = bisect.bisect_right(self._fault_times, t)
        active = self._active_faults.get(passed)
        if active is None:
            active = self._active_faults[passed] = frozenset(i for i, f in enumerate(faults) if f.active(t))
        storms = active & self._storms
        escalated = (
            frozenset(i for i in storms if t - faults[i].at >= fault_rules.STORM_ESCALATION_S) if storms else storms
        )
        return active, escalated

    def _state_key(self, t: float) -> StateKey:
        faults = self.scenario.faults
        active, escalated = self._fault_key(t)
        configs = tuple(
            sorted(
                (s, self.switch_config(s, t))
                for s in self._applied
                if self.switch_config(s, t) != self.fabric.default_config(s)
            )
        )
        collision = frozenset(
            f.target
            for i, f in enumerate(faults)
            if i in active
            and f.kind == "ecmp_collision"
            and _same_hash(self.switch_config(f.target, t), self.switch_config(f.target, f.at),
                           ignore_fields=f.param("survives_hash_fields") > 0)
        )
        return StateKey(active, escalated, configs, collision, self.restarting(t), self.qos.physics(t, active))

    def solution(self, t: float) -> tuple[NetState, Solution]:
        """The traffic model's steady state at ``t`` (cached per distinct network state)."""
        key = self._state_key(t)
        cached = self._solutions.get(key)
        if cached is None:
            state = NetState(
                effects=self.effects(t), configs=key.configs, collision=key.collision, restarting=key.restarting
            )
            cached = (state, self.fabric.solve(state))
            if len(self._solutions) > 64:
                self._solutions.clear()
            self._solutions[key] = cached
        return cached

    def segments(self, t: float, since: float = 0.0) -> list[tuple[float, float]]:
        """Stretches of [since, t] during which the network state was constant."""
        cuts = set(self._fault_times) | set(self.qos.write_times)
        for applied in self._applied.values():
            for a in applied:
                cuts.add(a.t)
                if a.restart:
                    cuts.add(a.t + SWITCHD_RESTART_S)
        points = [since, *sorted(c for c in cuts if since < c < t), t]
        return [(a, b) for a, b in itertools.pairwise(points) if b > a]

    # ------------------------------------------------------------------ counters

    def _segment_solutions(self, t: float, since: float) -> list[tuple[float, float, Solution]]:
        """``segments(t, since)`` with each stretch's solution; the last answer is kept, as a node's
        8 NICs (and a switch's ports) ask for the same instant one after the other."""
        key = (t, since, self._config_revision + len(self.qos.write_times))
        last = self._last_segments
        if last is not None and last[0] == key:
            return last[1]
        stretches = [(a, b, self.solution((a + b) / 2)[1]) for a, b in self.segments(t, since)]
        self._last_segments = (key, stretches)
        return stretches

    def _phase(self, end: TxEnd) -> float:
        """The seeded phase of an end's traffic wobble, radians (drawn once per run)."""
        phase = self._phases.get(end)
        if phase is None:
            phase = self._phases[end] = 2 * math.pi * unit_random(self.seed, "phase", *end)
        return phase

    def _totals(self, end: TxEnd, t: float, since: float = 0.0) -> dict[str, float]:
        """Model rate totals of one end from ``since`` to ``t``, with a smooth seeded wobble."""
        phase = self._phase(end)
        totals: dict[str, float] = {}
        for a, b, solution in self._segment_solutions(t, since):
            rates = solution.rates.get(end)
            plain = b - a
            wobble = plain - (_MOD_AMPLITUDE / _MOD_OMEGA) * (
                math.cos(_MOD_OMEGA * b + phase) - math.cos(_MOD_OMEGA * a + phase)
            )
            if rates:
                for name, rate in rates.items():
                    totals[name] = totals.get(name, 0.0) + rate * (plain if name in _UNMODULATED else wobble)
            for name, rate in BACKGROUND.items():
                totals[name] = totals.get(name, 0.0) + rate * wobble
        return totals

    def _baseline(self, end: TxEnd, host: str) -> dict[str, float]:
        """What the counters held when the simulator started: days of earlier, healthy traffic (a fresh copy)."""
        baseline = self._baselines.get((end, host))
        if baseline is None:
            baseline = self._baselines[(end, host)] = self._draw_baseline(end, host)
        return dict(baseline)

    def _draw_baseline(self, end: TxEnd, host: str) -> dict[str, float]:
        uptime = 86400 * (2 + 38 * unit_random(self.seed, "uptime", host))
        gbps = self.fabric.link_gbps * (0.05 + 0.3 * unit_random(self.seed, "history", *end))
        nbytes = uptime * gbps * 1e9 / 8
        pkts = nbytes / PKT_BYTES
        bits = uptime * self.fabric.link_gbps * 1e9
        return {
            "tx_bytes": nbytes,
            "rx_bytes": nbytes * 0.998,
            "tx_pkts": pkts,
            "rx_pkts": pkts * 0.998,
            "rx_write_requests": pkts / 64,
            "ecn_marked_rx": pkts * 3e-7,
            "cnp_sent": pkts * 1.5e-7,
            "cnp_handled": pkts * 1.5e-7,
            "rx_pause": pkts * 1e-9,
            "rx_pause_usec": pkts * 5e-9,
            "rx_bits": bits,
            "corrected_bits": bits * self.fabric.base_ber(end),
            "bg_pkts": uptime * BACKGROUND["bg_pkts"],
            "bg_bytes": uptime * BACKGROUND["bg_bytes"],
            "mcast": uptime * BACKGROUND["mcast"],
        }

    @staticmethod
    def _fill(table: CounterTable, totals: Mapping[str, float], steps: Mapping[str, int]) -> dict[str, int]:
        values = dict(table.zeros)
        get = totals.get
        for name, key, factor, ceiling in table.single:
            value = int(get(key, 0.0) * factor)
            values[name] = value if value < ceiling else ceiling
        for name, source, ceiling in table.mixed:
            total = 0.0
            for key, factor in source:
                total += steps.get(key, 0) * factor if key.startswith(STEP) else get(key, 0.0) * factor
            values[name] = min(int(total), ceiling)
        return values

    # ------------------------------------------------------------------ nodes

    def nic_cable(self, node: str, rail: int, effects: FaultEffects) -> TxEnd:
        """The switch port a NIC's cable reaches now (after miswires)."""
        owner = effects.swapped.get((node, rail), (node, rail))
        cable = self.topology.designed_cable(owner[0], owner[1])
        return cable.switch, cable.port

    def _nic_down(self, node: str, rail: int, t: float, effects: FaultEffects) -> bool:
        cable = (node, nic_name(rail))
        switch, _ = self.nic_cable(node, rail, effects)
        if cable in effects.down or switch in self.restarting(t):
            return True
        if self.fabric.rx_power_dbm(cable, effects) < LOS_DBM:
            return True
        flap = effects.flapping.get(cable)
        return flap is not None and fault_rules.flap_is_down(flap[0], flap[1], t)

    def _link_down_steps(self, node: str, rail: int, t: float, effects: FaultEffects) -> int:
        cable = (node, nic_name(rail))
        count = fault_rules.link_down_events(self.scenario.faults, self.topology, cable, t)
        count += self._dark_episodes(cable, t)
        if self._applied:  # switchd restarts of the switch at the cable's end
            switch, _ = self.nic_cable(node, rail, effects)
            count += sum(1 for a in self._applied.get(switch, ()) if a.restart and a.t <= t)
        return count

    def _dark_episodes(self, cable: tuple[str, str], t: float) -> int:
        """How often attenuation took the cable's light below the receiver's loss of signal
        (``LOS_DBM``) from the start to ``t``: each time, the link went down, a link-down event like
        any other, counted by the PHY and the netdev's carrier alike."""
        attenuating = [f for f in self.scenario.faults
                       if f.kind == "optics_attenuation" and f.at <= t
                       and fault_rules.cable_of(self.topology, f.target) == cable]
        if not attenuating:
            return 0
        lit_dbm = self.fabric.rx_power_dbm(cable, FaultEffects())
        moments = sorted({f.at for f in attenuating}
                         | {f.until for f in attenuating if f.until is not None and f.until <= t})
        episodes, dark = 0, False
        for moment in moments:
            now_dark = lit_dbm - sum(f.param("db") for f in attenuating if f.active(moment)) < LOS_DBM
            episodes += now_dark and not dark
            dark = now_dark
        return episodes

    def _storm_steps(self, node: str, rail: int, t: float) -> dict[str, int]:
        warning = error = 0
        for fault in self.scenario.faults:
            if fault.kind == "pfc_storm" and fault_rules.parse_nic(fault.target) == (node, rail) and fault.at <= t:
                warning += 1
                error += int(t - fault.at >= fault_rules.STORM_ESCALATION_S)
        return {STEP + "storm_warning": warning, STEP + "storm_error": error}

    def node_view(self, node: str, t: float) -> NodeView:
        """Everything ``node`` reports at ``t``."""
        return NodeParts(self, node, t).view()

    def node_parts(self, node: str, t: float) -> NodeParts:
        """``node`` at ``t``, computed a part at a time as a command reads it."""
        return NodeParts(self, node, t)

    def netdev(self, rail: int) -> str:
        bus = NIC_PCI_BUSES[rail]
        return f"enp{bus}s0np0" if self.roce else f"ibp{bus}s0"

    def _mac(self, node: str, rail: int) -> str:
        index = self.topology.node_index(node)
        return f"b8:3f:d2:{(index >> 8) & 0xFF:02x}:{index & 0xFF:02x}:{rail * 2:02x}"

    def _guid(self, node: str, rail: int) -> str:
        index = self.topology.node_index(node)
        return f"0xa088c20300{(index >> 8) & 0xFF:02x}{index & 0xFF:02x}{rail:02x}"

    def nic_identity(self, node: str, rail: int) -> NicIdentity:
        """A NIC's fixed identity (computed once per run): what a command needs that counts nothing."""
        identity = self._identities.get((node, rail))
        if identity is None:
            mac = self._mac(node, rail)
            guid = self._guid(node, rail)
            identity = NicIdentity(
                name=nic_name(rail),
                rail=rail,
                netdev=self.netdev(rail),
                link_layer="Ethernet" if self.roce else "InfiniBand",
                lid=0 if self.roce else self.topology.node_index(node) * RAILS_PER_NODE + rail + 2,
                mtu=4096,
                mac=mac,
                guid=guid,
                gids=self._gids(node, rail, mac, guid),
            )
            self._identities[(node, rail)] = identity
        return identity

    def _optics(self, node: str, rail: int, effects: FaultEffects, t: float) -> OpticsView:
        cable = (node, nic_name(rail))
        rx_dbm = self.fabric.rx_power_dbm(cable, effects)
        fixed = self._optics_fixed(node, rail)
        drift = 0.02 * math.sin(t / 60.0 + fixed.drift_phase)
        lanes = tuple(
            OpticsLane(
                rx_power_mw=round(10 ** ((rx_dbm + rx_offset + drift) / 10), 4),
                tx_power_mw=round(10 ** ((tx_dbm + drift) / 10), 4),
                tx_bias_ma=bias_ma,
            )
            for rx_offset, tx_dbm, bias_ma in fixed.lanes
        )
        kind = fixed.kind
        return OpticsView(
            identifier="0x19 (OSFP 8X Pluggable Transceiver)",
            vendor_name=kind.vendor_name,
            vendor_pn=kind.vendor_pn,
            vendor_sn=fixed.serial,
            temp_c=round(fixed.temp_c + 20 * drift, 2),
            voltage_v=fixed.voltage_v,
            lanes=lanes,
            rx_power_thresholds_dbm=kind.rx_power_dbm,
            tx_power_thresholds_dbm=kind.tx_power_dbm,
            bias_thresholds_ma=kind.bias_ma,
            temp_thresholds_c=kind.temp_c,
            voltage_thresholds_v=kind.voltage_v,
        )

    def _optics_fixed(self, node: str, rail: int) -> _OpticsFixed:
        """A module's seeded constants (serial, per-lane offsets, bias), drawn once per run."""
        fixed = self._optics_constants.get((node, rail))
        if fixed is None:
            kind = module_type(unit_random(self.seed, "module", node, rail))
            (tx_low, tx_high), (bias_low, bias_high) = kind.tx_range_dbm, kind.bias_range_ma
            temp_low, temp_high = kind.temp_range_c
            fixed = _OpticsFixed(
                serial=f"MT2330FT{int(unit_random(self.seed, 'sn', node, rail) * 99999):05d}",
                kind=kind,
                drift_phase=6.283 * unit_random(self.seed, "drift", node, rail),
                temp_c=temp_low + (temp_high - temp_low) * unit_random(self.seed, "otemp", node, rail),
                voltage_v=round(3.29 + 0.03 * unit_random(self.seed, "volt", node, rail), 4),
                lanes=tuple(
                    (
                        0.6 * (unit_random(self.seed, "lane", node, rail, lane) - 0.5),
                        tx_low + (tx_high - tx_low) * unit_random(self.seed, "tx", node, rail, lane),
                        round(bias_low + (bias_high - bias_low) * unit_random(self.seed, "bias", node, rail, lane), 3),
                    )
                    for lane in range(4)
                ),
            )
            self._optics_constants[(node, rail)] = fixed
        return fixed

    def _gids(self, node: str, rail: int, mac: str, guid: str, extra_ipv6: bool = False) -> tuple[GidView, ...]:
        netdev = self.netdev(rail)
        if not self.roce:
            raw = guid.removeprefix("0x")
            groups = ":".join(raw[i : i + 4] for i in range(0, 16, 4))
            return (GidView(0, f"fe80:0000:0000:0000:{groups}", "", "", netdev),)
        eui = port_guid(mac).removeprefix("0x")
        link_local = "fe80:0000:0000:0000:" + ":".join(eui[i : i + 4] for i in range(0, 16, 4))
        ip = nic_ip(self.topology, node, rail)
        a, b, c, d = (int(x) for x in ip.split("."))
        mapped = f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"
        gids = [GidView(0, link_local, "", "v1", netdev), GidView(1, link_local, "", "v2", netdev)]
        if extra_ipv6:  # a global IPv6 address takes the next two GID entries, ahead of the IPv4 one
            index = self.topology.node_index(node)
            v6 = f"fd00:0000:0000:{rail:04x}:0000:0000:0000:{index + 1:04x}"
            gids += [GidView(2, v6, "", "v1", netdev), GidView(3, v6, "", "v2", netdev)]
        first = len(gids)
        gids += [GidView(first, mapped, ip, "v1", netdev), GidView(first + 1, mapped, ip, "v2", netdev)]
        return tuple(gids)

    def _qps(
        self, node: str, rail: int, effects: FaultEffects, down: bool, totals: Mapping[str, float]
    ) -> tuple[QpView, ...]:
        qps = [QpView(1, 0, "GSI", "RTS", 0, "[ib_core]")]
        if not self.roce:
            qps.insert(0, QpView(0, 0, "SMI", "RTS", 0, "[ib_core]"))
        job = self.fabric.job_of_node.get(node)
        psn = int(totals.get("tx_pkts", 0.0)) & 0xFFFFFF
        if job is not None and len(job.nodes) > 1:
            pid = 10000 + int(unit_random(self.seed, "pid", node, job.id) * 50000)
            ordered, position = self.fabric.ring_order(job.id)
            k = position[node]
            after, before = ordered[(k + 1) % len(ordered)], ordered[k - 1]
            base = self.fabric.qp_base(node, rail)
            state = "ERR" if down else "RTS"
            for channel in range(4):
                send = base + 2 * channel
                qps.append(QpView(send, self.fabric.qp_base(after, rail) + 2 * channel + 1, "RC", state, pid, "python3",
                                  (psn + 977 * channel) & 0xFFFFFF, 0))
                qps.append(QpView(send + 1, self.fabric.qp_base(before, rail) + 2 * channel, "RC", state, pid,
                                  "python3", 0, (psn + 331 * channel) & 0xFFFFFF))
        held = effects.qp_exhaustion.get((node, rail))
        if held:
            pid = 20000 + int(unit_random(self.seed, "leak", node) * 40000)
            start = 0x40000 + int(unit_random(self.seed, "leakqp", node, rail) * 0x10000)
            for i in range(held):
                qps.append(QpView(start + i, 0, "RC", "INIT" if i % 7 else "ERR", pid, "python3"))
        return tuple(qps)

    def _switch_neighbor(self, switch: str, port: str) -> LldpNeighbor:
        """What a switch port announces over LLDP: fixed for the run, so built once per port."""
        neighbor = self._neighbors.get((switch, port))
        if neighbor is None:
            neighbor = self._neighbors[(switch, port)] = self._announce(switch, port)
        return neighbor

    def _announce(self, switch: str, port: str) -> LldpNeighbor:
        os_name = self.topology.os_of(switch)
        index = self.topology.port_index(switch, port)
        if os_name == "sonic":
            descr = f"SONiC Software Version: {SONIC_VERSION} - HwSku: Mellanox-SN5600-V256 - Distribution: Debian 12"
        else:
            descr = f"Cumulus Linux version {CUMULUS_VERSION} running on Nvidia SN5600"
        alias = f"etp{index + 1}" if os_name == "sonic" else port
        reported = self.scenario.reported
        return LldpNeighbor(
            switch=_reported(reported.switch_system_name, switch, port),
            switch_port=port,
            chassis_mac=self._switch_mac(switch),
            mgmt_ip=self.topology.addresses[switch],
            port_descr=_reported(reported.switch_port_description, switch, alias),
            system_descr=descr,
        )

    def _gpu_view(self, node: str, index: int, t: float, effects: FaultEffects, solution: Solution) -> GpuView:
        job = self.fabric.job_of_node.get(node)
        running = job is not None and job.start <= t
        factor = solution.job_factor.get(job.id, 1.0) if job is not None else 0.0
        if job is not None and len(job.nodes) == 1:
            factor = 1.0
        fixed = self._gpu_fixed(node, index)
        wobble = math.sin(t / 7.0 + fixed.phase)
        xid_last, xid_count = fault_rules.xid_events(self.scenario.faults, node, index, t)
        util = round(35 + 63 * factor + 1.5 * wobble) if running else 0
        if xid_last == 79:
            util = 0
        thermal = effects.gpu_thermal.get((node, index))
        temp = 45 + 0.22 * util + wobble if util else fixed.idle_temp_c
        power = 120 + 5.6 * util + 6 * wobble if util else fixed.idle_power_w
        clock = GPU_MAX_SM_MHZ if util else 345
        throttle = 0 if util else 0x1
        if thermal is not None:
            temp, power, clock, throttle = thermal, power * 0.8, 1350, 0x20 | 0x40
        ecc = xid_count if xid_last in ECC_XIDS else 0
        nvlink_crc = [0] * NVLINKS_PER_GPU
        if xid_last == 74:
            nvlink_crc[3] = 120 * xid_count
        mem = fixed.busy_mem_mib if running else 0
        return GpuView(
            index=index,
            name=self.gpu_name,
            uuid=fixed.uuid,
            pci_bus_id=f"00000000:{GPU_PCI_BUSES[index]:02X}:00.0",
            util_pct=max(0, min(100, util)),
            mem_used_mib=mem,
            mem_total_mib=GPU_MEM_MIB,
            temp_c=round(temp),
            power_w=round(power, 2) if xid_last != 79 else 0.0,
            power_limit_w=GPU_POWER_LIMIT_W,
            sm_clock_mhz=clock,
            max_sm_clock_mhz=GPU_MAX_SM_MHZ,
            throttle_reasons=throttle,
            ecc_volatile_uncorrected=ecc,
            ecc_aggregate_uncorrected=ecc,
            xid_last=xid_last,
            xid_count=xid_count,
            pcie_replay=0,
            nvlink_crc_errors=tuple(nvlink_crc),
            nvlink_replay_errors=(0,) * NVLINKS_PER_GPU,
            nvlink_recovery_errors=(0,) * NVLINKS_PER_GPU,
        )

    def _gpu_fixed(self, node: str, index: int) -> _GpuFixed:
        """A GPU's seeded constants, drawn once per run."""
        fixed = self._gpu_constants.get((node, index))
        if fixed is None:
            digest = uuid.UUID(int=int(unit_random(self.seed, "uuid", node, index) * 2**64) << 64 | index)
            fixed = self._gpu_constants[(node, index)] = _GpuFixed(
                uuid=f"GPU-{digest}",
                phase=6.283 * unit_random(self.seed, "gpu", node, index),
                idle_temp_c=33 + 2 * unit_random(self.seed, "idle", node, index),
                idle_power_w=68 + 6 * unit_random(self.seed, "pidle", node, index),
                busy_mem_mib=71000 + int(4000 * unit_random(self.seed, "mem", node, index)),
            )
        return fixed

    # ------------------------------------------------------------------ switches

    def _switch_mac(self, switch: str) -> str:
        index = self.topology.switches.index(switch) if switch in self.topology.switches else 255
        return f"9c:05:91:{(index >> 8) & 0xFF:02x}:{index & 0xFF:02x}:00"

    def switch_view(self, switch: str, t: float) -> SwitchView:
        """Everything ``switch`` reports at ``t``."""
        effects = self.effects(t)
        _, solution = self.solution(t)
        config = self.switch_config(switch, t)
        os_name = self.topology.os_of(switch)
        role = self.topology.role_of(switch)
        qos = self.qos.switch(switch, t)  # once a view: it holds every port's settings
        ports = tuple(
            self._port_view(switch, index, port, t, effects, solution, qos.ports[port].mtu)
            for index, port in enumerate(self.topology.switch_port_names(switch))
        )
        return SwitchView(
            name=switch,
            os=os_name,
            role=role,
            version=SONIC_VERSION if os_name == "sonic" else CUMULUS_VERSION,
            mgmt_ip=self.topology.addresses[switch],
            chassis_mac=self._switch_mac(switch),
            ports=ports,
            hash_seed=config.hash_seed,
            ecmp_hash_fields=tuple(f for f in ECMP_FIELDS if f in config.ecmp_fields),
            adaptive_routing=config.adaptive_routing,
            pending_config=dict(self.pending.get(switch, {})),
            config_history=tuple(self.history.get(switch, ())),
            qos=qos,
        )

    def _port_peer(self, switch: str, index: int, effects: FaultEffects) -> tuple[str, str, str] | None:
        """(host, port, description) at the other end of a switch port's cable, after miswires."""
        if switch in self.topology.spines:
            uplink = self.topology.spine_port_leaf(switch, index)
            return uplink.leaf, uplink.leaf_port, f"downlink to {uplink.leaf}"
        if index >= self.scenario.fabric.nodes_per_leaf:
            uplink = self.topology.uplinks[switch][index - self.scenario.fabric.nodes_per_leaf]
            return uplink.spine, uplink.spine_port, f"uplink to {uplink.spine}"
        designed = self.topology.downlink_node(switch, index)
        if designed is None:
            return None
        _, rail = self.topology.leaf_group_rail(switch)
        for nic, owner in effects.swapped.items():
            if owner == (designed, rail):
                return nic[0], nic_name(nic[1]), f"{nic[0]}:{nic_name(nic[1])}"
        return designed, nic_name(rail), f"{designed}:{nic_name(rail)}"

    def _port_view(
        self, switch: str, index: int, port: str, t: float, effects: FaultEffects, solution: Solution, mtu: int
    ) -> SwitchPortView:
        peer = self._port_peer(switch, index, effects)
        end = (switch, port)
        restart = self.last_restart(switch, t)
        since = restart if restart is not None else 0.0
        totals: dict[str, float] = {} if restart is not None else self._baseline(end, switch)
        for name, value in self._totals(end, t, since).items():
            totals[name] = totals.get(name, 0.0) + value
        downs = 0
        if peer is None:
            up = False
            speed = self.scenario.fabric.link_gbps
        else:
            host, peer_port, _ = peer
            if host in self.topology.nodes:
                rail = int(peer_port.removeprefix("mlx5_"))
                up = not self._nic_down(host, rail, t, effects)
                downs = self._link_down_steps(host, rail, t, effects)
                speed = effects.rate_gbps.get((host, peer_port), self.scenario.fabric.link_gbps)
            else:
                cable = self.fabric.cable_key(end, {})
                up = solution.capacity.get(end, 0.0) > 0 and switch not in self.restarting(t)
                speed = effects.rate_gbps.get(cable, self.scenario.fabric.link_gbps)
        rates = solution.rates.get(end, {})

        def pause3(key: str) -> tuple[int, ...]:
            """Per priority 0..7: RoCE's PFC priority 3 carries every pause."""
            return tuple(int(totals.get(key, 0.0)) if p == 3 else 0 for p in range(8))

        tx_gbps = solution.actual.get(end, 0.0) if up else 0.0
        rx_bps = rates.get("rx_bytes", 0.0) * 8 if up else 0.0
        return SwitchPortView(
            name=port,
            alias=f"etp{index + 1}" if self.topology.os_of(switch) == "sonic" else "",
            speed_gbps=speed,
            oper_up=up,
            admin_up=True,
            mtu=mtu,
            rx_bytes=int(totals.get("rx_bytes", 0.0)),
            tx_bytes=int(totals.get("tx_bytes", 0.0)),
            rx_packets=int(totals.get("rx_pkts", 0.0)),
            tx_packets=int(totals.get("tx_pkts", 0.0)),
            rx_drops=0,
            tx_drops=int(totals.get("tx_drops", 0.0)),
            rx_errors=int(totals.get("rcv_errors", 0.0) + totals.get("symbol_errors", 0.0)),
            tx_errors=0,
            rx_pfc_pause=pause3("rx_pause"),
            tx_pfc_pause=pause3("tx_pause"),
            ecn_marked=int(totals.get("ecn_marked", 0.0)),
            queue_drops=(0,) * 8,
            rx_bps=rx_bps,
            tx_bps=tx_gbps * 1e9,
            lldp=self._peer_neighbor(peer) if up and peer is not None else None,
            description=peer[2] if peer is not None else "",
            carrier_transitions=fault_rules.carrier_changes(downs, up) if peer is not None else 0,
        )

    def _peer_neighbor(self, peer: tuple[str, str, str]) -> LldpNeighbor:
        host, port, _ = peer
        if host in self.topology.nodes:
            rail = int(port.removeprefix("mlx5_"))
            return LldpNeighbor(
                switch=_reported(self.scenario.reported.node_system_name, host, ""),
                switch_port=self.netdev(rail),
                chassis_mac=self._mac(host, rail),
                mgmt_ip=self.topology.addresses[host],
                port_descr=self.netdev(rail),
                system_descr=f"Ubuntu 22.04.4 LTS Linux {self.kernel} #129-Ubuntu SMP x86_64",
            )
        return self._switch_neighbor(host, port)

    # ------------------------------------------------------------------ jobs, hosts, probes

    def jobs_view(self, t: float) -> tuple[JobView, ...]:
        """Slurm's view of the scenario's jobs at ``t``."""
        views = []
        for job in self.scenario.jobs:
            views.append(
                JobView(
                    job_id=job.id,
                    name=job.name,
                    user=job.user,
                    account=job.tenant,
                    partition=job.partition,
                    state="RUNNING" if job.start <= t else "PENDING",
                    nodes=hostlist.collect_hostlist(list(job.nodes)),
                    node_count=len(job.nodes),
                    start_time=self.unix(job.start),
                    time_limit_min=4320,
                )
            )
        return tuple(views)

    def hostile_output(self, host: str, words: list[str], t: float) -> str | None:
        """The form of output ``host`` prints instead of the command ``words`` at ``t`` (its
        ``hostile_output`` faults, ``fleet.simulator.hostile``), or None: the real output."""
        faults = self._hostile.get(host)
        if faults is None:
            return None
        line = " ".join(words)
        for fault in faults:
            if fault.active(t) and fnmatch.fnmatchcase(line, fault.words["command"]):
                return fault.words["form"]
        return None

    def behaviour(self, host: str, t: float) -> HostBehaviour:
        effects = self.effects(t)
        return HostBehaviour(
            unreachable=host in effects.unreachable,
            hung=host in effects.hung,
            delay_s=effects.slow_s.get(host, 0.0),
        )

    def probe(
        self, src: NicKey, dst: NicKey, t: float, qpn: int, size_bytes: int = 2, flow_label: int | None = None
    ) -> ProbeEstimate:
        """What a perftest pair between two NICs measures at ``t``."""
        state, solution = self.solution(t)
        return self.fabric.probe(state, solution, src, dst, qpn, size_bytes=size_bytes, flow_label=flow_label)

    def ecmp_egress(self, switch: str, t: float, ingress: str, src: NicKey, dst: NicKey, sport: int,
                    dport: int, protocol: int) -> str:
        """The port ``switch`` forwards that packet out of at ``t`` (see ``Fabric.ecmp_egress``)."""
        state, solution = self.solution(t)
        return self.fabric.ecmp_egress(state, solution, switch, ingress, src, dst, sport, dport, protocol)

    def job_factor(self, job_id: int, t: float) -> float:
        """Pace of a job's collectives at ``t`` (1: as fast as it offers)."""
        return self.solution(t)[1].job_factor.get(job_id, 1.0)

    def views(self, t: float) -> Callable[[], tuple[NodeView, ...]]:
        """A callable computing every node's view, for tools that need the whole fleet."""
        return lambda: tuple(self.node_view(n, t) for n in self.topology.nodes)


class NodeParts:
    """One node at one instant, each part (a NIC's counters, its ethtool table, the GPUs) computed on first use.

    A command reads a small part of a node: ``grep`` over ``ports/*/counters/*``
    reads 8 NICs' port counters, not their hw_counters, ethtool tables, optics
    or QPs, nor the GPUs. ``view()`` assembles the full ``NodeView`` from the
    same parts, so a part read alone and the same part in the view are one
    computation and cannot differ.
    """

    def __init__(self, model: FleetModel, node: str, t: float) -> None:
        self.model = model
        self.name = node
        self.t = t
        self.memo = model.memo
        self._effects: FaultEffects | None = None
        self._down: dict[int, bool] = {}
        self._totals: dict[int, dict[str, float]] = {}
        self._steps: dict[int, dict[str, int]] = {}
        self._counters: dict[int, dict[str, int]] = {}
        self._hw: dict[int, dict[str, int]] = {}
        self._ethtool: dict[int, dict[str, int]] = {}
        self._view: NodeView | None = None
        self._qos: NodeQos | None = None

    @property
    def effects(self) -> FaultEffects:
        if self._effects is None:
            self._effects = self.model.effects(self.t)
        return self._effects

    @property
    def rails(self) -> range:
        return range(RAILS_PER_NODE)

    @property
    def nvidia_driver(self) -> str:
        """Every simulated node has its 8 GPUs, and so the driver."""
        return self.model.gpu_driver

    def down(self, rail: int) -> bool:
        down = self._down.get(rail)
        if down is None:
            down = self._down[rail] = self.model._nic_down(self.name, rail, self.t, self.effects)
        return down

    def totals(self, rail: int) -> dict[str, float]:
        """Model rate totals of the NIC since its (simulated) boot."""
        totals = self._totals.get(rail)
        if totals is None:
            model = self.model
            end = (self.name, nic_name(rail))
            totals = model._baseline(end, self.name)
            for name, value in model._totals(end, self.t).items():
                totals[name] = totals.get(name, 0.0) + value
            self._totals[rail] = totals
        return totals

    def steps(self, rail: int) -> dict[str, int]:
        """Event counts (link downs, pause storm warnings and errors) the counters step by."""
        steps = self._steps.get(rail)
        if steps is None:
            model, node, t = self.model, self.name, self.t
            steps = self._steps[rail] = {
                STEP + "link_down": model._link_down_steps(node, rail, t, self.effects),
                **model._storm_steps(node, rail, t),
            }
        return steps

    def carrier_changes(self, rail: int) -> int:
        """The netdev's ``/sys/class/net/<if>/carrier_changes``: its carrier came up at boot, then was
        lost and came back at each of the NIC's link-down events (the ones ``link_down_events_phy`` counts)."""
        return fault_rules.carrier_changes(self.steps(rail)[STEP + "link_down"], not self.down(rail))

    def counters(self, rail: int) -> dict[str, int]:
        """sysfs ``ports/1/counters/*``, raw."""
        return self._filled_once(self._counters, PORT_TABLE, rail)

    def hw_counters(self, rail: int) -> dict[str, int]:
        """sysfs ``ports/1/hw_counters/*``."""
        return self._filled_once(self._hw, HW_ROCE_TABLE if self.model.roce else HW_IB_TABLE, rail)

    def counter_names(self, rail: int) -> tuple[str, ...]:
        """Every NIC has its table's names, whatever their values: a sysfs path needs no counting."""
        return tuple(PORT_TABLE.zeros)

    def hw_counter_names(self, rail: int) -> tuple[str, ...]:
        return tuple((HW_ROCE_TABLE if self.model.roce else HW_IB_TABLE).zeros)

    def ethtool(self, rail: int) -> dict[str, int]:
        """``ethtool -S`` of the NIC's netdev, in the driver's order."""
        return self._filled_once(self._ethtool, ETHTOOL_ROCE_TABLE if self.model.roce else ETHTOOL_IPOIB_TABLE, rail)

    def _filled_once(self, cache: dict[int, dict[str, int]], table: CounterTable, rail: int) -> dict[str, int]:
        values = cache.get(rail)
        if values is None:
            values = cache[rail] = self.filled(table, rail)
        return values

    def filled(self, table: CounterTable, rail: int) -> dict[str, int]:
        """Any counter table (e.g. a subset of ``ethtool -S``) filled from the NIC's totals, uncached."""
        return FleetModel._fill(table, self.totals(rail), self.steps(rail))

    def qp_count(self, rail: int) -> int:
        """How many QPs ``rdma res show qp`` lists on the NIC (what the node agent sends)."""
        return len(self.model._qps(self.name, rail, self.effects, self.down(rail), self.totals(rail)))

    def optics(self, rail: int) -> OpticsView:
        """The NIC's module readings (``ethtool -m``)."""
        return self.model._optics(self.name, rail, self.effects, self.t)

    def gpu(self, index: int) -> GpuView:
        """One GPU as NVML reports it."""
        model = self.model
        return model._gpu_view(self.name, index, self.t, self.effects, model.solution(self.t)[1])

    def qos(self) -> NodeQos:
        """The node's RoCE, PCIe and driver configuration now (``fleet.simulator.qos_state``)."""
        if self._qos is None:
            self._qos = self.model.qos.node(self.name, self.t)
        return self._qos

    def rail_of(self, netdev: str) -> int | None:
        """The rail of the NIC whose netdev is ``netdev`` (its fixed identity), None when there is none."""
        return next((r for r in self.rails if self.model.nic_identity(self.name, r).netdev == netdev), None)

    def nic_head(self, rail: int) -> NicView:
        """The NIC's identity and link state only: counters, hw_counters and ethtool empty,
        no optics, QPs or LLDP neighbour (read those through the methods above or ``nic``)."""
        return self._nic(rail, full=False)

    def nic(self, rail: int) -> NicView:
        """Everything the NIC reports."""
        return self._nic(rail, full=True)

    def _nic(self, rail: int, *, full: bool) -> NicView:
        model, node = self.model, self.name
        effects = self.effects
        end = (node, nic_name(rail))
        down = self.down(rail)
        rate = effects.rate_gbps.get(end, model.scenario.fabric.link_gbps)
        identity = model.nic_identity(node, rail)
        guid = identity.guid
        qos = self.qos().nics[rail] if model.roce else None
        gids = identity.gids
        if qos is not None and qos.extra_ipv6:
            gids = model._gids(node, rail, identity.mac, guid, extra_ipv6=True)
        return NicView(
            name=identity.name,
            port=1,
            rail=rail,
            netdev=identity.netdev,
            link_layer=identity.link_layer,
            state="DOWN" if down else "ACTIVE",
            phys_state="Polling" if down else "LinkUp",
            rate_gbps=rate,
            width="4X",
            speed_name=_speed_name(rate),
            hca_type=HCA_TYPE,
            fw_version=qos.firmware if qos is not None else self.qos().nics[rail].firmware,
            board_id=BOARD_ID,
            node_guid=guid,
            port_guid=port_guid(identity.mac) if model.roce else guid,
            sys_image_guid=guid,
            lid=identity.lid,
            sm_lid=0 if model.roce else 1,
            mac=identity.mac,
            mtu=qos.active_mtu if qos is not None else identity.mtu,
            counters=self.counters(rail) if full else {},
            hw_counters=self.hw_counters(rail) if full else {},
            ethtool=self.ethtool(rail) if full else {},
            optics=self.optics(rail) if full else None,
            gids=gids,
            qps=model._qps(node, rail, effects, down, self.totals(rail)) if full else (),
            lldp=self.lldp(rail) if full else None,
            qos=qos,
            carrier_changes=self.carrier_changes(rail),
        )

    def lldp(self, rail: int) -> LldpNeighbor | None:
        """What the switch port at the far end of the NIC's cable announces; None while the link is down.

        Read alone by ``lldpctl``, which needs no counters, optics or QPs: the same
        neighbour as the full view's, from the same two lookups.
        """
        if self.down(rail):
            return None
        switch, port = self.model.nic_cable(self.name, rail, self.effects)
        return self.model._switch_neighbor(switch, port)

    def view(self) -> NodeView:
        """Everything the node reports (built once)."""
        if self._view is None:
            model, node, t = self.model, self.name, self.t
            _, solution = model.solution(t)
            effects = self.effects
            self._view = NodeView(
                name=node,
                hostname_fqdn=f"{node}.cluster.local",
                kernel=self.qos().kernel,
                driver_version=self.qos().driver,
                cuda_version=CUDA_VERSION,
                ofed_version=self.qos().ofed,
                mgmt_ip=model.topology.addresses[node],
                nics=tuple(self.nic(rail) for rail in self.rails),
                gpus=tuple(model._gpu_view(node, index, t, effects, solution) for index in range(8)),
                qos=self.qos(),
            )
        return self._view


def port_guid(mac: str) -> str:
    """A RoCE port's GUID as ibstat prints it: the interface identifier of GID[0], the modified EUI-64 of
    the port's MAC (RFC 4291 appendix A: ff:fe in the middle, the universal/local bit flipped), as a
    real ConnectX-7 Ethernet port shows (MAC 94:6d:ae:c2:b6:90, Port GUID 0x966daefffec2b690)."""
    octets = [int(x, 16) for x in mac.split(":")]
    eui = [octets[0] ^ 0x02, octets[1], octets[2], 0xFF, 0xFE, octets[3], octets[4], octets[5]]
    return "0x" + "".join(f"{b:02x}" for b in eui)


def _reported(template: str | None, name: str, port: str) -> str:
    """A name as the machine reports it: the scenario's template (``[reported]``) or, without one, ``name``."""
    return name if template is None else template.format(name=name, port=port)


def _speed_name(rate_gbps: int) -> str:
    """IB speed of a 4X link at ``rate_gbps`` (sysfs prints it for RoCE ports too)."""
    return {800: "XDR", 400: "NDR", 200: "HDR", 100: "EDR", 56: "FDR", 40: "QDR"}.get(rate_gbps, "SDR")


def _same_hash(a: SwitchConfig, b: SwitchConfig, *, ignore_fields: bool) -> bool:
    """Whether two configs hash alike; ``ignore_fields``: an ASIC that ignores the hash-field list."""
    if ignore_fields:
        return (a.hash_seed, a.adaptive_routing) == (b.hash_seed, b.adaptive_routing)
    return a == b
