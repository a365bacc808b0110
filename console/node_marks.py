"""Which of a node's values crossed a health threshold, and which one: the Node screen colours
those cells and says the threshold in its legend and on the highlighted row.

The thresholds are ``fleet.fabric.health.HealthThresholds``, the very limits that make the
node degraded on the Fleet screen, so a red cell here is always a reason there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fleet.fabric.health import PORT_ACTIVE, GpuSummary, HealthThresholds, NicSummary
from fleet.fabric.xid import is_critical


class Level(Enum):
    """The theme variable that colours a cell at each level."""

    FINE = ""
    WATCH = "accent"
    """Within its threshold but far from the node's other NICs: the first sign of a bad part."""
    WARN = "health-degraded"
    BAD = "health-down"


BER_PEER_FACTOR = 100.0
"""A NIC whose pre-FEC BER is 100 times its node's median is watched: healthy ports of one node sit
within an order of magnitude of each other, and a dirty connector moves one port by several."""
BER_WATCH_FLOOR = 1e-7
"""Below this no BER is worth a look, however far from its peers (RS-FEC corrects ~2.4e-4)."""


@dataclass(frozen=True, slots=True)
class Mark:
    level: Level
    why: str
    """The threshold crossed, in words with units ("PFC pauses >= 1,000/s")."""


FINE = Mark(Level.FINE, "")


def threshold_words(t: HealthThresholds) -> list[tuple[Level, str]]:
    """Every threshold the Node screen colours, for its legend."""
    return [
        (Level.BAD, "port not ACTIVE"),
        (Level.BAD, f"new link errors (>= {t.link_error_delta_warn:g} in 5 min)"),
        (Level.BAD, f"optics below the module's low alarm (default {t.optics_rx_low_alarm_dbm:g} dBm)"),
        (Level.WARN, f"optics within the module's warning margin (default {t.optics_margin_warn_db:g} dB) "
                     f"or {t.optics_below_peers_db:g} dB below the node's median NIC"),
        (Level.WARN, f"PFC >= {t.pause_warn_per_s:,.0f}/s"),
        (Level.WARN, f"pre-FEC BER >= {t.pre_fec_ber_warn:.0e}"),
        (Level.WATCH, f"pre-FEC BER {BER_PEER_FACTOR:g}x the node's median NIC"),
        (Level.WARN, "lower trained rate"),
        (Level.WARN, f"ECN >= {t.ecn_without_cnp_per_s:g}/s with no CNP"),
        (Level.WARN, f"GPU >= {t.gpu_temp_warn_c:g} °C"),
        (Level.BAD, "critical XID or ECC/NVLink errors"),
    ]


def port_marks(nic: NicSummary, best_rate_gbps: float, t: HealthThresholds,
               median_ber: float | None = None) -> dict[str, Mark]:
    """Marks of one NIC port's cells, by column key (``state``, ``rate``, ``pfc``, ``ecn``,
    ``errors``, ``ber``); unmarked columns are fine. ``median_ber``: the node's median NIC's."""
    marks: dict[str, Mark] = {}
    if nic.port_state is not None and nic.port_state != PORT_ACTIVE:
        marks["state"] = Mark(Level.BAD, "port not ACTIVE")
    if nic.rate_gbps is not None and best_rate_gbps and nic.rate_gbps < best_rate_gbps:
        marks["rate"] = Mark(Level.WARN, f"trained at {nic.rate_gbps:g} Gb/s, the node's best is {best_rate_gbps:g}")
    pauses = (nic.rx_pause_per_s or 0.0) + (nic.tx_pause_per_s or 0.0)
    if pauses >= t.pause_warn_per_s:
        marks["pfc"] = Mark(Level.WARN, f"{pauses:,.0f} PFC pauses/s >= {t.pause_warn_per_s:,.0f}/s")
    if (nic.ecn_marked_per_s or 0.0) >= t.ecn_without_cnp_per_s and not nic.cnp_sent_per_s:
        marks["ecn"] = Mark(Level.WARN, f"ECN {nic.ecn_marked_per_s:,.0f}/s >= {t.ecn_without_cnp_per_s:g}/s "
                                        "with no CNP sent: DCQCN not working")
    if nic.link_error_delta >= t.link_error_delta_warn or nic.errors_per_s:
        marks["errors"] = Mark(Level.BAD, f"{nic.error_delta:,.0f} new errors in 5 min")
    if nic.pre_fec_ber is not None and nic.pre_fec_ber >= t.pre_fec_ber_warn:
        marks["ber"] = Mark(Level.WARN, f"pre-FEC BER {nic.pre_fec_ber:.1e} >= {t.pre_fec_ber_warn:.0e}")
    elif (nic.pre_fec_ber is not None and median_ber and nic.pre_fec_ber >= BER_WATCH_FLOOR
          and nic.pre_fec_ber >= BER_PEER_FACTOR * median_ber):
        marks["ber"] = Mark(Level.WATCH, f"pre-FEC BER {nic.pre_fec_ber:.1e} is {nic.pre_fec_ber / median_ber:,.0f}x "
                                         f"the node's median NIC ({median_ber:.1e}); warning at {t.pre_fec_ber_warn:.0e}")
    return marks


def median_ber(nics: tuple[NicSummary, ...]) -> float | None:
    """The node's median pre-FEC BER over its NICs (three or more), the watch level's reference."""
    values = sorted(n.pre_fec_ber for n in nics if n.pre_fec_ber is not None)
    return values[len(values) // 2] if len(values) >= 3 else None


def lane_mark(rx_dbm: float | None, median_dbm: float | None, t: HealthThresholds,
              low_alarm_dbm: float | None = None, low_warning_dbm: float | None = None) -> Mark:
    """Mark of one optics lane's (or NIC's weakest lane's) Rx power: against the module's own low
    alarm and warning (its EEPROM) when read, else ``t``'s, as ``fleet.fabric.health`` judges."""
    if rx_dbm is None:
        return FINE
    alarm = low_alarm_dbm if low_alarm_dbm is not None else t.optics_rx_low_alarm_dbm
    warn_db = (low_warning_dbm - low_alarm_dbm if low_warning_dbm is not None and low_alarm_dbm is not None
               else t.optics_margin_warn_db)
    margin = rx_dbm - alarm
    if margin < 0:
        return Mark(Level.BAD, f"Rx {rx_dbm:.1f} dBm below the {alarm:g} dBm alarm")
    if margin < warn_db:
        return Mark(Level.WARN, f"Rx {rx_dbm:.1f} dBm: {margin:.1f} dB above the {alarm:g} dBm alarm, < {warn_db:g} dB")
    if median_dbm is not None and rx_dbm <= median_dbm - t.optics_below_peers_db:
        return Mark(Level.WARN, f"Rx {rx_dbm:.1f} dBm: {median_dbm - rx_dbm:.1f} dB below the node's median NIC "
                                f"({median_dbm:.1f} dBm), >= {t.optics_below_peers_db:g} dB")
    return FINE


def gpu_marks(gpu: GpuSummary, t: HealthThresholds) -> dict[str, Mark]:
    """Marks of one GPU's cells by column key (``temp``, ``xid``, ``errors``)."""
    marks: dict[str, Mark] = {}
    if gpu.temp_c is not None and gpu.temp_c >= t.gpu_temp_warn_c:
        marks["temp"] = Mark(Level.WARN, f"{gpu.temp_c:.0f} °C >= {t.gpu_temp_warn_c:g} °C")
    if gpu.xid_last and is_critical(gpu.xid_last):
        marks["xid"] = Mark(Level.BAD, f"XID {gpu.xid_last} is critical")
    if gpu.error_delta > 0:
        marks["errors"] = Mark(Level.BAD, f"+{gpu.error_delta:g} ECC/NVLink errors in 5 min")
    return marks


def median_nic_rx(nics: tuple[NicSummary, ...]) -> float | None:
    """The node's median NIC (by weakest lane), as ``fleet.fabric.health.classify`` compares to."""
    levels = sorted(n.worst_rx_dbm for n in nics if n.worst_rx_dbm is not None)
    return levels[len(levels) // 2] if len(levels) >= 3 else None
