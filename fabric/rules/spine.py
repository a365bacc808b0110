"""spine_loss: packets lost inside one spine, from three independent signals.

1. The spine's own drop counters, when it counts them: drops concentrated on
   one spine's ports.
2. Silent loss (a bad line card drops without counting): RoCE's reliable
   connections retransmit go-back-N, and each loss costs the *sender* one NAK
   sequence error (``packet_seq_err``, the receiver's NAK) or, when the lost
   packet was the last in flight, one ACK timeout (``local_ack_timeout_err``).
   The receiver's ``out_of_sequence`` counts every packet that arrived behind
   the gap (a window's worth per loss), so it measures loss times the
   in-flight window, not lost packets. Summed per leaf, the senders' loss
   events follow the traffic that leaf sent through each spine if one spine
   loses a fixed share of what crosses it:
   ``lost[leaf] = ratio x packets(leaf -> spine)``. ECMP spreads the leaves'
   traffic unevenly over the spines, so only the bad spine's traffic pattern
   fits the loss pattern. The spine whose one-number fit explains most of the
   loss, clearly better than any other spine, is named, with the loss ratio
   the fit gives.
3. A link test that localized bad probes to one spine (fabric.localize).

NICs an earlier rule already explained (a storm, a bad cable) are left out of
2, and so are the senders on the same rail of their jobs (NCCL's rings stay on
their rail): their loss has its own cause.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import Context, rounded

FIT_MARGIN = 2.0
"""The runner-up spine must leave at least twice the unexplained loss of the best one: with an even
spread of traffic every spine fits alike, and then none can be named from counters."""


def rules(ctx: Context) -> list[Finding]:
    found = _counted_drops(ctx)
    named = {f.switch for f in found}
    found += [f for f in _silent_loss(ctx) if f.switch not in named]
    named |= {f.switch for f in found}
    found += [f for f in _linktest(ctx) if f.switch not in named]
    return found


def _next_step(spine: str) -> str:
    return (f"Take {spine} out of the ECMP groups (shut its uplinks or raise their cost) and check its "
            "line cards and fabric ASIC counters; confirm with `fleet linktest --mode rail` that pairs "
            "through it recover.")


def _counted_drops(ctx: Context) -> list[Finding]:
    drops: dict[str, float] = defaultdict(float)
    for metric in ("sw_rx_drops", "sw_tx_drops"):
        for host, device, port in ctx.each(metric):
            if ctx.role(host) == "spine":
                drops[host] += ctx.delta(host, metric, device, port) or 0.0
    total = sum(drops.values())
    found = []
    for spine, count in sorted(drops.items()):
        if count >= ctx.t.spine_drops_min and count >= ctx.t.spine_drops_share_min * total:
            found.append(Finding("spine_loss", Severity.CRITICAL, switch=spine,
                                 evidence={"drops_in_window": count, "share_of_spine_drops": round(count / total, 3)},
                                 next_step=_next_step(spine)))
    return found


LOSS_EVENT_COUNTERS = ("packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err")
"""A sender's counters of retransmission episodes: under go-back-N one per lost packet."""


def _silent_loss(ctx: Context) -> list[Finding]:
    lost, lost_total = _lost_per_leaf(ctx)
    if lost_total < ctx.t.spine_lost_packets_min:
        return []
    sent = _packets_leaf_to_spine(ctx)
    spines = sorted({spine for spine, _ in sent})
    leaves = sorted({leaf for _, leaf in sent} | set(lost))
    if len(spines) < 2 or len(leaves) < 2:
        return []
    y = [lost.get(leaf, 0.0) for leaf in leaves]
    norm = sum(v * v for v in y)
    fits = []
    for spine in spines:
        x = [sent.get((spine, leaf), 0.0) for leaf in leaves]
        xx = sum(v * v for v in x)
        if xx <= 0:
            continue
        ratio = sum(a * b for a, b in zip(x, y, strict=True)) / xx
        residual = sum((b - ratio * a) ** 2 for a, b in zip(x, y, strict=True))
        fits.append((residual / norm, ratio, spine))
    if len(fits) < 2:
        return []
    fits.sort()
    (unexplained, ratio, spine), (runner_up, _, _) = fits[0], fits[1]
    if (1.0 - unexplained < ctx.t.spine_fit_explained_min or ratio < ctx.t.spine_loss_ratio_min
            or runner_up < FIT_MARGIN * unexplained):
        return []
    return [Finding(
        "spine_loss", Severity.CRITICAL, switch=spine,
        evidence={"estimated_loss_ratio": rounded(ratio), "explained_share": round(1.0 - unexplained, 3),
                  "runner_up_explained_share": round(1.0 - runner_up, 3),
                  "lost_packets_in_window": lost_total, "lost_packets_per_s": rounded(sum(y)),
                  "out_of_sequence_in_window": _out_of_sequence(ctx),
                  "leaves_with_loss": sum(1 for v in y if v > 0)},
        next_step=_next_step(spine))]


def _lost_per_leaf(ctx: Context) -> tuple[Mapping[str, float], float]:
    """Packets lost per second for the senders behind each leaf, and the packets lost over the window in all.

    Rates, not increases: node and switch counters are read at different moments and over different
    spans, and only per-second figures compare across them.
    """
    lost: dict[str, float] = defaultdict(float)
    total = 0.0
    senders = {(node, nic, port) for metric in LOSS_EVENT_COUNTERS for node, nic, port in ctx.each(metric)}
    troubled_rails = {(ctx.job_of[node], nic) for node, nic in ctx.flagged_nics if node in ctx.job_of}
    for node, nic, port in sorted(senders):
        if (node, nic) in ctx.flagged_nics or (ctx.job_of.get(node, ""), nic) in troubled_rails:
            continue  # NCCL's rings stay on their rail: this sender loses what a broken peer on it drops
        leaf, _ = ctx.switch_end(node, nic)
        per_s = sum(ctx.rate(node, m, nic, port) or 0.0 for m in LOSS_EVENT_COUNTERS)
        if leaf and per_s:
            lost[leaf] += per_s
            total += sum(ctx.delta(node, m, nic, port) or 0.0 for m in LOSS_EVENT_COUNTERS)
    return lost, total


def _out_of_sequence(ctx: Context) -> float:
    """Packets receivers dropped behind a gap, over the window: evidence of go-back-N at work, not lost packets."""
    return sum(ctx.delta(node, "out_of_sequence", nic, port) or 0.0
               for node, nic, port in ctx.each("out_of_sequence") if (node, nic) not in ctx.flagged_nics)


def _packets_leaf_to_spine(ctx: Context) -> Mapping[tuple[str, str], float]:
    """Packets per second each leaf sent through each spine over the window, keyed (spine, leaf): the leaf's
    transmit bytes on its uplink to the spine, else the spine's receive bytes on its port facing the leaf."""
    sent: dict[tuple[str, str], float] = defaultdict(float)
    for link in ctx.data.graph.uplinks():
        leaf, spine = link.a, link.b
        octets = ctx.rate(leaf.host, "sw_tx_bytes", leaf.port)
        if octets is None:
            octets = ctx.rate(spine.host, "sw_rx_bytes", spine.port)
        if octets:
            sent[(spine.host, leaf.host)] += octets / ctx.t.roce_mtu_bytes
    return sent


def _linktest(ctx: Context) -> list[Finding]:
    found: dict[str, Finding] = {}
    for probe in ctx.data.probes:
        if probe.kind != "linktest":
            continue
        for suspect in probe.result.get("suspects", []):
            part = str(suspect.get("part", ""))
            if suspect.get("kind") != "spine" or ctx.role(part) != "spine" or part in found:
                continue
            found[part] = Finding(
                "spine_loss", Severity.CRITICAL, switch=part,
                evidence={"bad_probes": suspect.get("bad"), "probes_through_spine": suspect.get("total"),
                          "linktest_run": probe.run_id},
                next_step=_next_step(part))
    return list(found.values())
