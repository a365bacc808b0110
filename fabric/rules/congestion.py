"""Congestion control and load spreading: pfc_storm, ecn_not_working, nic_rx_discards, ecmp_imbalance.

docs/domain.md, "PFC pause and pause storms" and "ECN, CNP and DCQCN": a NIC
that sends pause frames non-stop (a stuck receiver) freezes
its leaf port and, through the leaf's shared buffer, its neighbours; DCQCN
works when ECN-marked packets are answered by CNPs and senders act on them.
Marks without CNPs, CNPs ignored, or pauses rising while CNPs stay at zero
mean congestion control is not working and PFC does all the work.
"""

from __future__ import annotations

from collections import defaultdict

from fleet.fabric.ecmp import UplinkSeries, assess_leaf
from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import Context, rounded

STORM_EVENTS = ("tx_pause_storm_warning_events", "tx_pause_storm_error_events")


def rules(ctx: Context) -> list[Finding]:
    storms = _storms(ctx)
    ctx.flagged_nics |= {(f.node, f.nic) for f in storms}
    storm_leaves = {f.switch for f in storms if f.switch}
    found = storms + _ecn(ctx, storm_leaves) + _discards(ctx) + _ecmp(ctx)
    return found


def _paused_share(ctx: Context, node: str, nic: str, port: str, recent: bool) -> float | None:
    """Share of the span the NIC held its link partner paused: ``tx_prio3_pause_duration`` is microseconds
    of XOFF sent (mlx5 counters.rst, priority port counters)."""
    paused = ctx.delta(node, "tx_prio3_pause_duration", nic, port, recent=recent)
    seconds = ctx.seconds(node, "tx_prio3_pause_duration", nic, port, recent=recent)
    return None if paused is None or seconds <= 0 else min(1.0, paused / 1e6 / seconds)


def _storms(ctx: Context) -> list[Finding]:
    """A NIC that keeps its leaf port paused: by the time it held XOFF (the pause *duration*), its
    watchdog's storm events in the window, or, where durations are not collected, its pause frame rate.

    After the watchdog's error event the NIC stops sending pause frames and drops instead (mlx5
    counters.rst: "on the period where pause frames were disabled, drop could have been occurred"): a
    NIC whose watchdog has fired and that drops in the window is a storm still on. The drops are the
    window's evidence; the watchdog's counter only names their cause.
    """
    t = ctx.t
    found = []
    for node, nic, port in ctx.nic_ports():
        shares = [s for s in (_paused_share(ctx, node, nic, port, r) for r in ctx.spans) if s is not None]
        share = max(shares, default=None)
        frames = max((ctx.rate_or_gauge(node, "tx_prio3_pause", "tx_pause_per_s", nic, port, recent=r) or 0.0)
                     for r in ctx.spans)
        events = {m: ctx.delta(node, m, nic, port) or 0.0 for m in STORM_EVENTS}
        discards = ctx.delta(node, "rx_discards_phy", nic, port) or 0.0
        watchdog_off = (ctx.value(node, "tx_pause_storm_error_events", nic, port) or 0.0) > 0 and (
            discards >= t.rx_discards_in_window)
        storming = (share is not None and share >= t.storm_paused_share) or (
            share is None and frames >= t.storm_tx_pause_per_s)
        if not (storming or any(events.values()) or watchdog_off):
            continue
        found.append(ctx.nic_finding(
            "pfc_storm", Severity.CRITICAL, node, nic,
            {"tx_paused_share": rounded(share), "storm_paused_share": t.storm_paused_share,
             "tx_pause_per_s": rounded(frames), "storm_warning_events_in_window": events[STORM_EVENTS[0]],
             "storm_error_events_in_window": events[STORM_EVENTS[1]],
             "pause_disabled_by_watchdog": watchdog_off and not storming, "rx_discards_in_window": discards},
            "The NIC pauses its leaf port without end: usually a stuck receiver (hung host, PCIe trouble, a "
            "dead process holding buffers). Check dmesg and the NIC's discards, drain the node, keep the "
            "leaf's PFC watchdog on so one NIC cannot freeze its neighbours."))
    return found


def _ecn(ctx: Context, storm_leaves: set[str]) -> list[Finding]:
    t = ctx.t
    found = []
    quiet_by_leaf: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in ctx.flagged_nics:
            continue
        for recent in ctx.spans:
            verdict = _ecn_verdict(ctx, node, nic, port, recent)
            if verdict is not None:
                break
        if verdict is None:
            continue
        side, evidence = verdict
        if side:
            found.append(ctx.nic_finding(
                "ecn_not_working", Severity.WARNING, node, nic, evidence,
                f"The NIC {side}: DCQCN is off on it. Check `mlnx_qos`/`cma_roce_tos` and the "
                "roce_np/roce_rp enable flags (sysfs ecn/roce_np/enable/3, ecn/roce_rp/enable/3) and push "
                "the fleet's flow-control template."))
        else:
            leaf, _ = ctx.switch_end(node, nic)
            if leaf and leaf not in storm_leaves:
                quiet_by_leaf[leaf].append((node, nic, float(evidence["rx_pause_per_s"] or 0.0)))
    for leaf, nics in sorted(quiet_by_leaf.items()):
        if len(nics) < t.ecn_switch_min_nics:
            continue
        found.append(Finding(
            "ecn_not_working", Severity.WARNING, switch=leaf,
            evidence={"nics_pausing_without_cnp": len(nics),
                      "rx_pause_per_s_max": rounded(max(p for _, _, p in nics)),
                      "sw_ecn_marked_per_s": rounded(_switch_marks(ctx, leaf))},
            next_step="NICs behind this leaf are paused while no ECN mark or CNP flows: the leaf does not "
                      "ECN-mark the RoCE queue. Check its WRED/ECN profile on the RoCE traffic class."))
    return found


def _ecn_verdict(ctx: Context, node: str, nic: str, port: str,
                 recent: bool) -> tuple[str, dict[str, float | None]] | None:
    """("answers no ECN mark..." | "ignores the CNPs..." | "" for paused without any mark or CNP, evidence),
    or None when DCQCN looks at work over the span."""
    t = ctx.t
    marked = ctx.rate_or_gauge(node, "np_ecn_marked_roce_packets", "ecn_marked_per_s", nic, port, recent=recent) or 0.0
    sent = ctx.rate_or_gauge(node, "np_cnp_sent", "cnp_sent_per_s", nic, port, recent=recent) or 0.0
    handled = ctx.rate_or_gauge(node, "rp_cnp_handled", "cnp_handled_per_s", nic, port, recent=recent) or 0.0
    ignored = ctx.rate(node, "rp_cnp_ignored", nic, port, recent=recent) or 0.0
    paused = ctx.rate_or_gauge(node, "rx_prio3_pause", "rx_pause_per_s", nic, port, recent=recent) or 0.0
    evidence: dict[str, float | None] = {
        "ecn_marked_per_s": rounded(marked), "cnp_sent_per_s": rounded(sent), "cnp_handled_per_s": rounded(handled),
        "cnp_ignored_per_s": rounded(ignored), "rx_pause_per_s": rounded(paused)}
    if marked >= t.ecn_marked_min_per_s and sent < t.cnp_to_mark_min_ratio * marked:
        return "answers no ECN mark with a CNP", evidence
    if ignored >= t.cnp_ignored_min_per_s:
        return "ignores the CNPs it receives", evidence
    if paused >= t.pause_without_cnp_per_s and sent + handled < t.cnp_idle_per_s and marked < t.cnp_idle_per_s:
        return "", evidence
    return None


def _discards(ctx: Context) -> list[Finding]:
    """Ethernet drops at the NIC's receiver (``rx_discards_phy``, no buffer), on a NIC no earlier rule
    explained: on RoCE's lossless priority PFC should have paused the sender instead."""
    found = []
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in ctx.flagged_nics:
            continue
        discards = ctx.delta(node, "rx_discards_phy", nic, port) or 0.0
        if discards < ctx.t.rx_discards_in_window:
            continue
        found.append(ctx.nic_finding(
            "nic_rx_discards", Severity.WARNING, node, nic,
            {"rx_discards_in_window": discards,
             "rx_prio3_discards_in_window": ctx.delta(node, "rx_prio3_discards", nic, port),
             "rx_out_of_buffer_in_window": ctx.delta(node, "out_of_buffer", nic, port)},
            "The NIC dropped received packets for lack of buffer: check that PFC is enabled on the RoCE "
            "priority at both ends (`mlnx_qos -i <if>`, the leaf's PFC config) and that the host drains the "
            "NIC (PCIe errors, CPU/IRQ saturation)."))
    return found


def _switch_marks(ctx: Context, switch: str) -> float:
    return sum(ctx.rate(switch, "sw_ecn_marked", device, port) or 0.0
               for (host, device, port) in ctx.each("sw_ecn_marked") if host == switch)


def _ecmp(ctx: Context) -> list[Finding]:
    """Uplink imbalance per leaf, judged by fabric.ecmp over the window's samples.

    fabric.ecmp's sustain time holds as it is: a shorter history cannot tell a hash collision from a
    burst, so a diagnosis right after a few seconds of collection does not judge ECMP at all.
    """
    by_leaf: dict[str, list[UplinkSeries]] = defaultdict(list)
    spine_of = {(link.a.host, link.a.port): link.b.host for link in ctx.data.graph.uplinks()}
    for (leaf, port), (ts, gbps) in sorted(ctx.data.uplink_tx_gbps.items()):
        spine = spine_of.get((leaf, port), "")
        by_leaf[leaf].append(UplinkSeries(port, spine, _speed_gbps(ctx, leaf, port), ts, gbps))
    found = []
    for leaf, uplinks in sorted(by_leaf.items()):
        balance = assess_leaf(leaf, uplinks, ctx.t.ecmp, ctx.jobs_behind(leaf))
        if not balance.flagged:
            continue
        found.append(Finding(
            "ecmp_imbalance", Severity.WARNING, switch=leaf, port=balance.hot_port,
            job=",".join(balance.jobs),
            evidence={"imbalance_max_over_mean": round(balance.imbalance, 3),
                      "hot_spine": balance.hot_spine, "hot_util_pct": round(balance.hot_util_pct, 1),
                      "spread_gbps": round(balance.spread_gbps, 1),
                      "uplinks_tx_gbps": {u.port: round(u.tx_gbps, 1) for u in balance.uplinks}},
            next_step="Flows collide on one spine uplink. Least disruptive first: more QPs per connection "
                      "(NCCL_IB_QPS_PER_CONNECTION) for the next job, then more hash fields, a new hash seed, "
                      "adaptive routing (`fleet ecmp` plans and applies these)."))
    return found


def _speed_gbps(ctx: Context, switch: str, port: str) -> float:
    """Port speed from the switch's own utilization (util = max(rx, tx) / speed), else the fleet's rate."""
    util = ctx.value(switch, "sw_util_pct", port)
    busiest = max(ctx.value(switch, "sw_tx_gbps", port) or 0.0, ctx.value(switch, "sw_rx_gbps", port) or 0.0)
    if util and util > 1.0 and busiest > 0:
        return round(busiest * 100.0 / util)
    return ctx.expected_rate_gbps() or 0.0
