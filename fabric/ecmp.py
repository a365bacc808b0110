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

Throughput in Gb/s, utilization in percent of the port speed, times in unix
seconds. No I/O: the series come from the store or from a fresh poll.
"""

from __future__ import annotations

import itertools
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
    spread_gbps: float
    hot_port: str
    hot_spine: str
    hot_util_pct: float
    imbalanced_now: bool
    held_s: float
    flagged: bool
    samples: int
    window_s: float
    jobs: tuple[str, ...] = ()
    reason: str = ""

    def as_json(self) -> dict[str, object]:
        return {
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


def assess_leaf(leaf: str, uplinks: Sequence[UplinkSeries], thresholds: EcmpThresholds,
                jobs: Sequence[str] = ()) -> LeafBalance:
    """The balance of ``leaf``'s ECMP group over the samples given.

    Samples are matched across uplinks by timestamp (one switch poll stamps
    every port alike); a timestamp some uplink lacks is skipped.
    """
    members = [u for u in uplinks if u.speed_gbps > 0]
    if len(members) < 2:
        return _empty(leaf, members, "fewer than two uplinks with a known speed: no ECMP group to balance")
    by_port = [dict(zip(u.ts, u.tx_gbps, strict=True)) for u in members]
    common = sorted(set.intersection(*(set(d) for d in by_port)))
    if not common:
        return _empty(leaf, members, "no sample time common to every uplink")
    loads = [UplinkLoad(u.port, u.spine, u.speed_gbps, m := statistics.fmean(d[t] for t in common),
                        100.0 * m / u.speed_gbps)
             for u, d in zip(members, by_port, strict=True)]
    mean_loads = [u.tx_gbps for u in loads]
    hot = max(loads, key=lambda u: (u.util_pct, u.port))
    flags = [_imbalanced([d[t] for d in by_port], [100.0 * d[t] / u.speed_gbps for u, d in zip(members, by_port,
                                                                                              strict=True)],
                         thresholds) for t in common]
    held_s = _held_s(common, flags)
    now = _imbalanced(mean_loads, [u.util_pct for u in loads], thresholds)
    flagged = now and held_s >= thresholds.sustain_s and flags[-1]
    ratio = imbalance_of(mean_loads)
    if flagged:
        reason = (f"{hot.port} to {hot.spine} at {hot.util_pct:.0f}% while the group averages "
                  f"{statistics.fmean(mean_loads):.0f} Gb/s: max/mean {ratio:.2f} >= "
                  f"{thresholds.imbalance_ratio:g} for {held_s:.0f} s")
    elif now:
        reason = f"imbalanced for {held_s:.0f} s, not yet the {thresholds.sustain_s:g} s that flags it"
    elif statistics.fmean(mean_loads) < thresholds.min_mean_gbps:
        reason = "idle"
    elif ratio < thresholds.imbalance_ratio:
        reason = f"balanced: max/mean {ratio:.2f} < {thresholds.imbalance_ratio:g}"
    else:
        reason = (f"uneven (max/mean {ratio:.2f}) but the hottest uplink is at {hot.util_pct:.0f}% "
                  f"< {thresholds.hot_util_pct:g}%: no flow is squeezed")
    return LeafBalance(leaf, tuple(loads), ratio, max(mean_loads) - min(mean_loads), hot.port, hot.spine,
                       hot.util_pct, now, held_s, flagged, len(common), common[-1] - common[0],
                       tuple(jobs), reason)


def _held_s(ts: Sequence[float], flags: Sequence[bool]) -> float:
    """Seconds the newest run of True flags covers, counting one sample interval for the first sample."""
    if not flags or not flags[-1]:
        return 0.0
    start = len(flags) - 1
    while start > 0 and flags[start - 1]:
        start -= 1
    interval = statistics.median([b - a for a, b in itertools.pairwise(ts)]) if len(ts) > 1 else 0.0
    return ts[-1] - ts[start] + interval


def _empty(leaf: str, members: Sequence[UplinkSeries], reason: str) -> LeafBalance:
    loads = tuple(UplinkLoad(u.port, u.spine, u.speed_gbps, 0.0, 0.0) for u in members)
    return LeafBalance(leaf, loads, 0.0, 0.0, "", "", 0.0, False, 0.0, False, 0, 0.0, (), reason)


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

    Kept when the group is no longer imbalanced with a hot uplink (the
    threshold), or when max/mean fell by at least ``margin`` (a fraction of
    the before value).
    """
    if after.samples == 0:
        return False, f"no uplink samples after the change ({after.reason})"
    if not after.imbalanced_now:
        return True, (f"below the threshold: max/mean {before.imbalance:.2f} -> {after.imbalance:.2f}, "
                      f"hottest uplink {before.hot_util_pct:.0f}% -> {after.hot_util_pct:.0f}% "
                      f"(flagged at >= {thresholds.imbalance_ratio:g} with >= {thresholds.hot_util_pct:g}%)")
    if before.imbalance > 0 and after.imbalance <= before.imbalance * (1 - margin):
        return True, (f"max/mean fell by {100 * (1 - after.imbalance / before.imbalance):.0f}% "
                      f"({before.imbalance:.2f} -> {after.imbalance:.2f}), at least the {100 * margin:.0f}% margin")
    return False, (f"still imbalanced: max/mean {before.imbalance:.2f} -> {after.imbalance:.2f}, "
                   f"hottest uplink {after.hot_port} at {after.hot_util_pct:.0f}%")

