"""ECMP balance of a leaf's spine uplinks, from switch port throughput.

A leaf hashes every flow that leaves its rack onto one member of its ECMP
group (one uplink per spine). RoCEv2 flows carry little entropy (one UDP
source port per QP pair, docs/domain.md "ECMP on RoCE fabrics"), so a few elephant
flows can share one uplink while others idle: cross-rack bandwidth then drops
for every job on the leaf.

What counts as a problem, and why (defaults of :class:`EcmpThresholds`):

- ``imbalance = max / mean`` of the uplinks' transmit throughput. A perfectly
  balanced group is 1.0; one uplink carrying everything in a 4-way group is
  4.0. Hashing a handful of flows is never perfectly even (8 flows on 4 links
  land 3/2/2/1 or worse most of the time, max/mean 1.5), so the ratio alone
  would flag nearly every leaf; 1.5 is the smallest ratio that means "one
  member carries half again its share".
- The hot uplink must also be near line rate (``hot_util_pct`` 90 %): only
  then does the imbalance cost bandwidth (flows on it are squeezed while other
  members have room). Operators report balanced fabrics at ~80 % utilization,
  so 90 % on one member while the mean is far lower is the collision pattern
  they describe ("cross-rack bandwidth down 20 %"; docs/domain.md, "What
  operators report").
- Sustained for ``sustain_s`` (60 s): a hash collision lasts as long as the
  flows do (a training job runs for hours), while a burst of a checkpoint
  write or an all-to-all phase passes in seconds; a minute of samples keeps
  such bursts from flagging a leaf.

A collision is a different state from a squeeze (``state`` "collision", a
warning at any load): the flows sit on fewer uplinks than a hash would put
them by chance. At 45 % load every flow on one of four uplinks squeezes
nobody yet, but it is a latent fault: the next job, or the next checkpoint
burst, is squeezed at once. The flows are not visible in switch counters, so
they are estimated: a flow's rate is what a NIC on the leaf sends per
connection (``flow_gbps``: its transmit rate over half its RoCE QPs, as NCCL
opens one QP to the next and one from the previous rank per channel), and
each uplink carries its throughput over that rate. Then

- ``chance_p``: the probability that a uniform hash of that many flows onto
  that many uplinks puts at least as many on one uplink (exact, see
  :func:`max_load_chance`); below ``CHANCE_LEVEL`` the concentration is not
  luck but a collision;
- ``collision_rate``: the flows above an even share (ceil(flows / uplinks))
  on their uplink, over all flows: the share that would have to move. The
  operators' target is a collision rate under ``COLLISION_TARGET`` (0.5 %,
  topology-aware routing at 10k-GPU scale).

Without a flow estimate (no QP counts from the nodes) an uneven group is
``uneven``, a warning that says the flows are unknown.

Throughput in Gb/s, utilization in percent of the port speed, times in unix
seconds. No I/O: the series come from the store or from a fresh poll.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from fleet.fabric.records import JobRecord


@dataclass(frozen=True, slots=True)
class EcmpThresholds:
    """When a leaf's uplink imbalance is flagged (see the module docstring for the defaults)."""

    imbalance_ratio: float = 1.5
    """max / mean of the uplinks' transmit throughput at or above which a sample is imbalanced."""
    hot_util_pct: float = 90.0
    """The hottest uplink must be at least this busy (percent of line rate) for the imbalance to matter."""
    sustain_s: float = 60.0
    """The condition must hold at every sample for this long to flag the leaf."""
    min_mean_gbps: float = 1.0
    """A group carrying less than this on average is idle, never imbalanced."""


COLLISION_TARGET = 0.005
"""The operators' target for the ECMP collision rate (fraction of flows)."""
CHANCE_LEVEL = 0.01
"""A concentration a uniform hash gives less often than this is a collision, not luck."""

NO_DATA, IDLE, OK, UNEVEN, COLLISION, SQUEEZED = "no data", "idle", "ok", "uneven", "collision", "squeezed"
STATES = (NO_DATA, IDLE, OK, UNEVEN, COLLISION, SQUEEZED)
"""A leaf's balance state, least to most urgent; ``uneven`` and ``collision`` are warnings, ``squeezed``
(imbalanced with a hot uplink, sustained: ``flagged``) is the one that costs bandwidth now."""
ACTIONABLE = frozenset({UNEVEN, COLLISION, SQUEEZED})
"""States a remedy is for: ``fleet ecmp apply`` refuses any other without ``--force``."""


def ecmp_thresholds(window_s: float, sustain_s: float | None = None, *, ratio: float | None = None,
                    hot_util_pct: float | None = None) -> EcmpThresholds:
    """The thresholds for a window: the sustain time is at most the window (one rule for CLI and console)."""
    base = EcmpThresholds()
    sustain = base.sustain_s if sustain_s is None else sustain_s
    return EcmpThresholds(imbalance_ratio=base.imbalance_ratio if ratio is None else ratio,
                          hot_util_pct=base.hot_util_pct if hot_util_pct is None else hot_util_pct,
                          sustain_s=min(sustain, window_s), min_mean_gbps=base.min_mean_gbps)


@dataclass(frozen=True, slots=True)
class UplinkSeries:
    """Transmit throughput of one leaf uplink (ECMP member) over a window."""

    port: str
    spine: str
    speed_gbps: float
    ts: tuple[float, ...]
    tx_gbps: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class UplinkLoad:
    """One ECMP member over the window: mean transmit throughput and utilization."""

    port: str
    spine: str
    speed_gbps: float
    tx_gbps: float
    util_pct: float


@dataclass(frozen=True, slots=True)
class LeafBalance:
    """How evenly a leaf spreads its cross-rack traffic over its spine uplinks.

    ``imbalance`` and ``spread_gbps`` (max - min) are over the window's mean
    throughput per uplink; ``held_s`` is how long, up to the newest sample,
    every sample was imbalanced with a hot uplink; ``flagged`` when that is at
    least the threshold's ``sustain_s``. ``jobs``: the jobs whose flows the
    leaf hashes over its uplinks (nodes on the leaf and elsewhere): the hash
    is the switch's secret, so these are the jobs that can have flows on the
    hot uplink.
    """

    leaf: str
    uplinks: tuple[UplinkLoad, ...]
    imbalance: float
    """max/mean of the uplinks' throughput; 0.0 when the group is idle or has no data."""
    spread_gbps: float
    hot_port: str
    hot_spine: str
    hot_util_pct: float
    imbalanced_now: bool
    held_s: float
    flagged: bool
    """Squeezed: imbalanced with a hot uplink for ``sustain_s`` (the urgent state)."""
    samples: int
    window_s: float
    jobs: tuple[str, ...] = ()
    reason: str = ""
    state: str = NO_DATA
    """One of ``STATES``."""
    flow_gbps: float | None = None
    """Estimated rate of one flow (Gb/s); None: unknown."""
    flows: tuple[int, ...] = ()
    """Estimated flows per uplink, in ``uplinks`` order; () when unknown."""
    collision_rate: float | None = None
    """Flows above an even share over all flows (0-1); None when the flows are unknown."""
    chance_p: float | None = None
    """Probability that a uniform hash puts at least this many flows on one uplink."""

    @property
    def actionable(self) -> bool:
        """Whether a remedy is for this state (see ``ACTIONABLE``)."""
        return self.state in ACTIONABLE

    @property
    def warning(self) -> bool:
        return self.state in (UNEVEN, COLLISION)

    def collision_words(self) -> str:
        """``collision rate 75.0 % of ~8 flows (target < 0.5 %)``, or "" when the flows are unknown."""
        if self.collision_rate is None:
            return ""
        return (f"collision rate {100 * self.collision_rate:.1f} % of ~{sum(self.flows)} flows "
                f"(target < {100 * COLLISION_TARGET:g} %)")

    def as_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "actionable": self.actionable,
            "flow_gbps": None if self.flow_gbps is None else round(self.flow_gbps, 3),
            "flows": list(self.flows),
            "collision_rate": None if self.collision_rate is None else round(self.collision_rate, 4),
            "collision_target": COLLISION_TARGET,
            "chance_p": None if self.chance_p is None else float(f"{self.chance_p:.3g}"),
            "leaf": self.leaf,
            "uplinks": [
                {"port": u.port, "spine": u.spine, "speed_gbps": u.speed_gbps,
                 "tx_gbps": round(u.tx_gbps, 3), "util_pct": round(u.util_pct, 2)}
                for u in self.uplinks
            ],
            "imbalance": round(self.imbalance, 3),
            "spread_gbps": round(self.spread_gbps, 3),
            "hot_port": self.hot_port,
            "hot_spine": self.hot_spine,
            "hot_util_pct": round(self.hot_util_pct, 2),
            "imbalanced_now": self.imbalanced_now,
            "held_s": round(self.held_s, 2),
            "flagged": self.flagged,
            "samples": self.samples,
            "window_s": round(self.window_s, 2),
            "jobs": list(self.jobs),
            "reason": self.reason,
        }


def imbalance_of(loads_gbps: Sequence[float]) -> float:
    """max / mean of the members' throughput (1.0 = even; 0.0 when the group is idle)."""
    if not loads_gbps:
        return 0.0
    mean = sum(loads_gbps) / len(loads_gbps)
    return max(loads_gbps) / mean if mean > 0 else 0.0


def _imbalanced(loads_gbps: Sequence[float], utils_pct: Sequence[float], thresholds: EcmpThresholds) -> bool:
    mean = sum(loads_gbps) / len(loads_gbps)
    return (mean >= thresholds.min_mean_gbps
            and imbalance_of(loads_gbps) >= thresholds.imbalance_ratio
            and max(utils_pct) >= thresholds.hot_util_pct)


def max_load_chance(flows: int, bins: int, at_least: int) -> float:
    """Probability that ``flows`` flows hashed uniformly onto ``bins`` uplinks put ``at_least`` or more
    on some uplink. Exact: one minus the chance that no uplink gets that many, counted uplink by
    uplink (the flows still unplaced split binomially between this uplink and the ones left)."""
    if at_least <= 0 or bins <= 1:
        return 1.0
    if at_least > flows:
        return 0.0
    cap = at_least - 1
    placed = [1.0] + [0.0] * flows  # placed[k]: chance the uplinks so far took k flows, none more than cap
    for left_bins in range(bins, 0, -1):
        p = 1.0 / left_bins
        step = [0.0] * (flows + 1)
        for k, weight in enumerate(placed):
            if weight == 0.0:
                continue
            rest = flows - k
            for j in range(min(cap, rest) + 1):
                chance = math.comb(rest, j) * p**j * (1 - p) ** (rest - j) if left_bins > 1 else float(j == rest)
                step[k + j] += weight * chance
        placed = step
    return min(1.0, max(0.0, 1.0 - placed[flows]))


def flows_on(loads_gbps: Sequence[float], flow_gbps: float) -> tuple[int, ...]:
    """Estimated flows per uplink: throughput over one flow's rate, rounded; an uplink carrying at
    least half a flow's rate carries at least one."""
    return tuple(max(1, round(g / flow_gbps)) if g >= flow_gbps / 2 else 0 for g in loads_gbps)


def collision_rate(flows: Sequence[int]) -> float:
    """Flows above an even share (ceil(total / uplinks)) on their uplink, over all flows (0-1)."""
    total = sum(flows)
    if not total or not flows:
        return 0.0
    even = math.ceil(total / len(flows))
    return sum(max(0, n - even) for n in flows) / total


def assess_leaf(leaf: str, uplinks: Sequence[UplinkSeries], thresholds: EcmpThresholds,
                jobs: Sequence[str] = (), flow_gbps: float | None = None) -> LeafBalance:
    """The balance of ``leaf``'s ECMP group over the samples given (see the module doc for the states).

    Samples are matched across uplinks by timestamp (one switch poll stamps
    every port alike); a timestamp some uplink lacks is skipped. ``flow_gbps``:
    the estimated rate of one flow (None: unknown, no collision estimate).
    """
    members = list(uplinks)
    if len(members) < 2:
        return _empty(leaf, members, "fewer than two uplinks: no ECMP group to balance", jobs)
    by_port = [dict(zip(u.ts, u.tx_gbps, strict=True)) for u in members]
    common = sorted(set.intersection(*(set(d) for d in by_port)))
    if not common:
        return _empty(leaf, members, "no sample time common to every uplink", jobs)
    loads = [UplinkLoad(u.port, u.spine, u.speed_gbps, m := statistics.fmean(d[t] for t in common),
                        _util(m, u.speed_gbps))
             for u, d in zip(members, by_port, strict=True)]
    mean_loads = [u.tx_gbps for u in loads]
    hot = max(loads, key=lambda u: (u.util_pct, u.port))
    mean = statistics.fmean(mean_loads)
    samples, window, spread_gbps = len(common), common[-1] - common[0], max(mean_loads) - min(mean_loads)
    if mean < thresholds.min_mean_gbps:
        return LeafBalance(leaf, tuple(loads), 0.0, spread_gbps, hot.port, hot.spine, hot.util_pct, False, 0.0,
                           False, samples, window, tuple(jobs),
                           f"idle: the uplinks carry {mean:.2f} Gb/s on average (< {thresholds.min_mean_gbps:g})",
                           IDLE, flow_gbps)
    if any(u.speed_gbps <= 0 for u in members):
        return _empty(leaf, members, "the speed of an uplink that carries traffic is unknown", jobs)
    flags = [_imbalanced([d[t] for d in by_port], [_util(d[t], u.speed_gbps) for u, d in zip(members, by_port,
                                                                                            strict=True)],
                         thresholds) for t in common]
    held_s = _held_s(common, flags)
    now = _imbalanced(mean_loads, [u.util_pct for u in loads], thresholds)
    flagged = now and held_s >= thresholds.sustain_s and flags[-1]
    ratio = imbalance_of(mean_loads)
    flows: tuple[int, ...] = ()
    rate: float | None = None
    chance: float | None = None
    if flow_gbps is not None and flow_gbps > 0:
        flows = flows_on(mean_loads, flow_gbps)
        rate = collision_rate(flows)
        chance = max_load_chance(sum(flows), len(flows), max(flows)) if sum(flows) > 1 else 1.0
    spread = f"{sum(flows)} flows on {sum(1 for n in flows if n)} of {len(flows)} uplinks" if flows else ""
    if flagged:
        state = SQUEEZED
        reason = (f"{hot.port} to {hot.spine} at {hot.util_pct:.0f}% while the group averages "
                  f"{mean:.0f} Gb/s: max/mean {ratio:.2f} >= {thresholds.imbalance_ratio:g} for {held_s:.0f} s")
    elif rate is not None and chance is not None and chance < CHANCE_LEVEL and rate > COLLISION_TARGET:
        state = COLLISION
        reason = f"~{spread} ({'/'.join(map(str, flows))}): a uniform hash does that {_odds(chance)}"
    elif now:
        state = UNEVEN if rate is None else OK
        reason = f"imbalanced for {held_s:.0f} s, not yet the {thresholds.sustain_s:g} s that flags it"
    elif ratio < thresholds.imbalance_ratio:
        state = OK
        reason = f"balanced: max/mean {ratio:.2f} < {thresholds.imbalance_ratio:g}"
    elif rate is None:
        state = UNEVEN
        reason = (f"uneven (max/mean {ratio:.2f}), the hottest uplink at {hot.util_pct:.0f}% squeezes no flow yet; "
                  "the flows are unknown (no QP counts from the nodes), so a collision cannot be told from luck")
    else:
        state = OK
        reason = (f"uneven (max/mean {ratio:.2f}) as a hash of ~{spread} is by chance ({_odds(chance or 1.0)}); "
                  f"the hottest uplink at {hot.util_pct:.0f}% squeezes no flow")
    return LeafBalance(leaf, tuple(loads), ratio, spread_gbps, hot.port, hot.spine, hot.util_pct, now, held_s,
                       flagged, samples, window, tuple(jobs), reason, state, flow_gbps, flows, rate, chance)


def _util(gbps: float, speed_gbps: float) -> float:
    """Percent of the port's speed; 0 when the speed is unknown (an idle port reports none)."""
    return 100.0 * gbps / speed_gbps if speed_gbps > 0 else 0.0


def _odds(chance: float) -> str:
    """``1 time in 16,384`` / ``3 times in 10``: how often a uniform hash would do this."""
    if chance >= 0.95:
        return "almost always"
    if chance >= 0.15:
        return f"{round(10 * chance)} times in 10"
    return f"1 time in {round(1 / chance):,}" if chance > 0 else "never"


def _held_s(ts: Sequence[float], flags: Sequence[bool]) -> float:
    """Seconds the newest run of True flags covers, counting one sample interval for the first sample."""
    if not flags or not flags[-1]:
        return 0.0
    start = len(flags) - 1
    while start > 0 and flags[start - 1]:
        start -= 1
    interval = statistics.median([b - a for a, b in itertools.pairwise(ts)]) if len(ts) > 1 else 0.0
    return ts[-1] - ts[start] + interval


def _empty(leaf: str, members: Sequence[UplinkSeries], reason: str, jobs: Sequence[str]) -> LeafBalance:
    loads = tuple(UplinkLoad(u.port, u.spine, u.speed_gbps, 0.0, 0.0) for u in members)
    return LeafBalance(leaf, loads, 0.0, 0.0, "", "", 0.0, False, 0.0, False, 0, 0.0, tuple(jobs),
                       f"no data: {reason}", NO_DATA)


def jobs_across(leaf_nodes: Collection[str], jobs: Sequence[JobRecord]) -> tuple[str, ...]:
    """Jobs with nodes on the leaf and elsewhere: their flows leave the rack through the ECMP group."""
    on_leaf = set(leaf_nodes)
    return tuple(sorted(
        j.job_id for j in jobs
        if any(n in on_leaf for n in j.nodes) and any(n not in on_leaf for n in j.nodes)
    ))


def improved(before: LeafBalance, after: LeafBalance, thresholds: EcmpThresholds,
             margin: float) -> tuple[bool, str]:
    """Whether ``after`` is good enough to keep a change, and why, in words.

    Kept when the group is neither squeezed (imbalanced with a hot uplink) nor
    in collision after the change, or when the number that was bad before fell
    by at least ``margin`` (a fraction of the before value): max/mean for a
    squeeze, the collision rate for a collision. Never kept on an idle group:
    with no traffic nothing shows that the change helped.
    """
    if after.state in (NO_DATA, IDLE):
        return False, f"nothing to judge after the change: {after.reason}"
    if not after.imbalanced_now and after.state != COLLISION:
        words = (f"max/mean {before.imbalance:.2f} -> {after.imbalance:.2f}, hottest uplink "
                 f"{before.hot_util_pct:.0f}% -> {after.hot_util_pct:.0f}%")
        if before.collision_rate is not None and after.collision_rate is not None:
            words += f", collision rate {100 * before.collision_rate:.1f} % -> {100 * after.collision_rate:.1f} %"
        return True, (f"below the thresholds: {words} (squeezed at >= {thresholds.imbalance_ratio:g} with >= "
                      f"{thresholds.hot_util_pct:g}%; a collision when a uniform hash would do it less than "
                      f"{100 * CHANCE_LEVEL:g} % of the time)")
    if before.state == COLLISION and before.collision_rate and after.collision_rate is not None \
            and after.collision_rate <= before.collision_rate * (1 - margin):
        return True, (f"collision rate fell by {100 * (1 - after.collision_rate / before.collision_rate):.0f}% "
                      f"({100 * before.collision_rate:.1f} % -> {100 * after.collision_rate:.1f} %), at least the "
                      f"{100 * margin:.0f}% margin")
    if before.state != COLLISION and before.imbalance > 0 and after.imbalance <= before.imbalance * (1 - margin):
        return True, (f"max/mean fell by {100 * (1 - after.imbalance / before.imbalance):.0f}% "
                      f"({before.imbalance:.2f} -> {after.imbalance:.2f}), at least the {100 * margin:.0f}% margin")
    if after.state == COLLISION:
        return False, f"still a collision: {after.reason}"
    return False, (f"still imbalanced: max/mean {before.imbalance:.2f} -> {after.imbalance:.2f}, "
                   f"hottest uplink {after.hot_port} at {after.hot_util_pct:.0f}%")
