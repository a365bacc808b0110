"""What the scenario's faults do to the fabric at one instant, as plain tables.

``effects(...)`` folds the faults active at a moment into a :class:`FaultEffects`
that the traffic model (``fleet.simulator.traffic``) and the views
(``fleet.simulator.model``) read; the event counts (how often a link went down, how
many XIDs a GPU logged) are step functions of time, computed here too, so that
every number stays a pure function of the scenario and the simulated time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fleet.fabric.naming import nic_name
from fleet.simulator.scenario import FaultSpec
from fleet.simulator.topology import Topology

NicKey = tuple[str, int]
"""(node, rail)."""

CableKey = tuple[str, str]
"""A cable named by its lower end as designed: (node, "mlx5_N") for node cables,
(leaf, leaf port) for leaf-spine uplinks."""

STORM_ESCALATION_S = 8.0
"""A NIC pause storm raises warning events first; after this many seconds the
watchdog raises an error event, stops the NIC's pause frames, and drops follow."""

FLAP_DOWN_MAX_S = 5.0
"""A flapping link stays down this long (or a third of its period, if shorter) per period."""

ECC_XIDS = (48, 64, 94, 95, 140)
"""XIDs that come with uncorrected memory errors (the driver's ECC counters rise): a double-bit error,
a failed row remap, contained and uncontained ECC errors, an unrecovered one (NVIDIA's XID catalog).
XIDs 63 and 92 record corrected errors and leave the uncorrected counters alone."""


@dataclass(frozen=True, slots=True)
class FaultEffects:
    """Every active fault's effect, keyed by what it hits. Empty: a healthy fabric."""

    down: frozenset[CableKey] = frozenset()
    flapping: dict[CableKey, tuple[float, float]] = field(default_factory=dict)  # cable -> (at, period)
    attenuation_db: dict[CableKey, float] = field(default_factory=dict)
    ber: dict[CableKey, float] = field(default_factory=dict)
    rate_gbps: dict[CableKey, int] = field(default_factory=dict)
    swapped: dict[NicKey, NicKey] = field(default_factory=dict)  # NIC -> NIC whose designed cable it now has
    storm: frozenset[NicKey] = frozenset()
    storm_escalated: frozenset[NicKey] = frozenset()
    ecn_off_nics: frozenset[NicKey] = frozenset()
    ecn_off_switches: frozenset[str] = frozenset()
    pfc_off: frozenset[CableKey] = frozenset()
    """Ends (node, mlx5_N) and (switch, port) where RoCE has no working PFC (misconfigured: see
    ``fleet.simulator.qos_state``): they neither pause nor honour pauses, so congestion drops there."""
    ecmp_collision: dict[str, float] = field(default_factory=dict)  # leaf -> fault start
    spine_loss: dict[str, float] = field(default_factory=dict)  # spine -> drop fraction
    qp_exhaustion: dict[NicKey, int] = field(default_factory=dict)  # NIC -> QPs held
    gpu_thermal: dict[tuple[str, int], float] = field(default_factory=dict)  # (node, gpu) -> temp C
    unreachable: frozenset[str] = frozenset()
    hung: frozenset[str] = frozenset()
    slow_s: dict[str, float] = field(default_factory=dict)  # host -> extra seconds per answer

    def straggler_nodes(self) -> frozenset[str]:
        """Nodes whose GPUs throttle: their job steps at their pace."""
        return frozenset(node for node, _ in self.gpu_thermal)


def parse_nic(target: str) -> NicKey:
    node, _, nic = target.partition(":")
    return node, int(nic.removeprefix("mlx5_"))


def cable_of(topology: Topology, target: str) -> CableKey:
    """The cable a ``node:nic`` or ``switch:port`` target names (as designed)."""
    host, _, port = target.partition(":")
    if host in topology.nodes:
        return host, port
    index = topology.port_index(host, port)
    if host in topology.spines:
        uplink = topology.spine_port_leaf(host, index)
        return uplink.leaf, uplink.leaf_port
    node = topology.downlink_node(host, index)
    if node is None:
        return host, port
    _, rail = topology.leaf_group_rail(host)
    return node, nic_name(rail)


def gpu_targets(target: str) -> tuple[str, tuple[int, ...]]:
    """``node`` (every GPU) or ``node:gpuN``."""
    node, _, gpu = target.partition(":")
    match = re.fullmatch(r"gpu(\d+)", gpu)
    return node, (int(match.group(1)),) if match else tuple(range(8))


def effects(faults: Sequence[FaultSpec], topology: Topology, t: float) -> FaultEffects:
    """Fold the faults active at ``t`` (seconds after start) into one table of effects."""
    down: set[CableKey] = set()
    flapping: dict[CableKey, tuple[float, float]] = {}
    attenuation: dict[CableKey, float] = {}
    ber: dict[CableKey, float] = {}
    rate: dict[CableKey, int] = {}
    swapped: dict[NicKey, NicKey] = {}
    storm: set[NicKey] = set()
    escalated: set[NicKey] = set()
    ecn_nics: set[NicKey] = set()
    ecn_switches: set[str] = set()
    collision: dict[str, float] = {}
    spine_loss: dict[str, float] = {}
    qps: dict[NicKey, int] = {}
    thermal: dict[tuple[str, int], float] = {}
    unreachable: set[str] = set()
    hung: set[str] = set()
    slow: dict[str, float] = {}
    for fault in faults:
        if not fault.active(t):
            continue
        kind = fault.kind
        if kind == "link_down":
            down.add(cable_of(topology, fault.target))
        elif kind == "link_flap":
            flapping[cable_of(topology, fault.target)] = (fault.at, fault.param("period"))
        elif kind == "optics_attenuation":
            cable = cable_of(topology, fault.target)
            attenuation[cable] = attenuation.get(cable, 0.0) + fault.param("db")
        elif kind == "high_ber":
            cable = cable_of(topology, fault.target)
            ber[cable] = max(ber.get(cable, 0.0), fault.param("ber"))
        elif kind == "degraded_rate":
            rate[cable_of(topology, fault.target)] = int(fault.param("gbps"))
        elif kind == "miswire":
            a, b = (parse_nic(x) for x in fault.targets)
            swapped[a], swapped[b] = b, a
        elif kind == "pfc_storm":
            nic = parse_nic(fault.target)
            storm.add(nic)
            if t - fault.at >= STORM_ESCALATION_S:
                escalated.add(nic)
        elif kind == "ecn_disabled":
            if ":" in fault.target:
                ecn_nics.add(parse_nic(fault.target))
            else:
                ecn_switches.add(fault.target)
        elif kind == "ecmp_collision":
            collision[fault.target] = fault.at
        elif kind == "spine_loss":
            spine_loss[fault.target] = fault.param("rate")
        elif kind == "qp_exhaustion":
            if ":" in fault.target:
                qps[parse_nic(fault.target)] = int(fault.param("qps"))
            else:
                for rail in range(8):
                    qps[(fault.target, rail)] = int(fault.param("qps"))
        elif kind == "gpu_thermal":
            node, gpus = gpu_targets(fault.target)
            for gpu in gpus:
                thermal[(node, gpu)] = fault.param("temp_c")
        elif kind == "node_unreachable":
            unreachable.add(fault.target)
        elif kind == "node_hang":
            hung.add(fault.target)
        elif kind == "slow_node":
            slow[fault.target] = fault.param("delay")
        # gpu_xid is an event, counted by xid_events(); misconfigurations act through qos_state
    return FaultEffects(
        down=frozenset(down),
        flapping=flapping,
        attenuation_db=attenuation,
        ber=ber,
        rate_gbps=rate,
        swapped=swapped,
        storm=frozenset(storm),
        storm_escalated=frozenset(escalated),
        ecn_off_nics=frozenset(ecn_nics),
        ecn_off_switches=frozenset(ecn_switches),
        ecmp_collision=collision,
        spine_loss=spine_loss,
        qp_exhaustion=qps,
        gpu_thermal=thermal,
        unreachable=frozenset(unreachable),
        hung=frozenset(hung),
        slow_s=slow,
    )


def boundaries(faults: Sequence[FaultSpec]) -> list[float]:
    """Instants (seconds after start) at which the set of fault effects changes."""
    times: set[float] = set()
    for fault in faults:
        times.add(fault.at)
        if fault.until is not None:
            times.add(fault.until)
        if fault.kind == "pfc_storm":
            times.add(fault.at + STORM_ESCALATION_S)
    return sorted(times)


def flap_down_s(period_s: float) -> float:
    return min(FLAP_DOWN_MAX_S, period_s / 3.0)


def flap_is_down(at: float, period_s: float, t: float) -> bool:
    """Whether a link flapping since ``at`` is in one of its down windows at ``t``."""
    return t >= at and (t - at) % period_s < flap_down_s(period_s)


def link_down_events(faults: Sequence[FaultSpec], topology: Topology, cable: CableKey, t: float) -> int:
    """How often the cable went down from the start to ``t``: link_down starts and flap windows."""
    count = 0
    for fault in faults:
        if fault.kind not in ("link_down", "link_flap") or t < fault.at:
            continue
        if cable_of(topology, fault.target) != cable:
            continue
        if fault.kind == "link_down":
            count += 1
        elif fault.until is not None and t >= fault.until:  # flaps that began before the fault ended
            count += math.ceil((fault.until - fault.at) / fault.param("period"))
        else:
            count += int((t - fault.at) // fault.param("period")) + 1
    return count


def carrier_changes(downs: int, up: bool) -> int:
    """How often a link's carrier was lost or came back since boot, as Linux counts it for a netdev
    (``/sys/class/net/<if>/carrier_changes``, https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-net)
    and a switch counts a port's carrier transitions: the first carrier-on at boot (a carrier-off
    before the netdev is registered is not counted: ``netif_carrier_off`` in net/sched/sch_generic.c),
    then a loss and a return per link-down event (``downs``), the last return missing while down."""
    return 1 + 2 * downs - (0 if up else 1)


def xid_events(faults: Sequence[FaultSpec], node: str, gpu: int, t: float) -> tuple[int, int]:
    """(last XID, XID count) of one GPU at ``t``."""
    last, count = 0, 0
    for fault in sorted((f for f in faults if f.kind == "gpu_xid"), key=lambda f: f.at):
        target_node, gpus = gpu_targets(fault.target)
        if target_node == node and gpu in gpus and fault.at <= t:
            last, count = int(fault.param("xid")), count + 1
    return last, count
