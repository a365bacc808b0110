"""Every limit the diagnosis rules use, in one typed, configurable place.

Each default says why it has its value (public specifications and vendor
documentation, or what a healthy fabric shows); docs/domain.md, "Thresholds", and
docs/diagnosis.md list every one with its public source. Units are in the names.
Optics limits are not here: every module carries its own in its EEPROM and the
optics rule uses those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from fleet.fabric.ecmp import EcmpThresholds


@dataclass(frozen=True, slots=True)
class Thresholds:
    # --- links --------------------------------------------------------------
    flap_downs_in_window: float = 1.0
    """Link-down events inside the window (``link_down_events_phy``, ``link_downed``, or half the netdev's
    ``carrier_changes``, which counts every down and every up) while the link is up again now: flapping.
    mlx5 counters.rst: "In case this counter is increasing it may imply on port flapping"."""
    flap_pattern_downs: float = 2.0
    """Link-down events over the rule's longer memory (``history``, a few minutes) from which a link that is
    down right now is called flapping rather than down: one event can be a reseat, two are a pattern."""
    expected_rate_gbps: float | None = None
    """Trained rate every NIC should reach; None: the fleet's most common rate (a fabric is built
    from one NIC and cable type, so the majority rate is the design rate)."""
    optics_below_peers_db: float = 3.0
    """A NIC whose weakest lane is 3 dB (half the light) under the median of the node's other NICs:
    healthy modules of one node sit within 1-2 dB of each other (fabric.health uses the same rule). This is
    the one optics limit of fleet's own: every other optics limit is the module's, read from its EEPROM
    (SFF-8636 / CMIS alarm and warning thresholds)."""
    optics_dark_dbm: float = -30.0
    """Lanes at or below this carry no light at all (the collector stores -inf as -40 dBm): that is a
    link down, not weak optics."""
    fec_limit_pre_fec_ber: float = 2.4e-4
    """The pre-FEC bit error ratio RS(544,514) ("KP4") FEC is specified to correct to a frame loss ratio
    good enough for Ethernet: IEEE 802.3 clauses 119/120 (200G/400G PCS and PMA) specify the PMA's BER
    at 2.4e-4. At it, the link is at the edge; above it frames are lost."""
    pre_fec_ber_warn_fraction: float = 0.1
    """Warn at this share of the FEC limit (2.4e-5): a decade of margin, so a link getting worse is named
    before it drops frames; healthy optics run at 1e-8..1e-6."""
    post_fec_errors_in_window: float = 1.0
    """Errors FEC could not fix, or frames lost to them, in the window (``rx_pcs_symbol_err_phy``,
    ``symbol_error``, ``rx_crc_errors_phy``): any is real loss (mlx5 counters.rst: "traffic is lost")."""
    # --- congestion ---------------------------------------------------------
    storm_paused_share: float = 0.5
    """Share of the time a NIC held its link partner paused (``tx_prio3_pause_duration``, microseconds,
    over the span) at or above which it is storming: a receiver that cannot drain keeps its port in XOFF;
    congestion that DCQCN handles pauses for microseconds at a time, a few percent at most."""
    storm_tx_pause_per_s: float = 10_000.0
    """Pause frames sent per second that count as a storm where the pause duration is not collected: at
    400G one pause quantum lasts ~1.3 ns x 65535, so ten thousand a second keep the link paused most of the
    time."""
    ecn_marked_min_per_s: float = 100.0
    """ECN-marked packets received per second that must be answered by CNPs (fabric.health: the same
    limit): below it a NIC is barely congested and a missing CNP proves little."""
    cnp_to_mark_min_ratio: float = 0.01
    """A notification point answers roughly one CNP per marked burst (mlx5 sends up to one per QP per
    ~4 us); fewer than 1 % of the marks answered means the NP side of DCQCN is off."""
    cnp_ignored_min_per_s: float = 10.0
    """CNPs the NIC received and ignored (``rp_cnp_ignored``) per second: a reaction point that does
    not slow down on CNPs has DCQCN disabled."""
    pause_without_cnp_per_s: float = 100.0
    """Pause frames received per second while no CNP flows either way and no ECN mark is seen: the
    fabric falls back to PFC because ECN never triggers (docs/domain.md, "ECN, CNP and DCQCN")."""
    cnp_idle_per_s: float = 1.0
    """CNP rate (sent + handled) counted as "no CNPs"."""
    ecn_switch_min_nics: int = 3
    """At least this many NICs behind one leaf showing pauses without ECN: the leaf does not mark."""
    rx_discards_in_window: float = 100.0
    """Received packets a NIC dropped for lack of buffer (``rx_discards_phy``: "the adapter is congested
    and cannot absorb the traffic", mlx5 counters.rst) in the window. On a lossless RoCE priority PFC should
    make this zero; a hundred is past a stray burst on a lossy priority."""
    # --- spines -------------------------------------------------------------
    spine_loss_ratio_min: float = 1e-4
    """Estimated packet loss through one spine at or above 0.01 %: the delivery standard for RDMA
    links is loss below 0.01 % (docs/domain.md, "What operators report")."""
    spine_fit_explained_min: float = 0.8
    """The one-spine model (senders' loss per leaf = loss ratio x packets that leaf sent through that
    spine) must explain this share of the loss pattern; below it the loss is not one spine's."""
    spine_lost_packets_min: float = 50.0
    """Lost packets over the window needed before blaming a spine. Under go-back-N one loss is one NAK
    sequence error (``packet_seq_err``) or one ACK timeout (``local_ack_timeout_err``) at the sender, while
    the receiver counts every packet of the window that followed it (``out_of_sequence``)."""
    spine_drops_min: float = 100.0
    """Switch-counted drops on one spine's ports over the window worth a finding."""
    spine_drops_share_min: float = 0.8
    """... when that spine holds at least this share of all spines' drops (concentrated, not fabric-wide)."""
    roce_mtu_bytes: float = 4096.0
    """RoCE path MTU used to turn switch bytes into packets (mlx5 default active MTU 4096)."""
    # --- QPs ------------------------------------------------------------------
    qp_floor_per_device: float = 256.0
    """Queue pairs a device holds outside training jobs (GSI, IPoIB, storage clients, MPI bootstrap):
    a few hundred at most. A node without a job holding more leaks QPs (dead ranks)."""
    nccl_ib_qps_per_connection: float = 1.0
    """``NCCL_IB_QPS_PER_CONNECTION`` of the fleet's jobs (NCCL's default 1; set it to what your jobs
    export, e.g. 4 against ECMP collisions): every NCCL network connection opens this many QPs."""
    nccl_channels_per_net_peer: float = 2.0
    """``NCCL_NCHANNELS_PER_NET_PEER`` (NCCL's default 2): channels per remote peer for point-to-point
    and all-to-all traffic."""
    qp_headroom: float = 2.0
    """The alarm sits at this many times what the node's jobs need: an all-to-all / expert-parallel job
    connects every rank to every remote rank, each connection a send and a receive side,
    ``2 x (nodes - 1) x GPUs per NIC x channels per peer x QPs per connection`` QPs per NIC (fleet
    assumes one GPU per NIC, the rail layout); a job of 128 such nodes needs ~1,000 per NIC, healthily."""
    rnr_naks_per_s: float = 10.0
    """RNR NAKs received per second (``rnr_nak_retry_err``: an RNR NAK received while retries remain, i.e.
    the responder had no receive WQE posted). Not an error completion: back-pressure that stalls the sender
    for the RNR timer, the latency jitter of "too few QP resources" (docs/domain.md, "What operators report")."""
    qp_error_events_in_window: float = 1.0
    """Error completions in the window (``req_cqe_error``, ``resp_cqe_error``): a healthy job completes
    without error CQEs."""
    # --- GPUs -----------------------------------------------------------------
    gpu_temp_warn_c: float = 85.0
    """H100/A100 slow their clocks from about 87 C: warn just before the job slows down (fabric.health)."""
    gpu_thermal_throttle_mask: int = 0x8 | 0x20 | 0x40
    """NVML clocks-event reasons that mean heat: HW slowdown (0x8), SW thermal (0x20), HW thermal (0x40)."""
    # --- jobs -----------------------------------------------------------------
    job_slow_ratio: float = 0.5
    """A job moving less than half the traffic per node of its own recent level, or of the median of the
    running jobs of its size, is stalled: a synchronous collective runs at its slowest member's pace, so a
    halving is one member holding all of them back, not load variation (tens of percent)."""
    job_min_reference_gbps: float = 10.0
    """The reference level (Gb/s per node) a job must have shown before a drop is judged: an idle or
    starting job has no pace to fall from."""
    # --- hosts ----------------------------------------------------------------
    slow_times_min: int = 2
    """A node slow on its own (no other node slow in the window) is named once it was slow this often:
    a single late answer is a hiccup of the node or the network, a repeated one is the node."""
    slow_held_s: float = 10.0
    """... or once it has stayed slow this long without a break (its collector state says so): ten
    intervals of late answers are no hiccup."""
    slow_outlier_factor: float = 1.5
    """Of several hosts slow in the window, one is named when its answer time is this many times the
    median of theirs: a loaded collector delays every host alike (tens of percent apart), a slow host
    adds its own seconds on top."""
    # --- latency --------------------------------------------------------------
    latency_regression_factor: float = 1.5
    """p99 latency this many times the pair's (or job's) baseline: healthy RDMA p99 varies by tens of
    percent run to run, a lossy or congested path doubles it (retransmissions cost tens of us)."""
    latency_regression_min_usec: float = 2.0
    """... and at least this much slower in absolute terms (RoCE one-way latency is 1.5-5 us,
    docs/domain.md, "What operators report"), so sub-microsecond jitter on a 1.6 us path is not a regression."""
    # --- ECMP -------------------------------------------------------------------
    ecmp: EcmpThresholds = field(default_factory=EcmpThresholds)
    """Uplink imbalance limits (fabric.ecmp: max/mean >= 1.5 with a hot uplink >= 90 %, held 60 s: with a
    few flows per uplink a shorter look cannot tell a hash collision from a burst)."""


def with_overrides(base: Thresholds, overrides: Mapping[str, str]) -> Thresholds:
    """``base`` with some numeric limits replaced from text (``{"gpu_temp_warn_c": "80"}``).

    Raises ValueError naming the field for an unknown name, a non-numeric field, or a bad number.
    """
    numeric = {f.name: f.type for f in fields(Thresholds) if f.type in ("float", "int", "float | None")}
    changes: dict[str, float | int] = {}
    for name, text in overrides.items():
        kind = numeric.get(name)
        if kind is None:
            raise ValueError(f"{name}: not a numeric threshold (known: {', '.join(sorted(numeric))})")
        try:
            changes[name] = int(text) if kind == "int" else float(text)
        except ValueError:
            raise ValueError(f"{name}: {text!r} is not a number") from None
    return replace(base, **changes)  # type: ignore[arg-type]
