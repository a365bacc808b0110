"""A baseline: the fleet's shape, software and every part's measured numbers at one moment, and the diff of two.

Why: "did anything get worse since last month?" needs last month's numbers
kept per part (a pair of NICs on a rail, a NIC, a node, the fleet) with the
fleet's shape and software versions, so a regression can be pinned to the
part and to what changed (a firmware update, a re-cabled port).

Parts are named ``kind/name...`` (see :func:`part_id`):

- ``pair/<rail>/<src>/<dst>``: a link-test pair on one rail: ``p99_usec``, ``p999_usec``;
- ``nic/<node>/<mlx5_N>``: ``lat_p99_usec`` (median of the NIC's link-test pairs),
  ``bw_avg_gbps`` (perftest bandwidth), ``rx_power_dbm`` (weakest lane),
  ``errors``, ``lost`` (packets lost or dropped) and ``packets`` (counter deltas over the suite),
  ``rate_gbps``;
- ``node/<node>``: ``allreduce_busbw_gbytes_s``, ``allreduce_efficiency``,
  ``allreduce_reference_gbytes_s`` (single node, NVLink); ``alltoall_busbw_gbytes_s``,
  ``alltoall_efficiency``, ``alltoall_theoretical_gbytes_s`` (``fleet.fabric.alltoall``);
  ``nvlink_errors`` (NVLink CRC, replay and recovery errors of its GPUs, as counted when the suite ran);
- ``fleet/allreduce``, ``fleet/alltoall``: the same across every node; the all-to-all also
  ``alltoall_rail<r>_busbw_gbytes_s``, each rail's figure with one GPU per node;
- ``fleet/ep``: the expert-parallel benchmark's ``ep_<dispatch_fp8|dispatch_bf16|combine>_<rdma|nvl>_gbytes_s``.

Units are in the metric names (usec, gbps = Gbit/s, gbytes_s = GB/s, dBm).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

BASELINE_FORMAT = 1
"""Version of :meth:`Baseline.to_json`'s layout; bumped when it changes incompatibly."""

PART_KINDS = ("pair", "nic", "node", "fleet")


def part_id(kind: str, *names: str | int) -> str:
    """``part_id("nic", "gpu001", "mlx5_0")`` -> ``"nic/gpu001/mlx5_0"``."""
    if kind not in PART_KINDS:
        raise ValueError(f"unknown part kind {kind!r}")
    return "/".join([kind, *(str(n) for n in names)])


def split_part(part: str) -> tuple[str, tuple[str, ...]]:
    """``"nic/gpu001/mlx5_0"`` -> ``("nic", ("gpu001", "mlx5_0"))``."""
    kind, *names = part.split("/")
    return kind, tuple(names)


def part_nodes(part: str) -> tuple[str, ...]:
    """The nodes a part belongs to (both ends of a pair; none for the fleet)."""
    kind, names = split_part(part)
    if kind == "pair":
        return names[1:3]
    if kind in ("nic", "node"):
        return names[:1]
    return ()


def part_rail(part: str) -> int | None:
    """The rail of a pair or NIC part (``mlx5_N`` is rail N); None for nodes and the fleet."""
    kind, names = split_part(part)
    if kind == "pair" and names and names[0].isdigit():
        return int(names[0])
    if kind == "nic" and len(names) > 1 and names[1].rsplit("_", 1)[-1].isdigit():
        return int(names[1].rsplit("_", 1)[-1])
    return None


@dataclass(frozen=True, slots=True)
class FleetShape:
    """What the suite ran on: node names, their RDMA NICs (``node:mlx5_N``), the switches, the rails."""

    nodes: tuple[str, ...] = ()
    nics: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    rails: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes), "nics": list(self.nics), "switches": list(self.switches),
                "rails": list(self.rails)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FleetShape:
        return cls(tuple(data.get("nodes", ())), tuple(data.get("nics", ())), tuple(data.get("switches", ())),
                   tuple(int(r) for r in data.get("rails", ())))


@dataclass(frozen=True, slots=True)
class CableCheck:
    """One NIC's cable: where LLDP says it goes and where the cabling plan says (``switch port``; "" unknown)."""

    seen: str
    planned: str

    @property
    def matches(self) -> bool | None:
        """True/False when both are known; None when either is missing (nothing to compare)."""
        if not self.seen or not self.planned:
            return None
        return self.seen == self.planned


@dataclass(frozen=True, slots=True)
class Baseline:
    """Everything one run of the standard suite measured; see the module doc for parts and metrics."""

    label: str
    ts: float
    """Unix seconds when the suite started."""
    tool_version: str
    shape: FleetShape
    software: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """node -> {kernel, fw_mlx5_N, gpu_driver, gpu_model}, as the nodes report them."""
    parts: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    cabling: Mapping[str, CableCheck] = field(default_factory=dict)
    """``node:mlx5_N`` -> the cable as seen and as planned."""
    unreachable: Mapping[str, str] = field(default_factory=dict)
    """node -> why the suite could not measure it."""
    matrices: tuple[Mapping[str, Any], ...] = ()
    """The link test's p99 matrix per rail (``LinktestReport.matrix``), for the report's pingmesh charts."""
    notes: tuple[str, ...] = ()
    """Steps that failed or were skipped, in words."""
    configuration: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """part -> the RoCE, PCIe and driver settings the suite's ``fleet check`` read there
    (``fleet.fabric.roce_config.configuration_summary``); {} when it did not read them."""
    config_checks: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """check id -> ``{"pass": n, "warn": n, "fail": n, "failed": [{"part", "verdict", "expected", "found"}]}``:
    the suite's ``fleet check`` (``fleet.fabric.config_checks``); {} when it did not run."""

    def metric(self, part: str, name: str) -> float | None:
        value = self.parts.get(part, {}).get(name)
        return None if value is None else float(value)

    def values(self, kind: str, name: str) -> list[float]:
        """Every part of ``kind``'s ``name`` value (e.g. all NICs' ``bw_avg_gbps``), for distributions."""
        return [float(m[name]) for p, m in sorted(self.parts.items())
                if split_part(p)[0] == kind and m.get(name) is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": BASELINE_FORMAT,
            "label": self.label,
            "ts": self.ts,
            "tool_version": self.tool_version,
            "shape": self.shape.to_json(),
            "software": {n: dict(v) for n, v in sorted(self.software.items())},
            "parts": {p: dict(sorted(m.items())) for p, m in sorted(self.parts.items())},
            "cabling": {n: {"seen": c.seen, "planned": c.planned} for n, c in sorted(self.cabling.items())},
            "unreachable": dict(sorted(self.unreachable.items())),
            "matrices": [dict(m) for m in self.matrices],
            "notes": list(self.notes),
            "configuration": {p: dict(v) for p, v in sorted(self.configuration.items())},
            "config_checks": {c: dict(v) for c, v in sorted(self.config_checks.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Baseline:
        if data.get("format") != BASELINE_FORMAT:
            raise ValueError(f"baseline format {data.get('format')!r} is not {BASELINE_FORMAT}")
        return cls(
            label=str(data["label"]), ts=float(data["ts"]), tool_version=str(data.get("tool_version", "")),
            shape=FleetShape.from_json(data.get("shape", {})),
            software={n: dict(v) for n, v in data.get("software", {}).items()},
            parts={p: {k: float(v) for k, v in m.items()} for p, m in data.get("parts", {}).items()},
            cabling={n: CableCheck(c.get("seen", ""), c.get("planned", "")) for n, c in data.get("cabling", {}).items()},
            unreachable=dict(data.get("unreachable", {})),
            matrices=tuple(data.get("matrices", ())),
            notes=tuple(data.get("notes", ())),
            configuration={p: dict(v) for p, v in data.get("configuration", {}).items()},
            config_checks={c: dict(v) for c, v in data.get("config_checks", {}).items()},
        )  # fmt: skip


# --------------------------------------------------------------------------- the diff


class Rank(IntEnum):
    """Order of a change in the diff: worst first."""

    CRITICAL = 0
    WARNING = 1
    INFO = 2


@dataclass(frozen=True, slots=True)
class Threshold:
    """When a metric's change counts: worse/better by ``relative`` (fraction) or ``absolute`` (its unit).

    ``higher_is_better``: bandwidth, efficiency, light; else latency, errors.
    A change of ``critical_factor`` x the threshold or more is critical.
    """

    higher_is_better: bool
    relative: float | None = None
    absolute: float | None = None
    critical_factor: float = 3.0

    def limit(self, before: float) -> float:
        """The smallest change (in the metric's unit, >= 0) that counts."""
        if self.relative is not None:
            return abs(before) * self.relative
        return self.absolute or 0.0


DEFAULT_THRESHOLDS: Mapping[str, Threshold] = {
    "p99_usec": Threshold(higher_is_better=False, relative=0.10),
    "p999_usec": Threshold(higher_is_better=False, relative=0.20),
    "lat_p99_usec": Threshold(higher_is_better=False, relative=0.10),
    "bw_avg_gbps": Threshold(higher_is_better=True, relative=0.05),
    "allreduce_busbw_gbytes_s": Threshold(higher_is_better=True, relative=0.03),
    "allreduce_efficiency": Threshold(higher_is_better=True, relative=0.03),
    "alltoall_busbw_gbytes_s": Threshold(higher_is_better=True, relative=0.05),
    "alltoall_efficiency": Threshold(higher_is_better=True, relative=0.05),
    "nvlink_errors": Threshold(higher_is_better=False, absolute=0.0, critical_factor=1.0),
    **{f"ep_{kernel}_{link}_gbytes_s": Threshold(higher_is_better=True, relative=0.05)
       for kernel in ("dispatch_fp8", "dispatch_bf16", "combine") for link in ("rdma", "nvl")},
    "rx_power_dbm": Threshold(higher_is_better=True, absolute=2.0),
    "rate_gbps": Threshold(higher_is_better=True, relative=0.0, critical_factor=1.0),
    "errors": Threshold(higher_is_better=False, absolute=0.0, critical_factor=1.0),
}
"""Default thresholds: p99 latency +10 %, bandwidth -5 %, all-reduce -3 %, all-to-all and the expert-parallel
kernels -5 % (hashed flows vary more between runs than a ring), rx power -2 dB, any new errors (NVLink's too).
Metrics without a threshold (``packets``) are context, never a change."""


@dataclass(frozen=True, slots=True)
class Change:
    """One metric of one part that moved past its threshold."""

    part: str
    metric: str
    before: float
    after: float
    regression: bool
    rank: Rank
    excess: float
    """How many thresholds the change spans (1.0 = exactly at it); for ordering."""

    @property
    def delta(self) -> float:
        return self.after - self.before

    @property
    def delta_pct(self) -> float | None:
        """None for dBm (a logarithmic unit: the change in dB is the meaningful figure) and from zero."""
        if self.metric.endswith("_dbm") or not self.before:
            return None
        return 100.0 * self.delta / abs(self.before)

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "metric": self.metric, "before": self.before, "after": self.after,
                "delta": self.delta, "delta_pct": self.delta_pct,
                "direction": "regression" if self.regression else "improvement",
                "severity": self.rank.name.lower()}


@dataclass(frozen=True, slots=True)
class TextChange:
    """A software version or a cable that differs between the two baselines."""

    subject: str
    """``node`` key (``gpu001 fw_mlx5_0``) or ``node:mlx5_N`` for a cable."""
    before: str
    after: str
    rank: Rank

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "before": self.before, "after": self.after,
                "severity": self.rank.name.lower()}


@dataclass(frozen=True, slots=True)
class BaselineDiff:
    before: Baseline
    after: Baseline
    changes: tuple[Change, ...]
    """Regressions and improvements, worst first (critical, warning, info; then by excess)."""
    new_parts: tuple[str, ...]
    gone_parts: tuple[str, ...]
    lost_metrics: tuple[str, ...]
    """``part metric`` measured before but not now (a probe failed): as bad as a gone part."""
    software: tuple[TextChange, ...]
    cabling: tuple[TextChange, ...]
    configuration: tuple[TextChange, ...] = ()
    """Configuration drift: a check that fails now and did not (or passes now), a setting that changed."""

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.regression)

    @property
    def improvements(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if not c.regression)

    def changed_parts(self) -> tuple[str, ...]:
        """Parts with a regression or improvement, in diff order, each once."""
        return tuple(dict.fromkeys(c.part for c in self.changes))

    def to_json(self) -> dict[str, Any]:
        return {
            "before": {"label": self.before.label, "ts": self.before.ts},
            "after": {"label": self.after.label, "ts": self.after.ts},
            "regressions": [c.to_json() for c in self.regressions],
            "improvements": [c.to_json() for c in self.improvements],
            "new_parts": list(self.new_parts),
            "gone_parts": list(self.gone_parts),
            "lost_metrics": list(self.lost_metrics),
            "software": [c.to_json() for c in self.software],
            "cabling": [c.to_json() for c in self.cabling],
            "configuration": [c.to_json() for c in self.configuration],
        }


def compare(
    part: str, metric: str, before: float, after: float, threshold: Threshold
) -> Change | None:
    """The change of one metric, or None when it stays within its threshold."""
    delta = after - before
    if delta == 0:
        return None
    worse = delta < 0 if threshold.higher_is_better else delta > 0
    limit = threshold.limit(before)
    if abs(delta) <= limit:
        return None
    excess = abs(delta) / limit if limit > 0 else float("inf")
    if not worse:
        rank = Rank.INFO
    elif excess >= threshold.critical_factor:
        rank = Rank.CRITICAL
    else:
        rank = Rank.WARNING
    return Change(part, metric, before, after, worse, rank, excess)


def diff(
    before: Baseline, after: Baseline, thresholds: Mapping[str, Threshold] = DEFAULT_THRESHOLDS
) -> BaselineDiff:
    """What got worse or better per part, what is new or gone, and what software and cables changed."""
    changes: list[Change] = []
    lost: list[str] = []
    for part in sorted(set(before.parts) & set(after.parts)):
        old, new = before.parts[part], after.parts[part]
        for metric in sorted(set(old) & set(new)):
            threshold = thresholds.get(metric)
            if threshold is None:
                continue
            change = compare(part, metric, float(old[metric]), float(new[metric]), threshold)
            if change is not None:
                changes.append(change)
        lost += [f"{part} {metric}" for metric in sorted(set(old) - set(new)) if metric in thresholds]
    changes.sort(key=lambda c: (c.rank, -c.excess, c.part, c.metric))
    return BaselineDiff(
        before=before, after=after, changes=tuple(changes),
        new_parts=tuple(sorted(set(after.parts) - set(before.parts))),
        gone_parts=tuple(sorted(set(before.parts) - set(after.parts))),
        lost_metrics=tuple(lost),
        software=tuple(_software_changes(before.software, after.software)),
        cabling=tuple(_cable_changes(before.cabling, after.cabling)),
        configuration=tuple(_config_changes(before, after)),
    )  # fmt: skip


def _software_changes(
    before: Mapping[str, Mapping[str, str]], after: Mapping[str, Mapping[str, str]]
) -> Iterable[TextChange]:
    for node in sorted(set(before) & set(after)):
        old, new = before[node], after[node]
        for key in sorted(set(old) | set(new)):
            if old.get(key, "") != new.get(key, ""):
                yield TextChange(f"{node} {key}", old.get(key, ""), new.get(key, ""), Rank.INFO)


def _config_changes(before: Baseline, after: Baseline) -> Iterable[TextChange]:
    """Drift between two ``fleet check`` readings: checks whose failures changed first (a new failure is
    critical), then every setting that differs on a part both read (a warning: the check says whether it
    matters). Nothing when either baseline did not read the configuration."""
    if not before.config_checks or not after.config_checks:
        return
    for check in sorted(set(before.config_checks) & set(after.config_checks)):
        old = {str(f.get("part", "")) for f in before.config_checks[check].get("failed", ())}
        new = {str(f.get("part", "")) for f in after.config_checks[check].get("failed", ())}
        if old != new:
            rank = Rank.CRITICAL if new - old else Rank.INFO
            yield TextChange(f"check {check}", ", ".join(sorted(old)) or "passes",
                             ", ".join(sorted(new)) or "passes", rank)
    for part in sorted(set(before.configuration) & set(after.configuration)):
        old_values, new_values = before.configuration[part], after.configuration[part]
        for key in sorted(set(old_values) | set(new_values)):
            was, now = str(old_values.get(key, "")), str(new_values.get(key, ""))
            if was != now:
                yield TextChange(f"{part} {key}", was, now, Rank.WARNING)


def _cable_changes(before: Mapping[str, CableCheck], after: Mapping[str, CableCheck]) -> Iterable[TextChange]:
    for nic in sorted(set(before) & set(after)):
        old, new = before[nic], after[nic]
        if old.seen != new.seen:
            rank = Rank.CRITICAL if new.matches is False else Rank.INFO
            yield TextChange(nic, old.seen, new.seen, rank)


__all__ = [
    "BASELINE_FORMAT", "DEFAULT_THRESHOLDS", "PART_KINDS", "Baseline", "BaselineDiff", "CableCheck", "Change",
    "FleetShape", "Rank", "TextChange", "Threshold", "compare", "diff", "part_id", "part_nodes", "part_rail",
    "split_part",
]  # fmt: skip
