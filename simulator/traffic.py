"""The seeded traffic model: jobs make ring all-reduce flows, flows make every rate.

Each Slurm job runs ``CHANNELS`` rings per rail over its nodes (NCCL's
channels; H100 nodes with 8 NICs typically run 32 channels, 4 per NIC). A ring
flow from node k to node k+1 on rail r leaves NIC ``mlx5_r``, enters the leaf
its cable reaches and, when the next node sits behind another leaf, crosses a
spine chosen by that leaf's ECMP hash over the RoCEv2 header fields (the UDP
source port derives from the QP numbers, as the kernel computes it). From the
offered loads and the capacities left by faults the model derives, per
directed link: utilization, overload, ECN marking, PFC pauses, losses and
queueing delay; per job: the pace its collectives run at (the slowest rail
gates a synchronous all-reduce); per NIC and switch port: the per-second rates
of every counter. :meth:`Fabric.solve` is a pure function of the network state.

Rates are per second; bandwidths in Gb/s; delays in microseconds.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import NamedTuple

from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.fabric.roce import ROCE_UDP_PORT, flow_label_sport
from fleet.simulator.faults import CableKey, FaultEffects, NicKey, flap_down_s
from fleet.simulator.scenario import JobSpec
from fleet.simulator.topology import Topology

CHANNELS = 4
"""Rings per rail per job."""

PKT_BYTES = 4174
"""Wire bytes of one RoCEv2 packet at 4096-byte MTU (payload + Eth/IP/UDP/BTH/ICRC/FCS)."""

SWITCHD_RESTART_S = 4.0
"""How long a switch forwards nothing while switchd restarts after a hash-seed or AR change."""

ECMP_FIELDS = (
    "source-ip",
    "destination-ip",
    "ip-protocol",
    "source-port",
    "destination-port",
    "ingress-interface",
    "rdma-bth-dest-qp",
)
"""Hash fields, NVUE names (``rdma-bth-dest-qp`` stands for SONiC's ``RDMA_BTH_DEST_QP``)."""

DEFAULT_ECMP_FIELDS = frozenset(ECMP_FIELDS[:5])
"""The 5-tuple: the default on Cumulus and SONiC."""

STORM_PAUSES_PER_S = 150_000.0
"""Pause frames a NIC in a pause storm sends per second (refreshing XOFF)."""

PAUSE_USEC = 5.0
"""Effective time one received pause frame holds a transmitter, microseconds."""

XMIT_WAIT_TICKS_PER_S = 250e6
"""``port_xmit_wait`` ticks per second of being blocked."""

TAIL_LOSS_SHARE = 1.0 / 128
"""Share of losses with no packet behind them on the connection: NCCL moves data in chunks of 512 KiB
(NCCL_BUFFSIZE 4 MiB in 8 steps), 128 packets of 4 KiB, and only a chunk's last packet has no successor."""

MAX_OUTSTANDING_PKTS = 256.0
"""Cap of packets one QP keeps in flight (a window of 1 MiB at 4 KiB MTU)."""

LOS_DBM = -14.0
"""Receive power below which the receiver loses signal: the link is down."""


RS_N = 544
RS_K = 514
RS_T = 15
RS_SYMBOL_BITS = 10
"""RS(544,514) over 10-bit symbols ("KP4" FEC, IEEE 802.3 clause 91 / 119): 544 symbols a codeword, 514
of them data, up to (544 - 514) / 2 = 15 symbol errors corrected per codeword."""


class FecOutcome(NamedTuple):
    codeword_failure: float
    """Probability a codeword holds more symbol errors than the code corrects."""
    uncorrected_per_bit: float
    """Symbol errors left in failed codewords, per received bit (what ``rx_pcs_symbol_err_phy`` counts)."""


def rs_fec_failures(pre_fec_ber: float) -> FecOutcome:
    """What RS(544,514) leaves at a pre-FEC bit error ratio, with bit errors independent.

    A 10-bit symbol is wrong with p = 1 - (1 - BER)^10; a codeword fails when more than 15 of its 544
    symbols are wrong: the binomial tail P[X > 15], X ~ Bin(544, p). This puts the cliff where the code
    puts it: ~1e-12 of codewords at 2.4e-4 (the BER 802.3 specifies the PMA to), ~1e-4 at 1e-3.
    """
    if pre_fec_ber <= 0.0:
        return FecOutcome(0.0, 0.0)
    p = 1.0 - (1.0 - min(pre_fec_ber, 0.5)) ** RS_SYMBOL_BITS
    log_p, log_q = math.log(p), math.log1p(-p)
    failure = expected = 0.0
    for k in range(RS_T + 1, RS_N + 1):
        term = math.exp(math.lgamma(RS_N + 1) - math.lgamma(k + 1) - math.lgamma(RS_N - k + 1)
                        + k * log_p + (RS_N - k) * log_q)
        failure += term
        expected += k * term
        if k > RS_N * p and term < 1e-18 * failure:
            break  # past the peak, and the rest cannot matter
        if failure == 0.0 and term < 1e-300:
            break
    return FecOutcome(min(1.0, failure), expected / (RS_N * RS_SYMBOL_BITS))


@lru_cache(maxsize=1 << 18)
def unit_random(seed: int, *parts: object) -> float:
    """A deterministic number in [0, 1) from the seed and a name: the same in every process."""
    return fresh_random(seed, *parts)


def fresh_random(seed: int, *parts: object) -> float:
    """``unit_random`` without its memo, for names that hold an instant and so are asked once.

    A perftest run draws its QP numbers, PSNs, keys and noise under the
    run's own ``t``: remembered, they would only cost a memo entry each and
    push out the names that do repeat (nine a pair: ~73,000 in a link test on 128 nodes).
    """
    digest = hashlib.blake2b(f"{seed}|{'|'.join(map(str, parts))}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True, slots=True)
class SwitchConfig:
    """The forwarding settings of one switch that the model depends on."""

    hash_seed: int
    ecmp_fields: frozenset[str] = DEFAULT_ECMP_FIELDS
    adaptive_routing: bool = False


@dataclass(frozen=True, slots=True)
class Flow:
    job: int
    rail: int
    channel: int
    src: str
    dst: str
    lqpn: int
    rqpn: int
    sport: int
    offered_gbps: float


TxEnd = tuple[str, str]
"""The transmitting end of a directed link: (host, port); nodes name the port by RDMA device."""


@dataclass(frozen=True, slots=True)
class NetState:
    """Everything a solve depends on besides the static fleet: faults, configs, restarts."""

    effects: FaultEffects
    configs: tuple[tuple[str, SwitchConfig], ...] = ()  # switches whose config differs from default
    collision: frozenset[str] = frozenset()  # leaves whose ECMP collision is in effect
    restarting: frozenset[str] = frozenset()  # switches restarting switchd


@dataclass
class Solution:
    """The fabric's steady state under one NetState. Rates per second, loads in Gb/s."""

    capacity: dict[TxEnd, float] = field(default_factory=dict)
    nominal: dict[TxEnd, float] = field(default_factory=dict)
    actual: dict[TxEnd, float] = field(default_factory=lambda: defaultdict(float))
    overload: dict[TxEnd, float] = field(default_factory=dict)
    flows_on: dict[TxEnd, int] = field(default_factory=lambda: defaultdict(int))
    queue_usec: dict[TxEnd, float] = field(default_factory=dict)
    loss: dict[TxEnd, float] = field(default_factory=dict)
    dropping: set[TxEnd] = field(default_factory=set)
    """Ends whose loss is the receiver dropping for lack of buffer (counted as discards, not as bad frames)."""
    job_factor: dict[int, float] = field(default_factory=dict)
    rates: dict[TxEnd, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    spine_of_flow: list[str | None] = field(default_factory=list)
    probe_context: tuple[NetState, ProbeContext] | None = field(default=None, compare=False, repr=False)
    """What probes under this solution share, built by the first probe (:meth:`Fabric.probe_context`)."""


@dataclass(frozen=True, slots=True)
class ProbeContext:
    """What every probe under one network state shares: built once per solution, not once per probe."""

    configs: dict[str, SwitchConfig]
    nic_port: dict[NicKey, TxEnd]
    up: dict[TxEnd, bool]


@dataclass(frozen=True, slots=True)
class ProbeEstimate:
    """What a perftest run between two NICs would see now."""

    reachable: bool
    switches: tuple[str, ...]
    latency_usec: float  # one-way, small messages, typical
    jitter_usec: float  # standard deviation
    tail_usec: float  # 99.9th percentile
    bw_gbps: float  # large-message bandwidth
    loss: float  # fraction of packets lost on the path


def roce_sport(lqpn: int, rqpn: int) -> int:
    """UDP source port of a RoCEv2 QP pair, as the kernel derives it (rdma_calc_flow_label)."""
    v = (lqpn * rqpn) & 0xFFFFFFFFFFFFFFFF
    v ^= v >> 20
    v ^= v >> 40
    return flow_label_sport(v & 0xFFFFF)


def nic_ip(topology: Topology, node: str, rail: int) -> str:
    """IPv4 address of a node's RoCE NIC: one /16 per rail."""
    index = topology.node_index(node) + 1
    return f"10.{rail + 1}.{index // 200}.{index % 200 + 1}"


def nic_of_ip(topology: Topology, address: str) -> NicKey | None:
    """The NIC with RoCE address ``address`` (the inverse of :func:`nic_ip`), None when no NIC has it."""
    parts = address.split(".")
    if len(parts) != 4 or parts[0] != "10" or not all(p.isdigit() for p in parts):
        return None
    rail, index = int(parts[1]) - 1, int(parts[2]) * 200 + int(parts[3]) - 1
    if not 0 <= rail < RAILS_PER_NODE or not 1 <= index <= len(topology.nodes):
        return None
    node = topology.nodes[index - 1]
    return (node, rail) if nic_ip(topology, node, rail) == address else None


class Fabric:
    """Static flows of the scenario's jobs and the solver that turns a NetState into rates."""

    def __init__(self, topology: Topology, jobs: Sequence[JobSpec], seed: int) -> None:
        self.topology = topology
        self.jobs = tuple(jobs)
        self.seed = seed
        self.link_gbps = float(topology.fabric.link_gbps)
        self.roce = topology.fabric.link_layer == "roce"
        self._rings: dict[int, tuple[tuple[str, ...], dict[str, int]]] = {}
        self._qp_bases: dict[NicKey, int] = {}

    # ------------------------------------------------------------------ static parts

    def qp_base(self, node: str, rail: int) -> int:
        """First QP number a NIC hands out to the job's connections (seeded; drawn once per NIC)."""
        base = self._qp_bases.get((node, rail))
        if base is None:
            base = self._qp_bases[(node, rail)] = 0x100 + int(unit_random(self.seed, "qp", node, rail) * 0x3F000) * 4
        return base

    @cached_property
    def flows(self) -> tuple[Flow, ...]:
        flows: list[Flow] = []
        for job in self.jobs:
            nodes = self.ring_order(job.id)[0]
            if len(nodes) < 2:
                continue
            offered = job.load * self.link_gbps / CHANNELS
            for rail in range(RAILS_PER_NODE):
                for channel in range(CHANNELS):
                    for k, src in enumerate(nodes):
                        dst = nodes[(k + 1) % len(nodes)]
                        lqpn = self.qp_base(src, rail) + 2 * channel
                        rqpn = self.qp_base(dst, rail) + 2 * channel + 1
                        flows.append(
                            Flow(job.id, rail, channel, src, dst, lqpn, rqpn, roce_sport(lqpn, rqpn), offered)
                        )
        return tuple(flows)

    def ring_order(self, job_id: int) -> tuple[tuple[str, ...], dict[str, int]]:
        """A job's nodes in ring order, and each node's position in it."""
        cached = self._rings.get(job_id)
        if cached is None:
            job = next(j for j in self.jobs if j.id == job_id)
            ordered = tuple(sorted(job.nodes, key=self.topology.node_index))
            cached = (ordered, {node: k for k, node in enumerate(ordered)})
            self._rings[job_id] = cached
        return cached

    @cached_property
    def job_of_node(self) -> dict[str, JobSpec]:
        return {node: job for job in self.jobs for node in job.nodes}

    def default_config(self, switch: str) -> SwitchConfig:
        """Each switch's hash seed as the simulator set it: seeded per switch, unknown to the console."""
        return SwitchConfig(hash_seed=zlib.crc32(f"{self.seed}:{switch}".encode()))

    def optics_base_dbm(self, node: str, rail: int) -> float:
        """Healthy receive power of a NIC's optics, dBm (-1..2)."""
        return -1.0 + 3.0 * unit_random(self.seed, "rxpower", node, rail)

    def base_ber(self, cable: CableKey) -> float:
        """Healthy pre-FEC bit error ratio of a cable (2e-9..3e-8)."""
        return 2e-9 * 10 ** (1.2 * unit_random(self.seed, "ber", *cable))

    # ------------------------------------------------------------------ cabling

    def cabling(self, effects: FaultEffects) -> tuple[dict[NicKey, TxEnd], dict[TxEnd, NicKey]]:
        """Physical cables after miswires: NIC -> (switch, port) and back."""
        nic_port: dict[NicKey, TxEnd] = {}
        for node in self.topology.nodes:
            for rail in range(RAILS_PER_NODE):
                owner = effects.swapped.get((node, rail), (node, rail))
                cable = self.topology.designed_cable(owner[0], owner[1])
                nic_port[(node, rail)] = (cable.switch, cable.port)
        return nic_port, {port: nic for nic, port in nic_port.items()}

    def peer(self, end: TxEnd, nic_port: Mapping[NicKey, TxEnd], port_nic: Mapping[TxEnd, NicKey]) -> TxEnd | None:
        """The receiving end of the link ``end`` transmits on."""
        host, port = end
        if port.startswith("mlx5_"):
            return nic_port[(host, int(port.removeprefix("mlx5_")))]
        if end in port_nic:
            node, rail = port_nic[end]
            return node, nic_name(rail)
        index = self.topology.port_index(host, port)
        if host in self.topology.spines:
            uplink = self.topology.spine_port_leaf(host, index)
            return uplink.leaf, uplink.leaf_port
        spine_index = index - self.topology.fabric.nodes_per_leaf
        if spine_index >= 0:
            uplink = self.topology.uplinks[host][spine_index]
            return uplink.spine, uplink.spine_port
        return None

    def cable_key(self, end: TxEnd, port_nic: Mapping[TxEnd, NicKey]) -> CableKey:
        """The cable an end belongs to, named as faults name it."""
        host, port = end
        if port.startswith("mlx5_"):
            return end
        if end in port_nic:
            node, rail = port_nic[end]
            return node, nic_name(rail)
        if host in self.topology.spines:
            uplink = self.topology.spine_port_leaf(host, self.topology.port_index(host, port))
            return uplink.leaf, uplink.leaf_port
        return end

    def rx_power_dbm(self, cable: CableKey, effects: FaultEffects) -> float:
        """Mean receive power on a cable, after attenuation; uplinks use a seeded healthy value."""
        host, port = cable
        if port.startswith("mlx5_"):
            base = self.optics_base_dbm(host, int(port.removeprefix("mlx5_")))
        else:
            base = -1.0 + 3.0 * unit_random(self.seed, "rxpower", host, port)
        return base - effects.attenuation_db.get(cable, 0.0)

    def pre_fec_ber(self, cable: CableKey, effects: FaultEffects) -> float:
        """Pre-FEC BER: seeded healthy value, raised by weak light or a high_ber fault."""
        power = self.rx_power_dbm(cable, effects)
        ber = self.base_ber(cable) * 10 ** (0.75 * max(0.0, -3.0 - power))
        return min(0.05, max(ber, effects.ber.get(cable, 0.0)))

    @staticmethod
    def post_fec_ber(pre_fec_ber: float) -> float:
        """Symbols RS(544,514) FEC leaves uncorrected, per received bit (see ``rs_fec_failures``)."""
        return rs_fec_failures(pre_fec_ber).uncorrected_per_bit

    @staticmethod
    def frame_loss(pre_fec_ber: float) -> float:
        """Share of packets lost because a codeword they span was beyond the FEC's reach."""
        codewords = PKT_BYTES * 8 / (RS_K * RS_SYMBOL_BITS)
        return 1.0 - (1.0 - rs_fec_failures(pre_fec_ber).codeword_failure) ** codewords

    def cable_capacity(
        self, cable: CableKey, ends: tuple[str, str], effects: FaultEffects, restarting: frozenset[str]
    ) -> float:
        """Gb/s the cable carries now (0: down); a flapping cable counts only while up."""
        if cable in effects.down or ends[0] in restarting or ends[1] in restarting:
            return 0.0
        if self.rx_power_dbm(cable, effects) < LOS_DBM:
            return 0.0
        capacity = float(effects.rate_gbps.get(cable, self.link_gbps))
        if cable in effects.flapping:
            _, period = effects.flapping[cable]
            capacity *= 1.0 - flap_down_s(period) / period
        return capacity

    # ------------------------------------------------------------------ routing

    def _hash_index(self, config: SwitchConfig, flow: Flow, ingress: str, members: int,
                    dport: int = ROCE_UDP_PORT, protocol: int = 17) -> int:
        values = {
            "source-ip": nic_ip(self.topology, flow.src, flow.rail),
            "destination-ip": nic_ip(self.topology, flow.dst, flow.rail),
            "ip-protocol": str(protocol),
            "source-port": str(flow.sport),
            "destination-port": str(dport),
            "ingress-interface": ingress,
            "rdma-bth-dest-qp": str(flow.rqpn),
        }
        key = "|".join(values[name] for name in ECMP_FIELDS if name in config.ecmp_fields)
        return zlib.crc32(f"{config.hash_seed}|{key}".encode()) % members

    def route(
        self,
        flow: Flow,
        state: NetState,
        configs: Mapping[str, SwitchConfig],
        nic_port: Mapping[NicKey, TxEnd],
        up: Mapping[TxEnd, bool],
        uplink_load: dict[TxEnd, float],
    ) -> tuple[tuple[TxEnd, ...], str | None]:
        """Transmitting ends the flow crosses, and the spine it takes (None: stays on one leaf)."""
        src_leaf, src_port = nic_port[(flow.src, flow.rail)]
        dst_leaf, dst_port = nic_port[(flow.dst, flow.rail)]
        first = (flow.src, nic_name(flow.rail))
        if src_leaf == dst_leaf:
            return (first, (dst_leaf, dst_port)), None
        uplinks = self.topology.uplinks
        choice = self.uplink_choice(flow, state, configs[src_leaf], src_leaf, dst_leaf, src_port, up, uplink_load)
        out = uplinks[src_leaf][choice]
        back = uplinks[dst_leaf][choice]
        uplink_load[(src_leaf, out.leaf_port)] += flow.offered_gbps
        return (first, (src_leaf, out.leaf_port), (out.spine, back.spine_port), (dst_leaf, dst_port)), out.spine

    def uplink_choice(
        self,
        flow: Flow,
        state: NetState,
        config: SwitchConfig,
        src_leaf: str,
        dst_leaf: str,
        ingress: str,
        up: Mapping[TxEnd, bool],
        uplink_load: Mapping[TxEnd, float],
        dport: int = ROCE_UDP_PORT,
        protocol: int = 17,
    ) -> int:
        """Which spine (index) ``src_leaf`` sends ``flow`` to, entering on ``ingress``: its ECMP hash over
        the members whose both links are up (adaptive routing: the least loaded; a collision fault: one)."""
        uplinks = self.topology.uplinks
        members = [
            s
            for s, (out, back) in enumerate(zip(uplinks[src_leaf], uplinks[dst_leaf], strict=True))
            if up.get((src_leaf, out.leaf_port), True) and up.get((out.spine, back.spine_port), True)
        ]
        if not members:
            members = list(range(len(self.topology.spines)))
        if config.adaptive_routing:
            return min(members, key=lambda s: (uplink_load.get((src_leaf, uplinks[src_leaf][s].leaf_port), 0.0), s))
        if src_leaf in state.collision:
            return members[zlib.crc32(f"collide|{config.hash_seed}|{src_leaf}".encode()) % len(members)]
        return members[self._hash_index(config, flow, ingress, len(members), dport, protocol)]

    def ecmp_egress(
        self, state: NetState, sol: Solution, leaf: str, ingress: str, src: NicKey, dst: NicKey, sport: int,
        dport: int = ROCE_UDP_PORT, protocol: int = 17,
    ) -> str:
        """The port ``leaf`` sends a RoCE packet from NIC ``src`` to NIC ``dst`` with UDP source port ``sport``
        out of, entering on ``ingress``: what the switch's own hash calculator (``cl-ecmpcalc``) answers,
        from the same choice the traffic takes. A destination on the leaf itself leaves by its downlink."""
        context = self.probe_context(state, sol)
        dst_leaf, dst_port = context.nic_port[dst]
        if dst_leaf == leaf:
            return dst_port
        flow = Flow(0, src[1], 0, src[0], dst[0], 0, 0, sport, 0.0)
        choice = self.uplink_choice(flow, state, context.configs[leaf], leaf, dst_leaf, ingress, context.up, {},
                                    dport, protocol)
        return self.topology.uplinks[leaf][choice].leaf_port

    # ------------------------------------------------------------------ the solve

    def solve(self, state: NetState) -> Solution:
        """Loads, congestion, marks, pauses, losses and per-end counter rates under ``state``."""
        effects = state.effects
        sol = Solution()
        configs = {s: self.default_config(s) for s in self.topology.switches}
        configs.update(dict(state.configs))
        nic_port, port_nic = self.cabling(effects)
        ends = self._all_ends(nic_port)
        peers: dict[TxEnd, TxEnd | None] = {e: self.peer(e, nic_port, port_nic) for e in ends}
        cables: dict[TxEnd, CableKey] = {e: self.cable_key(e, port_nic) for e in ends}
        for end in ends:
            peer = peers[end]
            if peer is None:
                sol.capacity[end] = sol.nominal[end] = 0.0
                continue
            capacity = self.cable_capacity(cables[end], (end[0], peer[0]), effects, state.restarting)
            sol.nominal[end] = float(effects.rate_gbps.get(cables[end], self.link_gbps))
            sol.capacity[end] = capacity
            sol.loss[end] = min(0.5, self.frame_loss(self.pre_fec_ber(cables[end], effects)))
            if end[0] in effects.spine_loss:
                sol.loss[end] = 1 - (1 - sol.loss[end]) * (1 - effects.spine_loss[end[0]])
        self._storm_capacity(sol, effects, nic_port)
        up = {end: cap > 0 for end, cap in sol.capacity.items()}
        uplink_load: dict[TxEnd, float] = defaultdict(float)
        paths: list[tuple[TxEnd, ...]] = []
        offered: dict[TxEnd, float] = defaultdict(float)
        for flow in self.flows:
            path, spine = self.route(flow, state, configs, nic_port, up, uplink_load)
            paths.append(path)
            sol.spine_of_flow.append(spine)
            for end in path:
                offered[end] += flow.offered_gbps
        scale = {
            end: (min(1.0, sol.capacity[end] / load) if sol.capacity[end] > 0 else 0.0) for end, load in offered.items()
        }
        self._job_factors(sol, paths, scale, effects)
        demand: dict[TxEnd, float] = defaultdict(float)
        for flow, path in zip(self.flows, paths, strict=True):
            factor = sol.job_factor[flow.job]
            for end in path:
                sol.actual[end] += flow.offered_gbps * factor
                sol.flows_on[end] += 1
                local = scale[end]
                demand[end] += flow.offered_gbps * (min(1.0, factor / local) if local > 0 else 1.0)
        for end, capacity in sol.capacity.items():
            sol.overload[end] = demand[end] / capacity if capacity > 0 else (math.inf if demand[end] else 0.0)
        self._congestion(sol, paths, peers, effects)
        self._phy(sol, ends, peers, cables, effects)
        self._storm_rates(sol, effects, nic_port)
        self._qp_rates(sol, effects)
        return sol

    def _all_ends(self, nic_port: Mapping[NicKey, TxEnd]) -> list[TxEnd]:
        ends: list[TxEnd] = [(node, nic_name(rail)) for node, rail in nic_port]
        for switch in self.topology.switches:
            ends += [(switch, port) for port in self.topology.switch_port_names(switch)]
        return ends

    def _storm_capacity(self, sol: Solution, effects: FaultEffects, nic_port: Mapping[NicKey, TxEnd]) -> None:
        """A storming NIC pauses its leaf port; the leaf's shared buffer fills and slows its neighbours."""
        for nic in effects.storm:
            leaf_end = nic_port[nic]
            if nic not in effects.storm_escalated:
                sol.capacity[leaf_end] *= 0.02
            for other, end in nic_port.items():
                if end[0] == leaf_end[0] and other != nic and nic not in effects.storm_escalated:
                    node_end = (other[0], nic_name(other[1]))
                    sol.capacity[node_end] *= 0.7
        for nic in effects.storm_escalated:
            end = nic_port[nic]
            sol.loss[end] = 1 - (1 - sol.loss.get(end, 0.0)) * 0.02
            sol.dropping.add(end)

    def _job_factors(
        self, sol: Solution, paths: Sequence[tuple[TxEnd, ...]], scale: Mapping[TxEnd, float], effects: FaultEffects
    ) -> None:
        """The pace of each job's collectives, 0..1 of what it offers: the slowest ring gates the step."""
        factor: dict[int, float] = {job.id: 1.0 for job in self.jobs}
        loss: dict[int, float] = defaultdict(float)
        for flow, path in zip(self.flows, paths, strict=True):
            factor[flow.job] = min(factor[flow.job], *(scale[end] for end in path))
            lost = 1.0 - math.prod(1.0 - sol.loss.get(end, 0.0) for end in path)
            loss[flow.job] = max(loss[flow.job], lost)
        stragglers = effects.straggler_nodes()
        for job in self.jobs:
            value = factor[job.id] / (1.0 + 400.0 * loss[job.id])
            if stragglers.intersection(job.nodes):
                value *= 0.85
            for (node, _port), (_at, period) in effects.flapping.items():
                if node in job.nodes:
                    value *= max(0.0, 1.0 - 1.5 * flap_down_s(period) / period)
            sol.job_factor[job.id] = value

    def _ecn_on(self, host: str, effects: FaultEffects) -> bool:
        return host not in effects.ecn_off_switches and host in self.topology.switches

    def _congestion(
        self,
        sol: Solution,
        paths: Sequence[tuple[TxEnd, ...]],
        peers: Mapping[TxEnd, TxEnd | None],
        effects: FaultEffects,
    ) -> None:
        """ECN marks, CNPs, PFC pauses, losses and retransmissions per flow, summed per end."""
        rates = sol.rates
        for end in sol.capacity:
            util = sol.actual.get(end, 0.0) / sol.nominal[end] if sol.nominal[end] else 0.0
            over = sol.overload.get(end, 0.0)
            if over > 1.0:
                sol.queue_usec[end] = min(60.0, 3.0 + 15.0 * (min(over, 5.0) - 1.0))
            else:
                sol.queue_usec[end] = 0.05 * util / max(0.05, 1.0 - util)
        for flow, path in zip(self.flows, paths, strict=True):
            gbps = flow.offered_gbps * sol.job_factor[flow.job]
            if gbps <= 0:
                continue
            pkts = gbps * 1e9 / 8 / PKT_BYTES
            src, dst = path[0], (flow.dst, nic_name(flow.rail))
            working = (
                (flow.src, flow.rail) not in effects.ecn_off_nics
                and (flow.dst, flow.rail) not in effects.ecn_off_nics
                and all(self._ecn_on(end[0], effects) for end in path[1:])
            )
            unmarked = 1.0
            delivered = 1.0
            for index, end in enumerate(path):
                util = sol.actual[end] / sol.nominal[end] if sol.nominal[end] else 0.0
                over = sol.overload.get(end, 0.0)
                receiver = peers[end]
                share = pkts * delivered
                rates[end]["tx_bytes"] += share * PKT_BYTES
                rates[end]["tx_pkts"] += share
                if receiver is not None:
                    rates[receiver]["rx_bytes"] += share * PKT_BYTES
                    rates[receiver]["rx_pkts"] += share
                loss = sol.loss.get(end, 0.0)
                if loss and receiver is not None and end[0] not in effects.spine_loss and end not in sol.dropping:
                    rates[receiver]["rcv_errors"] += share * loss
                delivered *= 1.0 - loss
                if index == 0:
                    continue
                if self._ecn_on(end[0], effects):
                    mark = 0.0015 * util**6 + (min(0.3, 0.02 + 0.05 * (over - 1.0)) if over > 1.0 else 0.0)
                    rates[end]["ecn_marked"] += share * mark
                    unmarked *= 1.0 - mark
                if working:
                    pause = 2e-6 * util**8 + (5e-4 * (over - 1.0) if over > 1.1 else 0.0)
                else:
                    pause = 4e-4 * util**6 + (1e-2 * (min(over, 10.0) - 1.0) if over > 1.0 else 0.0)
                upstream = path[index - 1]
                ingress = peers[upstream]
                if upstream in effects.pfc_off or ingress in effects.pfc_off:
                    # no pause on this hop for RoCE (IEEE 802.1Qbb needs both ends): what PFC would have
                    # held back overflows the congested queue instead
                    dropped = share * min(0.5, pause)
                    rates[end]["tx_drops"] += dropped
                    if ingress is not None:
                        rates[ingress]["rx_discards"] += dropped
                    delivered *= 1.0 - min(0.5, pause)
                    continue
                frames = share * pause
                rates[upstream]["rx_pause"] += frames
                if ingress is not None:
                    rates[ingress]["tx_pause"] += frames
            marked = pkts * delivered * (1.0 - unmarked)
            rates[dst]["ecn_marked_rx"] += marked
            if (flow.dst, flow.rail) not in effects.ecn_off_nics:
                cnps = min(marked * 0.5, 20_000.0)
                rates[dst]["cnp_sent"] += cnps
                key = "cnp_ignored" if (flow.src, flow.rail) in effects.ecn_off_nics else "cnp_handled"
                rates[src][key] += cnps
            lost = pkts * (1.0 - delivered)
            if lost:
                self._go_back_n(sol, path, src, dst, gbps, lost)
            rates[src]["rdma_writes"] += pkts / 64.0
            rates[dst]["rx_write_requests"] += pkts / 64.0
        for values in rates.values():
            paused = min(1.0, values.get("rx_pause", 0.0) * PAUSE_USEC / 1e6)
            values["rx_pause_usec"] = values.get("rx_pause", 0.0) * PAUSE_USEC
            values["tx_pause_usec"] = values.get("tx_pause", 0.0) * PAUSE_USEC
            values["xmit_wait"] = paused * XMIT_WAIT_TICKS_PER_S

    def _go_back_n(self, sol: Solution, path: Sequence[TxEnd], src: TxEnd, dst: TxEnd, gbps: float,
                   lost: float) -> None:
        """What ``lost`` packets per second cost a reliable connection that retransmits go-back-N.

        The receiver answers the first packet after a gap with one NAK (the sender's ``packet_seq_err``) and
        drops every packet of the window in flight behind the gap (its ``out_of_sequence``); the sender
        resends from the lost one, the whole window again. A loss with nothing behind it (the last packet
        of a message) draws no NAK: the sender's ACK timer fires (``local_ack_timeout_err``) and the
        responder may see the resent packets twice (``duplicate_request``).
        """
        rates = sol.rates
        one_way = (1.55 if self.roce else 1.0) + 0.55 * (len(path) - 2)
        rtt_usec = 2 * one_way + sum(sol.queue_usec.get(end, 0.0) for end in path[1:])
        in_flight = min(MAX_OUTSTANDING_PKTS, max(1.0, gbps * 1e9 / 8 * rtt_usec * 1e-6 / PKT_BYTES))
        naked = lost * (1.0 - TAIL_LOSS_SHARE)
        timed_out = lost * TAIL_LOSS_SHARE
        rates[src]["seq_naks"] += naked
        rates[src]["ack_timeouts"] += timed_out
        rates[src]["retrans"] += timed_out
        rates[dst]["out_of_sequence"] += naked * in_flight
        rates[dst]["dup_requests"] += timed_out * in_flight
        resent = lost * in_flight
        rates[src]["tx_pkts"] += resent
        rates[src]["tx_bytes"] += resent * PKT_BYTES

    def _phy(
        self,
        sol: Solution,
        ends: Sequence[TxEnd],
        peers: Mapping[TxEnd, TxEnd | None],
        cables: Mapping[TxEnd, CableKey],
        effects: FaultEffects,
    ) -> None:
        """Bits the receivers' PHYs see (idles included), corrected bits and symbol errors."""
        for end in ends:
            receiver = peers[end]
            if receiver is None or sol.capacity.get(end, 0.0) <= 0:
                continue
            bits = sol.nominal[end] * 1e9
            pre = self.pre_fec_ber(cables[end], effects)
            values = sol.rates[receiver]
            values["rx_bits"] += bits
            values["corrected_bits"] += bits * pre
            values["symbol_errors"] += bits * self.post_fec_ber(pre)

    def _storm_rates(self, sol: Solution, effects: FaultEffects, nic_port: Mapping[NicKey, TxEnd]) -> None:
        for nic in effects.storm:
            node_end = (nic[0], nic_name(nic[1]))
            leaf_end = nic_port[nic]
            if nic in effects.storm_escalated:
                dropped = self.link_gbps * 1e9 / 8 / PKT_BYTES * 0.01
                sol.rates[node_end]["rx_discards"] += dropped
                sol.rates[node_end]["out_of_buffer"] += dropped
                continue
            sol.rates[node_end]["tx_pause"] += STORM_PAUSES_PER_S
            sol.rates[node_end]["tx_pause_usec"] += 1e6 * 0.98
            sol.rates[leaf_end]["rx_pause"] += STORM_PAUSES_PER_S
            for other, end in nic_port.items():
                if end[0] == leaf_end[0] and other != nic:
                    other_end = (other[0], nic_name(other[1]))
                    sol.rates[end]["tx_pause"] += 2_000.0
                    sol.rates[other_end]["rx_pause"] += 2_000.0
                    sol.rates[other_end]["rx_pause_usec"] += 2_000.0 * PAUSE_USEC
                    sol.rates[other_end]["xmit_wait"] += 2_000.0 * PAUSE_USEC / 1e6 * XMIT_WAIT_TICKS_PER_S

    def _qp_rates(self, sol: Solution, effects: FaultEffects) -> None:
        """A NIC out of QP resources starves receive queues: RNR NAKs, WQE shortages, CQE errors."""
        for (node, rail), qps in effects.qp_exhaustion.items():
            values = sol.rates[(node, nic_name(rail))]
            pressure = min(1.0, qps / 4096)
            values["out_of_buffer"] += 500.0 * pressure
            values["rnr_retry"] += 20.0 * pressure
            values["cqe_errors"] += 2.0 * pressure

    # ------------------------------------------------------------------ probes

    def probe(
        self,
        state: NetState,
        sol: Solution,
        src: NicKey,
        dst: NicKey,
        qpn: int,
        *,
        size_bytes: int = 2,
        flow_label: int | None = None,
    ) -> ProbeEstimate:
        """Latency (for ``size_bytes`` messages) and bandwidth from NIC ``src`` to NIC ``dst``.

        ``flow_label`` (perftest ``--flow_label``) sets the UDP source port, and so the ECMP path,
        instead of the QP numbers.
        """
        effects = state.effects
        context = self.probe_context(state, sol)
        configs, nic_port, up = context.configs, context.nic_port, context.up
        sport = roce_sport(qpn, qpn + 1) if flow_label is None else flow_label_sport(flow_label)
        flow = Flow(0, src[1], 0, src[0], dst[0], qpn, qpn + 1, sport, 0.0)
        path, _ = self._probe_route(flow, src, dst, state, configs, nic_port, up)
        reverse_path, _ = self._probe_route(flow, dst, src, state, configs, nic_port, up)
        switches = tuple(end[0] for end in path[1:])
        if any(sol.capacity.get(end, 0.0) <= 0 for end in (*path, *reverse_path)):
            return ProbeEstimate(False, switches, 0.0, 0.0, 0.0, 0.0, 1.0)
        base = (1.55 if self.roce else 1.0) + 0.55 * (len(switches) - 1)
        queue = sum(sol.queue_usec.get(end, 0.0) for end in path[1:])
        back = sum(sol.queue_usec.get(end, 0.0) for end in reverse_path[1:])
        loss = 1.0 - math.prod(1.0 - sol.loss.get(end, 0.0) for end in (*path, *reverse_path))
        qp_jitter = 1.0 + (2.0 if src in effects.qp_exhaustion or dst in effects.qp_exhaustion else 0.0)
        latency = base + (queue + back) / 2.0 + size_bytes * 8 / (self.link_gbps * 1e3)
        jitter = (0.02 + 0.15 * (queue + back) / 2.0) * qp_jitter
        tail = latency + 4.0 * jitter + (50.0 if loss > 1e-6 else 0.0) + (8.0 if qp_jitter > 1 else 0.0)
        bandwidth = min(
            max(sol.capacity[end] - sol.actual.get(end, 0.0), sol.capacity[end] / (sol.flows_on.get(end, 0) + 1))
            for end in path
        )
        bandwidth *= 0.985 / (1.0 + 400.0 * loss)
        return ProbeEstimate(True, switches, latency, jitter, tail, bandwidth, loss)

    def probe_context(self, state: NetState, sol: Solution) -> ProbeContext:
        """Switch configs, cabling and link states under ``state``: cached on ``sol`` (a solve is per state)."""
        cached = sol.probe_context
        if cached is not None and cached[0] is state:
            return cached[1]
        configs = {s: self.default_config(s) for s in self.topology.switches}
        configs.update(dict(state.configs))
        nic_port, _ = self.cabling(state.effects)
        context = ProbeContext(configs, nic_port, {end: cap > 0 for end, cap in sol.capacity.items()})
        sol.probe_context = (state, context)
        return context

    def _probe_route(
        self,
        flow: Flow,
        src: NicKey,
        dst: NicKey,
        state: NetState,
        configs: Mapping[str, SwitchConfig],
        nic_port: Mapping[NicKey, TxEnd],
        up: Mapping[TxEnd, bool],
    ) -> tuple[tuple[TxEnd, ...], str | None]:
        # route() reads only these two entries: a two-entry map, not a copy of the whole cabling
        probe_ports = {(src[0], flow.rail): nic_port[src]}
        probe_ports[(dst[0], flow.rail)] = nic_port[dst]
        routed = Flow(flow.job, flow.rail, 0, src[0], dst[0], flow.lqpn, flow.rqpn, flow.sport, 0.0)
        path, spine = self.route(routed, state, configs, probe_ports, up, defaultdict(float))
        return ((src[0], nic_name(src[1])), *path[1:]), spine
