"""Which part explains a link test's bad pairs: a NIC, its cable, a leaf or a spine.

Why: a matrix of 8,128 pair latencies per rail says *that* something is wrong;
the engineer needs the one part to replace. Each probe (one flow between two
NICs) crosses known parts: the client's NIC and cable, its leaf, a spine each
way when the two NICs sit behind different leaves, the far leaf, the far cable
and NIC. A part is suspect when every probe that crosses it is bad (at least
``min_probes`` of them); the suspects are chosen greedily, the one that
explains the most still-unexplained bad probes first, so a dead leaf is named
once rather than as each of its NICs.

- NIC: all of its pairs are bad. Its cable carries exactly the same probes, so
  the two are told apart by the local checks (optics, symbol errors, link
  flaps, LLDP): a NIC whose cable was flagged is reported as ``cable``.
- leaf: all pairs through it are bad.
- spine: the probes whose flows crossed it (either way: a latency probe's
  packets go both ways, each leaf hashing its own direction) are bad and the
  others are not. That needs each flow's spines (``Probe.spines``), which the
  link test asks of the leaves' hash calculators
  (``fleet.collectors.probes.paths``); several flow labels per pair spread one
  pair's flows over several spines. A bad probe between leaves whose path is
  only partly known (a leaf that could not be asked) counts as explained by
  the spine named, which it may have crossed, rather than as evidence against
  its NICs. When no spine is known at all and the leftover bad probes all
  cross leaves while same-leaf probes are clean, the suspect is the spine
  layer between those leaves (``spine`` with part ``spines``).

Latency is judged against a reference per rail *and per path class* (same
leaf, or through a spine: ``path_class``): a pair through a spine is one
switch hop slower than a pair under one leaf on a healthy fabric, and judged
against the same-leaf pairs it would look like an outlier.

Pure: no I/O. Latencies in microseconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("nic", "cable", "leaf", "spine")

SAME_LEAF, THROUGH_SPINE, UNKNOWN_PATH = "leaf", "spine", ""
"""Path classes: both NICs under one leaf, NICs behind two leaves (a spine between), leaves unknown."""

OUTLIER_FACTOR = 2.0
"""A pair is an outlier when its latency is this many times its class's reference: healthy pairs of one
class differ by noise only, while a lossy link adds retransmissions of tens of microseconds."""
OUTLIER_FLOOR_USEC = 3.0
"""... and at least this much above the reference, so a 1.6 us fabric with 0.2 us jitter
does not flag a 3.3 us pair that is only noise."""
REFERENCE_QUANTILE = 0.1
"""A class's reference is this quantile of its probes, not the median: when a spine or a
leaf is bad, most probes of a small fabric can be bad, and the median with them."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One measured flow from NIC (src, rail) to NIC (dst, rail)."""

    src: str
    dst: str
    rail: int
    bad: bool
    spines: tuple[str, ...] = ()
    """The spines the flow crossed (each direction that is known); () within a leaf or when unknown."""
    path_unknown: bool = False
    """Between leaves, and the spine of at least one direction is unknown."""


@dataclass(frozen=True, slots=True)
class Suspect:
    """A part that explains bad probes; ``bad``/``total``: probes crossing it."""

    kind: str  # "nic" | "cable" | "leaf" | "spine"
    part: str  # "gpu003:mlx5_2", "leaf09", "spine02", "spines"
    node: str = ""
    nic: str = ""
    switch: str = ""
    bad: int = 0
    total: int = 0
    explains: int = 0
    """Bad probes this suspect explains that no earlier suspect did."""
    reason: str = ""
    source: str = "probes"
    """What named it: ``probes`` (this module) or ``local checks`` (a NIC's own state, optics, errors)."""


def path_class(src_leaf: str, dst_leaf: str) -> str:
    """``leaf`` (same leaf), ``spine`` (two leaves), or "" when either leaf is unknown."""
    if not src_leaf or not dst_leaf:
        return UNKNOWN_PATH
    return SAME_LEAF if src_leaf == dst_leaf else THROUGH_SPINE


def is_outlier(latency_usec: float | None, reference_usec: float) -> bool:
    """A failed probe (None) or one far above its reference (see OUTLIER_*)."""
    if latency_usec is None:
        return True
    return latency_usec > OUTLIER_FACTOR * reference_usec and latency_usec - reference_usec > OUTLIER_FLOOR_USEC


def references(latencies: Iterable[tuple[int, str, float | None]]) -> dict[tuple[int, str], float]:
    """Each (rail, path class)'s reference latency (REFERENCE_QUANTILE of its successful probes), usec."""
    by_class: dict[tuple[int, str], list[float]] = defaultdict(list)
    for rail, cls, value in latencies:
        if value is not None:
            by_class[(rail, cls)].append(value)
    return {key: _quantile(sorted(values), REFERENCE_QUANTILE) for key, values in by_class.items()}


def cell_reference(matrix: Mapping[str, Any], i: int, j: int) -> float | None:
    """The reference p99 (usec) cell (i, j) of a link test's matrix (``LinktestReport.matrix``) is judged
    against: that of its pair's path class; a matrix stored before the classes has one per rail."""
    reference = matrix.get("reference_p99_usec")
    if not isinstance(reference, Mapping):
        return float(reference) if isinstance(reference, int | float) else None
    leaves = matrix.get("leaves") or []
    a = str(leaves[i]) if i < len(leaves) else ""
    b = str(leaves[j]) if j < len(leaves) else ""
    value = reference.get(path_class(a, b) or "unknown")
    return float(value) if isinstance(value, int | float) else None


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default method)."""
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def localize(
    probes: Sequence[Probe],
    leaf_of: Mapping[tuple[str, int], str],
    *,
    nic_name: Mapping[int, str] | None = None,
    cable_flagged: Iterable[tuple[str, int]] = (),
    min_probes: int = 2,
) -> list[Suspect]:
    """The parts that explain the bad ``probes``, most explaining first.

    ``leaf_of[(node, rail)]``: the leaf that NIC is cabled to (as LLDP sees it).
    ``nic_name[rail]``: the device name (default ``mlx5_<rail>``).
    ``cable_flagged``: NICs whose cable the local checks found at fault.
    """
    names = nic_name or {}
    flagged = set(cable_flagged)
    crossing: dict[str, list[int]] = defaultdict(list)
    meta: dict[str, Suspect] = {}
    nic_keys: dict[tuple[str, int], str] = {}
    cross_leaf: list[int] = []
    same_leaf: list[int] = []

    def nic_key(node: str, rail: int) -> str:
        """A NIC's key, its suspect made once: a link test's probes cross each NIC a hundred times."""
        key = nic_keys.get((node, rail))
        if key is None:
            key = nic_keys[(node, rail)] = f"nic:{node}:{rail}"
            device = names.get(rail, f"mlx5_{rail}")
            kind = "cable" if (node, rail) in flagged else "nic"
            meta[key] = Suspect(kind, f"{node}:{device}", node=node, nic=device)
        return key

    for leaf in set(leaf_of.values()) - {""}:
        meta[f"leaf:{leaf}"] = Suspect("leaf", leaf, switch=leaf)
    for k, probe in enumerate(probes):
        crossing[nic_key(probe.src, probe.rail)].append(k)
        crossing[nic_key(probe.dst, probe.rail)].append(k)
        src_leaf, dst_leaf = leaf_of.get((probe.src, probe.rail), ""), leaf_of.get((probe.dst, probe.rail), "")
        for leaf in {src_leaf, dst_leaf} - {""}:
            crossing[f"leaf:{leaf}"].append(k)
        if path_class(src_leaf, dst_leaf) == THROUGH_SPINE:
            cross_leaf.append(k)
            for spine in dict.fromkeys(probe.spines):
                key = f"spine:{spine}"
                crossing[key].append(k)
                meta.setdefault(key, Suspect("spine", spine, switch=spine))
        elif src_leaf or dst_leaf:
            same_leaf.append(k)
    bad = {k for k, probe in enumerate(probes) if probe.bad}
    cross = set(cross_leaf)
    partly_known = {k for k in cross & bad if probes[k].path_unknown}
    candidates = {key: ks for key, ks in crossing.items() if len(ks) >= min_probes and all(k in bad for k in ks)}
    suspects: list[Suspect] = []
    unexplained = set(bad)
    while unexplained and candidates:
        key = max(candidates, key=lambda c: (len(unexplained & set(candidates[c])), _specific(c), c))
        ks = candidates.pop(key)
        covered = unexplained & set(ks)
        if not covered:
            break
        base = meta[key]
        reason = _reason(base, len(ks))
        if base.kind == "spine":  # bad probes whose other way is unknown may have crossed it too
            maybe = (unexplained - covered) & partly_known
            covered |= maybe
            if maybe:
                reason += (f"; {len(maybe)} more bad probes between leaves, whose spine one way could not be "
                           "asked, are consistent with it")
        unexplained -= covered
        suspects.append(_with_counts(base, len(ks), len(ks), len(covered), reason))
    if unexplained and unexplained <= cross and not any(probes[k].spines for k in unexplained):
        cross_bad = len(cross & bad)
        suspects.append(Suspect(
            "spine", "spines", bad=cross_bad, total=len(cross), explains=len(unexplained),
            reason=(f"{cross_bad} of {len(cross)} probes between leaves bad, none of the {len(same_leaf)} "
                    "within a leaf left unexplained; which spine each flow took is unknown"),
        ))  # fmt: skip
    return suspects


def _specific(key: str) -> int:
    """Tie-break: name the narrower part (a NIC before a spine before a leaf)."""
    return {"nic": 3, "spine": 2, "leaf": 1}[key.split(":")[0]]


def _with_counts(base: Suspect, bad: int, total: int, explains: int, reason: str) -> Suspect:
    return Suspect(base.kind, base.part, base.node, base.nic, base.switch, bad, total, explains, reason)


def _reason(suspect: Suspect, count: int) -> str:
    what = {
        "nic": f"all {count} probes of {suspect.part} bad",
        "cable": f"all {count} probes of {suspect.part} bad and its cable failed the local checks",
        "leaf": f"all {count} probes through {suspect.part} bad",
        "spine": f"all {count} probes whose flows crossed {suspect.part} bad",
    }
    return what[suspect.kind]


__all__ = [
    "KINDS", "SAME_LEAF", "THROUGH_SPINE", "UNKNOWN_PATH", "Probe", "Suspect", "cell_reference", "is_outlier",
    "localize", "path_class", "references",
]  # fmt: skip
