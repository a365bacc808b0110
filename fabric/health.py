"""Node health: ok, degraded or down, with the reasons in words.

Pure domain logic shared by the console (health colour) and reports. Input is
what one host last reported (``values``: ``(metric, device, port) -> value``,
see ``fleet.fabric.samples``), how much each error counter rose over a recent window
(``error_deltas``, same keys, events), and the collection state of the host.
Every threshold carries the reason it has the value it has.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from fleet.fabric.records import HostStatus
from fleet.fabric.samples import METRICS, MetricKind, SeriesKey
from fleet.fabric.states import HostState
from fleet.fabric.xid import is_critical


class Health(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    DOWN = "down"
    UNKNOWN = "unknown"
    """Not yet heard from (connecting) or no data at the moment shown."""

    @property
    def rank(self) -> int:
        """Badness for sorting: down first, then degraded, unknown, ok."""
        return {Health.DOWN: 3, Health.DEGRADED: 2, Health.UNKNOWN: 1, Health.OK: 0}[self]



PORT_ACTIVE = 4.0
"""IB port state code for ACTIVE (``port_state`` metric)."""

LINK_ERROR_METRICS: frozenset[str] = frozenset({
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "port_rcv_remote_physical_errors", "local_link_integrity_errors",
    "rx_pcs_symbol_err_phy", "link_down_events_phy",
})
"""Error counters that point at the cable, optics or PHY rather than congestion."""

GPU_ERROR_METRICS: frozenset[str] = frozenset({
    "gpu_ecc_volatile_uncorrected", "gpu_ecc_aggregate_uncorrected",
    "gpu_nvlink_crc_errors", "gpu_nvlink_replay_errors", "gpu_nvlink_recovery_errors",
    "gpu_retired_pages",
})
"""GPU error counters any rise of which a job notices (ECC, NVLink, retired rows)."""

ERROR_METRICS: frozenset[str] = frozenset(
    name for name, spec in METRICS.items() if spec.kind is MetricKind.ERROR
)


@dataclass(frozen=True, slots=True)
class HealthThresholds:
    """Limits above (or below) which a node is degraded. Units in the names."""

    optics_rx_low_alarm_dbm: float = -10.0
    """Low-alarm Rx power assumed for a module that publishes no thresholds of its own (a module's
    EEPROM carries them, SFF-8636 / CMIS, and they win whenever the collector read them); margins are
    measured against it, because below it the receiver stops decoding reliably."""
    optics_margin_warn_db: float = 2.0
    """Without the module's own low warning: a lane within 2 dB of the low alarm is at the usual
    low-warning distance: dirty connector or bent fibre, the first step before CRC errors."""
    optics_below_peers_db: float = 3.0
    """A NIC whose weakest lane is 3 dB (half the light) below the node's median NIC: healthy
    modules of one node sit within 1-2 dB of each other, so this is a dirty or damaged link
    even while it is still far from the alarm."""
    pause_warn_per_s: float = 1000.0
    """PFC pause frames per second per NIC. A DCQCN-tuned fabric pauses rarely; a sustained
    thousand a second means head-of-line blocking that stalls collectives (docs/domain.md, "PFC pause and pause storms")."""
    ecn_without_cnp_per_s: float = 100.0
    """ECN-marked packets per second received while no CNP is sent back: congestion control is
    not working (docs/domain.md, "ECN, CNP and DCQCN")."""
    pre_fec_ber_warn: float = 2.4e-5
    """RS(544,514) FEC on 200G/400G PAM4 corrects up to a pre-FEC BER of 2.4e-4 (IEEE 802.3 clauses
    119/120); a tenth of it leaves a decade of headroom and flags a link that is getting worse before
    it starts to drop (the diagnosis rule warns at the same point)."""
    gpu_temp_warn_c: float = 85.0
    """H100/A100 slow their clocks from about 87 C; warn just before the job slows down."""
    link_error_delta_warn: float = 1.0
    """Any new PHY/link error in the window: these are rare events on a healthy cable."""
    discard_delta_warn: float = 100.0
    """Dropped packets in the window (discards, out-of-buffer): a few happen under bursts,
    a hundred means loss NCCL will see as timeouts."""


@dataclass(frozen=True, slots=True)
class NicSummary:
    """One RDMA NIC port at the moment shown; rates per second, throughput in Gb/s."""

    device: str
    port: str
    port_state: float | None = None
    rate_gbps: float | None = None
    rx_gbps: float | None = None
    tx_gbps: float | None = None
    rx_pause_per_s: float | None = None
    tx_pause_per_s: float | None = None
    cnp_sent_per_s: float | None = None
    cnp_handled_per_s: float | None = None
    ecn_marked_per_s: float | None = None
    pre_fec_ber: float | None = None
    qp_count: float | None = None
    errors_per_s: float | None = None
    """Sum of all error counters per second, as the collector derived it."""
    link_error_delta: float = 0.0
    discard_delta: float = 0.0
    error_delta: float = 0.0
    worst_rx_dbm: float | None = None
    """Lowest Rx power over the module's lanes."""
    rx_low_alarm_dbm: float | None = None
    """The module's own Rx power low alarm (its EEPROM), when the collector read it."""
    rx_low_warning_dbm: float | None = None
    """The module's own Rx power low warning."""


@dataclass(frozen=True, slots=True)
class GpuSummary:
    device: str
    util_pct: float | None = None
    temp_c: float | None = None
    xid_last: int = 0
    error_delta: float = 0.0


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """What a node looks like at one moment, the numbers the fleet table shows."""

    nics: tuple[NicSummary, ...] = ()
    gpus: tuple[GpuSummary, ...] = ()
    host_up: float | None = None

    @property
    def rx_gbps(self) -> float | None:
        return _sum(n.rx_gbps for n in self.nics)

    @property
    def tx_gbps(self) -> float | None:
        return _sum(n.tx_gbps for n in self.nics)

    @property
    def pause_per_s(self) -> float | None:
        """PFC pause frames per second, received and sent, all NICs."""
        return _sum([*(n.rx_pause_per_s for n in self.nics), *(n.tx_pause_per_s for n in self.nics)])

    @property
    def cnp_per_s(self) -> float | None:
        """CNPs sent per second (this node as the DCQCN notification point)."""
        return _sum(n.cnp_sent_per_s for n in self.nics)

    @property
    def error_delta(self) -> float:
        return sum(n.error_delta for n in self.nics) + sum(g.error_delta for g in self.gpus)

    @property
    def worst_rx_dbm(self) -> float | None:
        values = [n.worst_rx_dbm for n in self.nics if n.worst_rx_dbm is not None]
        return min(values) if values else None

    @property
    def gpu_util_pct(self) -> float | None:
        values = [g.util_pct for g in self.gpus if g.util_pct is not None]
        return sum(values) / len(values) if values else None

    @property
    def gpu_temp_c(self) -> float | None:
        values = [g.temp_c for g in self.gpus if g.temp_c is not None]
        return max(values) if values else None

    @property
    def xids(self) -> tuple[tuple[str, int], ...]:
        """(gpu, last XID) for every GPU that reported one."""
        return tuple((g.device, g.xid_last) for g in self.gpus if g.xid_last)


@dataclass(frozen=True, slots=True)
class NodeHealth:
    health: Health
    reasons: tuple[str, ...] = ()
    worst_nic: str = ""
    """The NIC with the most serious problem, or the busiest one when all are fine."""
    nic_problems: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _sum(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(sum(present)) if present else None


def _is_nic(device: str, port: str) -> bool:
    return bool(device) and not device.startswith("gpu") and not port.startswith("L")


def summarize_node(
    values: Mapping[SeriesKey, float], error_deltas: Mapping[SeriesKey, float] | None = None
) -> NodeSummary:
    """Group one host's values by NIC port and GPU. ``error_deltas``: rise of each error
    counter over the window the caller chose (events)."""
    deltas = error_deltas or {}
    nic_fields: dict[tuple[str, str], dict[str, float]] = {}
    rx_dbm: dict[str, float] = {}
    gpu_fields: dict[str, dict[str, float]] = {}
    device_fields: dict[str, dict[str, float]] = {}
    """Device-wide values of a NIC (port ""): QP count, module temperature and voltage."""
    host_up: float | None = None
    errors = ERROR_METRICS
    for (metric, device, port), value in values.items():
        if metric in errors:
            continue  # raw error counters: their rise arrives in ``error_deltas``
        if not device:
            if metric == "host_up":
                host_up = value
        elif device.startswith("gpu"):
            gpu_fields.setdefault(device, {})[metric] = value
        elif port.startswith("L"):
            if metric == "optics_rx_power_dbm" and math.isfinite(value):
                rx_dbm[device] = min(value, rx_dbm.get(device, value))
        elif not port:
            device_fields.setdefault(device, {})[metric] = value
        elif not metric.startswith("sw_"):
            nic_fields.setdefault((device, port), {})[metric] = value
    for metric, device, port in deltas:
        if device.startswith("gpu"):
            gpu_fields.setdefault(device, {})
        elif port and _is_nic(device, port) and not metric.startswith("sw_"):
            nic_fields.setdefault((device, port), {})
    nics = []
    for (device, port), f in sorted(nic_fields.items()):
        own = {m: d for (m, dev, p), d in deltas.items() if dev == device and p == port}
        nics.append(NicSummary(
            device=device, port=port,
            port_state=f.get("port_state"), rate_gbps=f.get("rate_gbps"),
            rx_gbps=f.get("rx_gbps"), tx_gbps=f.get("tx_gbps"),
            rx_pause_per_s=f.get("rx_pause_per_s"), tx_pause_per_s=f.get("tx_pause_per_s"),
            cnp_sent_per_s=f.get("cnp_sent_per_s"), cnp_handled_per_s=f.get("cnp_handled_per_s"),
            ecn_marked_per_s=f.get("ecn_marked_per_s"), pre_fec_ber=f.get("pre_fec_ber"),
            qp_count=f.get("qp_count", device_fields.get(device, {}).get("qp_count")), errors_per_s=f.get("errors_per_s"),
            link_error_delta=sum(d for m, d in own.items() if m in LINK_ERROR_METRICS),
            discard_delta=sum(d for m, d in own.items() if m not in LINK_ERROR_METRICS),
            error_delta=sum(own.values()),
            worst_rx_dbm=rx_dbm.get(device),
            rx_low_alarm_dbm=device_fields.get(device, {}).get("optics_rx_power_low_alarm_dbm"),
            rx_low_warning_dbm=device_fields.get(device, {}).get("optics_rx_power_low_warning_dbm"),
        ))
    gpus = []
    for device, f in sorted(gpu_fields.items(), key=lambda item: _gpu_index(item[0])):
        own_delta = sum(d for (m, dev, _p), d in deltas.items() if dev == device)
        gpus.append(GpuSummary(
            device=device, util_pct=f.get("gpu_util_pct"), temp_c=f.get("gpu_temp_c"),
            xid_last=int(f.get("gpu_xid_last", 0)), error_delta=own_delta,
        ))
    return NodeSummary(nics=tuple(nics), gpus=tuple(gpus), host_up=host_up)


def _gpu_index(device: str) -> int:
    digits = device[3:]
    return int(digits) if digits.isdigit() else 0


def optics_margin_db(rx_dbm: float | None, t: HealthThresholds, low_alarm_dbm: float | None = None) -> float | None:
    """dB above the low alarm of the weakest lane (negative: below the alarm): the module's own alarm
    when known, else ``t.optics_rx_low_alarm_dbm``."""
    if rx_dbm is None:
        return None
    return rx_dbm - (low_alarm_dbm if low_alarm_dbm is not None else t.optics_rx_low_alarm_dbm)


def _nic_problems(
    nic: NicSummary, best_rate_gbps: float, median_rx_dbm: float | None, t: HealthThresholds
) -> list[str]:
    name = nic.device
    problems: list[str] = []
    if nic.port_state is not None and nic.port_state != PORT_ACTIVE:
        problems.append(f"{name} port not active (state {nic.port_state:g})")
    if nic.rate_gbps is not None and best_rate_gbps and nic.rate_gbps < best_rate_gbps:
        problems.append(f"{name} trained at {nic.rate_gbps:g} Gb/s, others {best_rate_gbps:g}")
    margin = optics_margin_db(nic.worst_rx_dbm, t, nic.rx_low_alarm_dbm)
    warn_db = (nic.rx_low_warning_dbm - nic.rx_low_alarm_dbm
               if nic.rx_low_warning_dbm is not None and nic.rx_low_alarm_dbm is not None else t.optics_margin_warn_db)
    if margin is not None and margin < warn_db:
        problems.append(f"{name} optics Rx {nic.worst_rx_dbm:.1f} dBm, margin {margin:.1f} dB")
    elif (nic.worst_rx_dbm is not None and median_rx_dbm is not None
          and nic.worst_rx_dbm <= median_rx_dbm - t.optics_below_peers_db):
        problems.append(f"{name} optics Rx {nic.worst_rx_dbm:.1f} dBm, "
                        f"{median_rx_dbm - nic.worst_rx_dbm:.1f} dB below the node's other NICs")
    if nic.errors_per_s:
        problems.append(f"{name} {nic.errors_per_s:,.1f} errors/s")
    elif nic.link_error_delta >= t.link_error_delta_warn:
        problems.append(f"{name} +{nic.link_error_delta:g} link errors")
    if nic.discard_delta >= t.discard_delta_warn:
        problems.append(f"{name} +{nic.discard_delta:g} drops/retransmissions")
    pauses = (nic.rx_pause_per_s or 0.0) + (nic.tx_pause_per_s or 0.0)
    if pauses >= t.pause_warn_per_s:
        problems.append(f"{name} {pauses:,.0f} PFC pauses/s")
    if (nic.ecn_marked_per_s or 0.0) >= t.ecn_without_cnp_per_s and not nic.cnp_sent_per_s:
        problems.append(f"{name} ECN marks without CNPs: DCQCN not working")
    if nic.pre_fec_ber is not None and nic.pre_fec_ber >= t.pre_fec_ber_warn:
        problems.append(f"{name} pre-FEC BER {nic.pre_fec_ber:.1e}")
    return problems


def classify(
    status: HostStatus | None, summary: NodeSummary, thresholds: HealthThresholds | None = None
) -> NodeHealth:
    """Health of one node. Collection failures win: a host we cannot read is down, with the
    collector's reason; a host that answers is degraded by any NIC or GPU problem."""
    t = thresholds or HealthThresholds()
    if status is not None and status.state.is_failure:
        reason = f"{status.state.value}: {status.reason}" if status.reason else status.state.value
        return NodeHealth(Health.DOWN, (reason,))
    if summary.host_up is not None and summary.host_up < 1:
        return NodeHealth(Health.DOWN, ("last collection failed",))
    if not summary.nics and not summary.gpus and summary.host_up is None:
        connecting = status is not None and status.state is HostState.CONNECTING
        return NodeHealth(Health.UNKNOWN, ("connecting" if connecting else "no data",))
    reasons: list[str] = []
    if status is not None and status.state is HostState.SLOW:
        reasons.append(f"slow: {status.reason}" if status.reason else "slow")
    rates = [n.rate_gbps for n in summary.nics if n.rate_gbps is not None]
    best_rate = max(rates) if rates else 0.0
    rx_levels = sorted(n.worst_rx_dbm for n in summary.nics if n.worst_rx_dbm is not None)
    median_rx = rx_levels[len(rx_levels) // 2] if len(rx_levels) >= 3 else None
    nic_problems: dict[str, tuple[str, ...]] = {}
    for nic in summary.nics:
        found = _nic_problems(nic, best_rate, median_rx, t)
        if found:
            nic_problems[nic.device] = tuple(found)
            reasons.extend(found)
    if summary.nics and all(
        n.port_state is not None and n.port_state != PORT_ACTIVE for n in summary.nics
    ):
        return NodeHealth(Health.DOWN, ("every RDMA port is down", *reasons), summary.nics[0].device, nic_problems)
    for gpu in summary.gpus:
        if gpu.xid_last and is_critical(gpu.xid_last):
            reasons.append(f"{gpu.device} XID {gpu.xid_last}")
        if gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_warn_c:
            reasons.append(f"{gpu.device} at {gpu.temp_c:.0f} C")
        if gpu.error_delta > 0:
            reasons.append(f"{gpu.device} +{gpu.error_delta:g} ECC/NVLink errors")
    worst = _worst_nic(summary, nic_problems)
    return NodeHealth(Health.DEGRADED if reasons else Health.OK, tuple(reasons), worst, nic_problems)


def _worst_nic(summary: NodeSummary, nic_problems: Mapping[str, tuple[str, ...]]) -> str:
    if nic_problems:
        return max(nic_problems, key=lambda device: len(nic_problems[device]))
    busiest = max(
        summary.nics, key=lambda n: (n.rx_gbps or 0.0) + (n.tx_gbps or 0.0), default=None
    )
    return busiest.device if busiest is not None else ""
