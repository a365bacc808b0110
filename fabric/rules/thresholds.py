"""Every limit the diagnosis rules use, in one typed, configurable place.

Each default says why it has its value (vendor documentation, specifications, or
what a healthy fabric shows); docs/domain.md, "Thresholds", lists every one with
its public source. Units are in the names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from fleet.fabric.ecmp import EcmpThresholds


@dataclass(frozen=True, slots=True)
class Thresholds:
    # --- links --------------------------------------------------------------
    flap_downs_total: float = 2.0
    """Link-down events since the counters were cleared at or above which an up link is *flapping*.
    ``link_downed`` is 0 on a link that trained once and stayed up, and rises on a flapping link
    (docs/domain.md, "IB port counters"); one event can be a reseat, two are a pattern."""
    flap_downs_in_window: float = 1.0
    """... or any new link-down event inside the window while the link is up again now."""
    expected_rate_gbps: float | None = None
    """Trained rate every NIC should reach; None: the fleet's most common rate (a fabric is built
    from one NIC and cable type, so the majority rate is the design rate)."""
    optics_rx_low_warn_dbm: float = -8.0
    """Rx power low-warning of common 400G SR8/DR4 modules (SFF-8636 / CMIS defaults: warning -8 dBm,
    alarm -10 dBm); the module's own threshold should win when the collector reads one."""
    optics_below_peers_db: float = 3.0
    """A NIC whose weakest lane is 3 dB (half the light) under the median of the node's other NICs:
    healthy modules of one node sit within 1-2 dB of each other (fabric.health uses the same rule)."""
    optics_dark_dbm: float = -30.0
    """Lanes at or below this carry no light at all (the collector stores -inf as -40 dBm): that is a
    link down, not weak optics."""
    pre_fec_ber_warn: float = 1e-5
    """RS-FEC on 400G PAM4 corrects up to ~2.4e-4 pre-FEC BER; 1e-5 keeps an order of magnitude of
    headroom and flags a link getting worse before it drops packets (docs/domain.md, "Link quality: FEC and BER")."""
    post_fec_errors_in_window: float = 1.0
    """Symbol errors FEC could not fix (``rx_pcs_symbol_err_phy``, ``symbol_error``): any is real loss."""
    # --- congestion ---------------------------------------------------------
    storm_tx_pause_per_s: float = 10_000.0
    """Pause frames a NIC sends per second at or above which it is storming. A DCQCN-tuned NIC sends
    almost none (healthy fabrics: < 10/s); at 400G one pause quantum lasts ~1.3 ns x 65535, so ten
    thousand a second keep the link paused most of the time."""
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
    # --- spines -------------------------------------------------------------
    spine_loss_ratio_min: float = 1e-4
    """Estimated packet loss through one spine at or above 0.01 %: the delivery standard for RDMA
    links is loss below 0.01 % (docs/domain.md, "What operators report")."""
    spine_fit_explained_min: float = 0.8
    """The one-spine model (receivers' loss per leaf = loss ratio x packets that spine sent to the
    leaf) must explain this share of the loss pattern; below it the loss is not one spine's."""
    spine_lost_packets_min: float = 50.0
    """Lost packets (``out_of_sequence`` on receivers) over the window needed before blaming a spine."""
    spine_drops_min: float = 100.0
    """Switch-counted drops on one spine's ports over the window worth a finding."""
    spine_drops_share_min: float = 0.8
    """... when that spine holds at least this share of all spines' drops (concentrated, not fabric-wide)."""
    roce_mtu_bytes: float = 4096.0
    """RoCE path MTU used to turn switch bytes into packets (mlx5 default active MTU 4096)."""
    # --- QPs ------------------------------------------------------------------
    qp_count_warn: float = 1024.0
    """Queue pairs on one device: NCCL opens a few per peer and NIC (NCCL_IB_QPS_PER_CONNECTION,
    default 1), so hundreds at most for a large job; thousands are leaked QPs of dead ranks."""
    qp_error_events_in_window: float = 1.0
    """CQE errors and RNR retry failures in the window: a healthy job completes without error CQEs."""
    # --- GPUs -----------------------------------------------------------------
    gpu_temp_warn_c: float = 85.0
    """H100/A100 slow their clocks from about 87 C: warn just before the job slows down (fabric.health)."""
    gpu_thermal_throttle_mask: int = 0x8 | 0x20 | 0x40
    """NVML clocks-event reasons that mean heat: HW slowdown (0x8), SW thermal (0x20), HW thermal (0x40)."""
    critical_xids: frozenset[int] = frozenset({48, 63, 64, 74, 79, 92, 94, 95})
    """XIDs that mean lost data or a lost GPU (NVIDIA XID catalogue; docs/domain.md, "GPUs: NVML and XID")."""
    # --- hosts ----------------------------------------------------------------
    slow_times_min: int = 2
    """A node slow on its own (no other node slow in the window) is named once it was slow this often:
    a single late answer is a hiccup of the node or the network, a repeated one is the node."""
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
