"""Cables, optics and PHYs: link_down, link_flapping, degraded_rate, optics_low_rx_power, high_ber, miswired.

One finding per NIC and cable: a dark lane is the link being down, not weak
optics, and a high BER behind a weak receiver is the optics' doing, kept as
evidence on the optics finding (the root cause is what gets replaced).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import NamedTuple

from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import PHYS_LINK_UP, PORT_ACTIVE, Context, median, rounded
from fleet.fabric.topology import Endpoint

LINK_DOWN_COUNTERS = ("link_down_events_phy", "link_downed")
"""Counters of a NIC port's link-down events: the PHY's 64-bit one first (``link_downed`` is the 8-bit IBA
LinkDownedCounter, which saturates at 255 and then never moves)."""
CARRIER_CHANGES = "carrier_changes"
"""The netdev's ``/sys/class/net/<if>/carrier_changes``: every carrier loss and every carrier return,
so two changes are one flap."""
POST_FEC_COUNTERS = ("rx_pcs_symbol_err_phy", "symbol_error", "rx_crc_errors_phy")


def rules(ctx: Context) -> list[Finding]:
    found = _link_state(ctx)
    found += _switch_ports_down(ctx, found)
    found += _missing(ctx, found)
    found += _degraded_rate(ctx)
    optics = _optics(ctx)
    found += optics
    found += _ber(ctx, {(f.node, f.nic) for f in optics})
    found += _switch_side(ctx, {(f.node, f.nic) for f in found if f.node})
    found += _miswired(ctx)
    ctx.flagged_nics |= {(f.node, f.nic) for f in found if f.node and f.nic}
    return found


def _downs(ctx: Context, node: str, nic: str, port: str) -> tuple[float, float | None]:
    """(link-down events in the window, over the longer history) of one NIC port.

    The PHY counter, the IBA counter and half the netdev's carrier changes (stored with the ethtool
    counters, under the RDMA device) are three views of the same events: the largest is taken, never
    their sum.
    """
    def largest(counts: list[float | None]) -> float | None:
        return max((c for c in counts if c is not None), default=None)

    changes = ctx.delta(node, CARRIER_CHANGES, nic, port)
    window = largest([*(ctx.delta(node, m, nic, port) for m in LINK_DOWN_COUNTERS),
                      None if changes is None else float(math.ceil(changes / 2))])
    history_changes = ctx.history_delta(node, CARRIER_CHANGES, nic, port)
    history = largest([*(ctx.history_delta(node, m, nic, port) for m in LINK_DOWN_COUNTERS),
                       None if history_changes is None else float(math.ceil(history_changes / 2))])
    return window or 0.0, history


def _link_state(ctx: Context) -> list[Finding]:
    found = []
    for node, nic, port in ctx.nic_ports():
        state = ctx.value(node, "port_state", nic, port)
        phys = ctx.value(node, "phys_state", nic, port)
        up = state == PORT_ACTIVE and phys in (None, PHYS_LINK_UP)
        window, history = _downs(ctx, node, nic, port)
        pattern = max(window, history or 0.0)
        evidence = {"port_state_code": state, "phys_state_code": phys, "link_down_events_in_window": window,
                    "link_down_events_in_history": history, "history_s": ctx.history_s}
        if (up and window >= ctx.t.flap_downs_in_window) or (not up and window and pattern >= ctx.t.flap_pattern_downs):
            found.append(ctx.nic_finding(
                "link_flapping", Severity.CRITICAL, node, nic, evidence | {"up_now": up},
                "Reseat or replace the cable and clean both connectors; if it keeps flapping, swap the "
                "transceiver, then the NIC port. Drain the node while it flaps: every flap stalls NCCL."))
        elif not up:
            found.append(ctx.nic_finding(
                "link_down", Severity.CRITICAL, node, nic, evidence,
                "Check the cable is seated at both ends and the switch port is admin up "
                "(`ip link`, `ibstat`, the leaf's interface status); then swap cable, transceiver, NIC.",
                basis="state"))
    return found


def _switch_ports_down(ctx: Context, already: list[Finding]) -> list[Finding]:
    """A switch port down whose NIC end said nothing: named by the plan or the port's last neighbour."""
    seen = {(f.node, f.nic) for f in already}
    reported = {key[:2] for key in ctx.each("port_state")}
    found = []
    for (switch, device, _), reading in sorted(ctx.each("sw_oper_up").items()):
        if reading.value >= 1.0:
            continue
        planned = ctx.plan_by_switch_port.get((switch, device))
        evidence = {"sw_oper_up": reading.value}
        step = "Check the cable at both ends and the port's admin state; then swap cable and transceiver."
        if planned is not None:
            if (planned.node, planned.nic) in seen or (planned.node, planned.nic) in reported:
                continue
            found.append(Finding("link_down", Severity.CRITICAL, node=planned.node, nic=planned.nic,
                                 switch=switch, port=device, job=ctx.job_of.get(planned.node, ""),
                                 evidence=evidence, next_step=step, basis="state"))
            continue
        peer = ctx.peer_of.get(Endpoint(switch, device))
        if peer is None:
            continue  # an unused port: nothing was ever cabled there
        found.append(Finding("link_down", Severity.CRITICAL, switch=switch, port=device,
                             evidence=evidence | {"peer_host": peer.host, "peer_port": peer.port},
                             next_step=step, basis="state"))
    return found


def _missing(ctx: Context, already: list[Finding]) -> list[Finding]:
    """Planned cables nobody sees, with no sign from either end that the link is up."""
    seen = {(f.node, f.nic) for f in already}
    found = []
    for cable in ctx.data.comparison.missing:
        if (cable.node, cable.nic) in seen:
            continue
        states = [r.value for (h, d, _), r in ctx.each("port_state").items() if (h, d) == (cable.node, cable.nic)]
        switch_up = ctx.value(cable.switch, "sw_oper_up", cable.port)
        if any(s == PORT_ACTIVE for s in states) or switch_up == 1.0:
            continue  # up but not announcing itself: an LLDP matter, not a broken link
        found.append(Finding("link_down", Severity.CRITICAL, node=cable.node, nic=cable.nic,
                             switch=cable.switch, port=cable.port, job=ctx.job_of.get(cable.node, ""),
                             evidence={"lldp_seen": False, "port_state_code": states[0] if states else None,
                                       "sw_oper_up": switch_up},
                             next_step="The planned cable is not seen from either end: check it is plugged "
                                       "in and the port is up.", basis="state"))
    return found


def _degraded_rate(ctx: Context) -> list[Finding]:
    expected = ctx.expected_rate_gbps()
    if expected is None:
        return []
    found = []
    for (node, nic, port), reading in sorted(ctx.each("rate_gbps").items()):
        if ctx.value(node, "port_state", nic, port) != PORT_ACTIVE or reading.value >= expected:
            continue
        found.append(ctx.nic_finding(
            "degraded_rate", Severity.WARNING, node, nic,
            {"rate_gbps": reading.value, "expected_rate_gbps": expected},
            "The link trained below its design rate: check the cable type and length, reseat it, compare "
            "the switch port's configured speed and FEC; a bad lane pair often shows as half rate.", basis="state"))
    return found


class Quantity(NamedTuple):
    """One module reading the optics rule judges against the module's own thresholds."""

    name: str
    """As the module's thresholds are named (``rx_power``, ``tx_power``, ``tx_bias``, ``temp``)."""
    metric: str
    unit: str
    low_kind: str
    high_kind: str
    low_step: str
    high_step: str


_REPLACE_MODULE = ("Replace the transceiver at this NIC (its own laser is out of range: the far end will "
                   "see low light next); check the module's firmware and seating first.")
QUANTITIES: tuple[Quantity, ...] = (
    Quantity("rx_power", "optics_rx_power_dbm", "dbm", "optics_low_rx_power", "optics_high_rx_power",
             "Clean both connectors (a dirty ferrule is the usual cause), check the fibre for tight bends; if "
             "the power stays low, swap the transceiver at the far end (its Tx feeds this Rx), then this one.",
             "The receiver is overloaded: a long-reach module on a short fibre. Fit an attenuator or the module "
             "type the link length calls for."),
    Quantity("tx_power", "optics_tx_power_dbm", "dbm", "optics_tx_power", "optics_tx_power",
             _REPLACE_MODULE, _REPLACE_MODULE),
    Quantity("tx_bias", "optics_tx_bias_ma", "ma", "optics_tx_bias", "optics_tx_bias",
             "The laser draws too little current to light: replace the transceiver.",
             "The laser needs ever more current for its light: it is wearing out. Replace the transceiver at "
             "the next drain, before its power falls."),
    Quantity("temp", "optics_temp_c", "c", "optics_temperature", "optics_temperature",
             "The module runs below its rated temperature: check the inlet air (an economizer, a cold aisle "
             "set too low).",
             "The module runs hot: check the switch or server airflow at that port (blanking panels, fans, "
             "cable bundles blocking the cage); hot modules lose light and then the link."),
)
"""What ``ethtool -m`` reads per module (SFF-8636 / CMIS diagnostics) and the module's thresholds for it,
stored as ``optics_<name>_<high|low>_<alarm|warning>_<unit>`` per NIC."""


def _threshold(ctx: Context, node: str, nic: str, q: Quantity, level: str) -> float | None:
    return ctx.value(node, f"optics_{q.name}_{level}_{q.unit}", nic, "")


def _readings(ctx: Context) -> dict[tuple[str, str, str], dict[str, float]]:
    """(node, nic, metric) -> {lane or "": reading}."""
    found: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for q in QUANTITIES:
        for (node, nic, lane), reading in ctx.each(q.metric).items():
            found[(node, nic, q.metric)][lane] = reading.value
    return found


def _optics(ctx: Context) -> list[Finding]:
    """Each module's readings against the module's own alarm and warning thresholds, low and high.

    Rx power is also compared with the node's other NICs (3 dB under their median is a dirty link
    before it reaches any threshold), which covers modules that publish no thresholds.
    """
    readings = _readings(ctx)
    weakest_rx: dict[tuple[str, str], float] = {}
    for (node, nic, metric), lanes in readings.items():
        if metric == "optics_rx_power_dbm":
            weakest_rx[(node, nic)] = min(lanes.values())
    per_node: dict[str, dict[str, float]] = defaultdict(dict)
    for (node, nic), dbm in weakest_rx.items():
        per_node[node][nic] = dbm
    found = []
    for (node, nic, metric), lanes in sorted(readings.items()):
        if ctx.value(node, "port_state", nic, "1") not in (None, PORT_ACTIVE):
            continue  # a link down is the link rules' finding; its module reads nothing useful
        q = next(q for q in QUANTITIES if q.metric == metric)
        if q.name == "rx_power" and min(lanes.values()) <= ctx.t.optics_dark_dbm:
            continue  # no light at all: the link is down, which the link rules report
        finding = _judge(ctx, node, nic, q, lanes, per_node)
        if finding is not None:
            found.append(finding)
    return found


def _judge(ctx: Context, node: str, nic: str, q: Quantity, lanes: dict[str, float],
           per_node: dict[str, dict[str, float]]) -> Finding | None:
    low_lane, low = min(lanes.items(), key=lambda item: item[1])
    high_lane, high = max(lanes.items(), key=lambda item: item[1])
    limits = {level: _threshold(ctx, node, nic, q, level)
              for level in ("low_alarm", "low_warning", "high_warning", "high_alarm")}
    evidence: dict[str, object] = {f"module_{level}_{q.unit}": value for level, value in limits.items()}
    below_peers = None
    if q.name == "rx_power":
        peers = median(v for other, v in per_node[node].items() if other != nic)
        evidence["node_median_rx_power_dbm"] = peers
        evidence["pre_fec_ber"] = rounded(_pre_fec_ber(ctx, node, nic))
        below_peers = peers is not None and peers - low >= ctx.t.optics_below_peers_db
    lane_key = "lane" if q.name != "temp" else "where"
    for level, reading, lane, past in (
        ("low_alarm", low, low_lane, lambda v, t: v <= t), ("high_alarm", high, high_lane, lambda v, t: v >= t),
        ("low_warning", low, low_lane, lambda v, t: v <= t), ("high_warning", high, high_lane, lambda v, t: v >= t),
    ):
        limit = limits[level]
        if limit is None or not past(reading, limit):
            continue
        kind = q.low_kind if level.startswith("low") else q.high_kind
        step = q.low_step if level.startswith("low") else q.high_step
        severity = Severity.CRITICAL if level.endswith("alarm") else Severity.WARNING
        return ctx.nic_finding(kind, severity, node, nic,
                               {f"{q.name}_{q.unit}": reading, lane_key: lane or "module", "past": level,
                                **evidence}, step, basis="state")
    if below_peers:
        return ctx.nic_finding(q.low_kind, Severity.WARNING, node, nic,
                               {f"{q.name}_{q.unit}": low, lane_key: low_lane, "past": "below_node_peers",
                                "below_peers_db": ctx.t.optics_below_peers_db, **evidence}, q.low_step,
                               basis="state")
    return None


def _pre_fec_ber(ctx: Context, node: str, nic: str, *, recent: bool = False) -> float | None:
    corrected = ctx.delta(node, "rx_corrected_bits_phy", nic, "1", recent=recent)
    bits = ctx.delta(node, "rx_bits_phy", nic, "1", recent=recent)
    if corrected is not None and bits:
        return corrected / bits
    return ctx.value(node, "pre_fec_ber", nic, "1")


def _ber(ctx: Context, optics: set[tuple[str, str]]) -> list[Finding]:
    """Pre-FEC BER against RS(544,514)'s limit, and errors FEC could not fix (real loss), per NIC."""
    t = ctx.t
    warn = t.pre_fec_ber_warn_fraction * t.fec_limit_pre_fec_ber
    found = []
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in optics or ctx.value(node, "port_state", nic, port) != PORT_ACTIVE:
            continue
        bers = [b for b in (_pre_fec_ber(ctx, node, nic, recent=r) for r in ctx.spans) if b is not None]
        ber = max(bers, default=None)
        post = {m: ctx.delta(node, m, nic, port) or 0.0 for m in POST_FEC_COUNTERS}
        lost = max(post.values())
        if (ber is None or ber < warn) and lost < t.post_fec_errors_in_window:
            continue
        critical = lost >= t.post_fec_errors_in_window or (ber is not None and ber >= t.fec_limit_pre_fec_ber)
        found.append(ctx.nic_finding(
            "high_ber", Severity.CRITICAL if critical else Severity.WARNING, node, nic,
            {"pre_fec_ber": rounded(ber), "pre_fec_ber_warn": rounded(warn),
             "fec_limit_pre_fec_ber": t.fec_limit_pre_fec_ber, "post_fec_symbol_errors_in_window": post[
                 "rx_pcs_symbol_err_phy"] or post["symbol_error"], "crc_errors_in_window": post["rx_crc_errors_phy"],
             "seen_by": "nic"},
            "Clean and reseat the cable, then swap the transceiver or cable; compare with the switch "
            "port's error counters to tell which end's receiver suffers."))
    return found


def _nic_at(ctx: Context, switch: str, port: str) -> tuple[str, str]:
    """The NIC a leaf port's cable should reach (the plan), else the one it was last seen reaching (LLDP)."""
    planned = ctx.plan_by_switch_port.get((switch, port))
    if planned is not None:
        return planned.node, planned.nic
    peer = ctx.peer_of.get(Endpoint(switch, port))
    return (peer.host, peer.port) if peer is not None and ctx.role(peer.host) not in ("leaf", "spine") else ("", "")


def _switch_side(ctx: Context, named: set[tuple[str, str]]) -> list[Finding]:
    """What the leaf's end of a NIC's cable sees and the NIC's own counters cannot: carrier transitions
    (NVUE ``carrier-transitions``, two per flap) while the NIC says nothing, and receive errors, which
    point at the NIC's transmitter, its module or the fibre towards the leaf."""
    found = []
    for (switch, port, _), _reading in sorted(ctx.each("sw_carrier_transitions").items()):
        transitions = ctx.delta(switch, "sw_carrier_transitions", port) or 0.0
        node, nic = _nic_at(ctx, switch, port)
        if ctx.role(switch) not in ("leaf", "") or transitions < 2 * ctx.t.flap_downs_in_window or not node:
            continue
        if (node, nic) in named or ctx.value(node, "port_state", nic, "1") is not None:
            continue  # the NIC reports its own link: its counters judged it
        named.add((node, nic))
        found.append(Finding(
            "link_flapping", Severity.CRITICAL, node=node, nic=nic, switch=switch, port=port,
            job=ctx.job_of.get(node, ""),
            evidence={"switch_carrier_transitions_in_window": transitions, "seen_by": "switch",
                      "sw_oper_up": ctx.value(switch, "sw_oper_up", port)},
            next_step="The leaf sees this cable go down and up while the node reports nothing: reseat or "
                      "replace the cable, then the transceivers; check the node's collection too."))
    for (switch, port, _), _reading in sorted(ctx.each("sw_rx_errors").items()):
        if ctx.role(switch) not in ("leaf", ""):
            continue
        errors = ctx.delta(switch, "sw_rx_errors", port)
        if not errors or errors < ctx.t.post_fec_errors_in_window:
            continue
        node, nic = _nic_at(ctx, switch, port)
        if not node or (node, nic) in named:
            continue
        found.append(Finding(
            "high_ber", Severity.CRITICAL, node=node, nic=nic, switch=switch, port=port,
            job=ctx.job_of.get(node, ""),
            evidence={"switch_rx_errors_in_window": errors, "seen_by": "switch",
                      "nic_tx_power_dbm": min((r.value for (h, d, _), r in ctx.each("optics_tx_power_dbm").items()
                                               if (h, d) == (node, nic)), default=None)},
            next_step=f"The leaf receives errors from {node or 'this port'} {nic}: check that NIC's transceiver "
                      "(Tx power, bias) and the fibre towards the leaf; clean, reseat, then swap the NIC-side "
                      "module."))
    return found


def _miswired(ctx: Context) -> list[Finding]:
    found = []
    for miswire in ctx.data.comparison.miswired:
        planned, seen = miswire.planned, miswire.seen
        if seen.host == planned.switch or ctx.role(seen.host) in ("leaf", "spine"):
            switch, port = seen.host, seen.port  # seen from the NIC: where its cable really lands
            evidence = {"planned_switch": planned.switch, "planned_port": planned.port,
                        "seen_switch": seen.host, "seen_port": seen.port}
        else:
            switch, port = planned.switch, planned.port  # seen from the switch: who is really there
            evidence = {"planned_node": planned.node, "planned_nic": planned.nic,
                        "seen_node": seen.host, "seen_nic": seen.port}
        found.append(Finding(
            "miswired", Severity.WARNING, node=planned.node, nic=planned.nic, switch=switch, port=port,
            job=ctx.job_of.get(planned.node, ""), evidence=evidence | {"seen_from": sorted(miswire.seen_from)},
            next_step=f"Move the cable of {planned.node} {planned.nic} to {planned.switch} {planned.port} "
                      "as the cabling plan says; a rail crossed to another leaf breaks rail-local traffic.",
            basis="state"))
    return found
