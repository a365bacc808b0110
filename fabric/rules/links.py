"""Cables, optics and PHYs: link_down, link_flapping, degraded_rate, optics_low_rx_power, high_ber, miswired.

One finding per NIC and cable: a dark lane is the link being down, not weak
optics, and a high BER behind a weak receiver is the optics' doing, kept as
evidence on the optics finding (the root cause is what gets replaced).
"""

from __future__ import annotations

from collections import defaultdict

from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import PHYS_LINK_UP, PORT_ACTIVE, Context, median, rounded
from fleet.fabric.topology import Endpoint

LINK_DOWN_COUNTERS = ("link_downed", "link_down_events_phy")
POST_FEC_COUNTERS = ("rx_pcs_symbol_err_phy", "symbol_error")


def rules(ctx: Context) -> list[Finding]:
    found = _link_state(ctx)
    found += _switch_ports_down(ctx, found)
    found += _missing(ctx, found)
    found += _degraded_rate(ctx)
    optics = _optics(ctx)
    found += optics
    found += _ber(ctx, {(f.node, f.nic) for f in optics})
    found += _miswired(ctx)
    ctx.flagged_nics |= {(f.node, f.nic) for f in found if f.node and f.nic}
    return found


def _downs(ctx: Context, node: str, nic: str, port: str) -> tuple[float, float]:
    """(link-down events since the counters were cleared, new ones in the window)."""
    total = max((ctx.value(node, m, nic, port) or 0.0) for m in LINK_DOWN_COUNTERS)
    window = max((ctx.delta(node, m, nic, port) or 0.0) for m in LINK_DOWN_COUNTERS)
    return total, window


def _link_state(ctx: Context) -> list[Finding]:
    found = []
    for node, nic, port in ctx.nic_ports():
        state = ctx.value(node, "port_state", nic, port)
        phys = ctx.value(node, "phys_state", nic, port)
        up = state == PORT_ACTIVE and phys in (None, PHYS_LINK_UP)
        total, window = _downs(ctx, node, nic, port)
        evidence = {"port_state_code": state, "phys_state_code": phys,
                    "link_down_events": total, "link_down_events_in_window": window}
        if total >= ctx.t.flap_downs_total or (up and window >= ctx.t.flap_downs_in_window):
            found.append(ctx.nic_finding(
                "link_flapping", Severity.CRITICAL, node, nic, evidence | {"up_now": up},
                "Reseat or replace the cable and clean both connectors; if it keeps flapping, swap the "
                "transceiver, then the NIC port. Drain the node while it flaps: every flap stalls NCCL."))
        elif not up:
            found.append(ctx.nic_finding(
                "link_down", Severity.CRITICAL, node, nic, evidence,
                "Check the cable is seated at both ends and the switch port is admin up "
                "(`ip link`, `ibstat`, the leaf's interface status); then swap cable, transceiver, NIC."))
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
                                 evidence=evidence, next_step=step))
            continue
        peer = ctx.peer_of.get(Endpoint(switch, device))
        if peer is None:
            continue  # an unused port: nothing was ever cabled there
        found.append(Finding("link_down", Severity.CRITICAL, switch=switch, port=device,
                             evidence=evidence | {"peer_host": peer.host, "peer_port": peer.port},
                             next_step=step))
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
                                       "in and the port is up."))
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
            "the switch port's configured speed and FEC; a bad lane pair often shows as half rate."))
    return found


def _optics(ctx: Context) -> list[Finding]:
    weakest: dict[tuple[str, str], tuple[float, str]] = {}
    for (node, nic, lane), reading in ctx.each("optics_rx_power_dbm").items():
        if (node, nic) not in weakest or reading.value < weakest[(node, nic)][0]:
            weakest[(node, nic)] = (reading.value, lane)
    per_node: dict[str, dict[str, float]] = defaultdict(dict)
    for (node, nic), (dbm, _) in weakest.items():
        per_node[node][nic] = dbm
    found = []
    for (node, nic), (dbm, lane) in sorted(weakest.items()):
        if dbm <= ctx.t.optics_dark_dbm or ctx.value(node, "port_state", nic, "1") not in (None, PORT_ACTIVE):
            continue  # no light at all: the link is down, which the link rules report
        peers = median(v for other, v in per_node[node].items() if other != nic)
        below = peers is not None and peers - dbm >= ctx.t.optics_below_peers_db
        if dbm >= ctx.t.optics_rx_low_warn_dbm and not below:
            continue
        found.append(ctx.nic_finding(
            "optics_low_rx_power", Severity.WARNING, node, nic,
            {"rx_power_dbm": dbm, "lane": lane, "node_median_rx_power_dbm": peers,
             "rx_low_warn_dbm": ctx.t.optics_rx_low_warn_dbm, "pre_fec_ber": rounded(_pre_fec_ber(ctx, node, nic))},
            "Clean both connectors (dirty ferrule is the usual cause), check the fibre for tight bends; if "
            "the power stays low, swap the transceiver at the end whose Rx is low, then the far end's Tx."))
    return found


def _pre_fec_ber(ctx: Context, node: str, nic: str) -> float | None:
    corrected = ctx.delta(node, "rx_corrected_bits_phy", nic, "1")
    bits = ctx.delta(node, "rx_bits_phy", nic, "1")
    if corrected is not None and bits:
        return corrected / bits
    return ctx.value(node, "pre_fec_ber", nic, "1")


def _ber(ctx: Context, optics: set[tuple[str, str]]) -> list[Finding]:
    found = []
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in optics or ctx.value(node, "port_state", nic, port) != PORT_ACTIVE:
            continue
        ber = _pre_fec_ber(ctx, node, nic)
        post = max((ctx.delta(node, m, nic, port) or 0.0) for m in POST_FEC_COUNTERS)
        if (ber is None or ber <= ctx.t.pre_fec_ber_warn) and post < ctx.t.post_fec_errors_in_window:
            continue
        severity = Severity.CRITICAL if post >= ctx.t.post_fec_errors_in_window else Severity.WARNING
        found.append(ctx.nic_finding(
            "high_ber", severity, node, nic,
            {"pre_fec_ber": rounded(ber), "pre_fec_ber_warn": ctx.t.pre_fec_ber_warn,
             "post_fec_symbol_errors_in_window": post},
            "Clean and reseat the cable, then swap the transceiver or cable; compare with the switch "
            "port's FEC counters to tell which end's receiver suffers."))
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
                      "as the cabling plan says; a rail crossed to another leaf breaks rail-local traffic."))
    return found
