"""A probe's verdict in one line: its number against the link's speed and the pair's own history.

Why: "131 Gb/s" alone means nothing at 3 a.m.; "131 Gb/s = 33 % of 400G, baseline 392: FAIL"
says what to do. The CLI (``fleet lat|bw|allreduce``) and the console's probe panel judge with these
same functions.

- Bandwidth (Gb/s): against the slower of the two NICs' trained rates and against the reference
  (the last baseline's value for the NIC, else the pair's previous result). perftest reaches 94 to
  97 % of a healthy RoCE link's rate (docs/domain.md, operators' figures at 100G: 94-97 Gb/s; the acceptance example
  asks 380 of 400 Gb/s), so under ``BW_LINK_MIN`` of the link, or under ``BW_REFERENCE_MIN`` of what
  the same NIC reached before, something on the path is short.
- Latency (usec, p99): against the reference only (a rate says nothing about latency): an outlier by
  the link test's own rule (``fleet.fabric.localize.is_outlier``: twice the reference and 3 usec
  more) fails, above ``LAT_SLOW_FACTOR`` times the reference warns.
- All-reduce (GB/s of bus bandwidth): its efficiency against the hardware's figure, at least
  ``ALLREDUCE_NODE_MIN`` on one node (NVLink) and ``ALLREDUCE_FLEET_MIN`` across nodes: the
  operators' delivery standard (single-node all-reduce efficiency >= 94 %; >= 82 % linear
  scaling at 512 GPUs).
- All-to-all (GB/s of bus bandwidth) and the expert-parallel kernels (GB/s over RDMA): the
  efficiency against the theoretical figure is shown, but no delivery standard is published for
  them, so only the reference judges: under ``BW_REFERENCE_MIN`` of it fails.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.fabric.localize import is_outlier

BW_LINK_MIN = 0.90
"""Fraction of the link's rate a bandwidth probe must reach."""
BW_REFERENCE_MIN = 0.90
"""Fraction of the baseline's (or the previous) bandwidth a probe must reach."""
LAT_SLOW_FACTOR = 1.5
"""p99 above this many times the reference is a warning (the Probes matrix's ``slow``)."""
ALLREDUCE_NODE_MIN = 0.94
ALLREDUCE_FLEET_MIN = 0.82

PASS, WARN, FAIL, UNJUDGED = "PASS", "WARN", "FAIL", "no verdict"


@dataclass(frozen=True, slots=True)
class Reference:
    """What a probe is compared with: a value in the probe's unit and where it comes from."""

    value: float
    source: str
    """``baseline 2026-11`` or ``previous 2026-12-03 03:12``."""


@dataclass(frozen=True, slots=True)
class ProbeVerdict:
    verdict: str
    """PASS, WARN, FAIL, or "no verdict" (nothing to judge against)."""
    words: str
    """The whole line: ``131 Gb/s = 33 % of 400G, baseline 392: FAIL``."""
    reasons: tuple[str, ...] = ()
    """Why it is not PASS, each in a few words."""

    def as_json(self) -> dict[str, object]:
        return {"verdict": self.verdict, "words": self.words, "reasons": list(self.reasons)}


def _worst(verdicts: list[str]) -> str:
    for level in (FAIL, WARN, PASS):
        if level in verdicts:
            return level
    return UNJUDGED


def bandwidth_verdict(gbps: float, link_gbps: float | None, reference: Reference | None) -> ProbeVerdict:
    """``gbps`` (average) against ``link_gbps`` (the slower NIC's trained rate) and ``reference``."""
    parts = [f"{gbps:.0f} Gb/s"]
    levels: list[str] = []
    reasons: list[str] = []
    if link_gbps:
        share = gbps / link_gbps
        parts[0] += f" = {100 * share:.0f} % of {link_gbps:g}G"
        levels.append(PASS if share >= BW_LINK_MIN else FAIL)
        if share < BW_LINK_MIN:
            reasons.append(f"under {100 * BW_LINK_MIN:.0f} % of the link's {link_gbps:g} Gb/s")
    _throughput_against(gbps, reference, parts, levels, reasons)
    verdict = _worst(levels)
    return ProbeVerdict(verdict, f"{', '.join(parts)}: {verdict}", tuple(reasons))


def latency_verdict(p99_usec: float, reference: Reference | None) -> ProbeVerdict:
    """p99 (usec) against the reference p99 (usec)."""
    head = f"p99 {p99_usec:.2f} usec"
    if reference is None or reference.value <= 0:
        return ProbeVerdict(UNJUDGED, f"{head}, no baseline or previous result to compare: {UNJUDGED}")
    ratio = p99_usec / reference.value
    reasons: tuple[str, ...]
    if is_outlier(p99_usec, reference.value):
        verdict, reasons = FAIL, (f"{ratio:.1f}x its {reference.source}",)
    elif ratio > LAT_SLOW_FACTOR:
        verdict, reasons = WARN, (f"{ratio:.1f}x its {reference.source}",)
    else:
        verdict, reasons = PASS, ()
    return ProbeVerdict(verdict, f"{head} = {ratio:.2f}x {reference.source} {reference.value:.2f}: {verdict}",
                        reasons)


def allreduce_verdict(busbw_gbytes_s: float, efficiency: float | None, theoretical_gbytes_s: float | None,
                      nodes: int, reference: Reference | None) -> ProbeVerdict:
    """Peak bus bandwidth (GB/s) and its efficiency (0-1) against the delivery standard and the reference."""
    floor = ALLREDUCE_NODE_MIN if nodes <= 1 else ALLREDUCE_FLEET_MIN
    parts = [f"bus bandwidth {busbw_gbytes_s:.0f} GB/s"]
    levels: list[str] = []
    reasons: list[str] = []
    if efficiency is not None and theoretical_gbytes_s:
        parts[0] += f" = {100 * efficiency:.0f} % of {theoretical_gbytes_s:.0f} GB/s"
        levels.append(PASS if efficiency >= floor else FAIL)
        if efficiency < floor:
            reasons.append(f"under the {100 * floor:.0f} % the delivery standard asks")
    _throughput_against(busbw_gbytes_s, reference, parts, levels, reasons)
    verdict = _worst(levels)
    return ProbeVerdict(verdict, f"{', '.join(parts)}: {verdict}", tuple(reasons))


def _throughput_against(value: float, reference: Reference | None, parts: list[str], levels: list[str],
                        reasons: list[str]) -> None:
    """A throughput against its reference, added to a verdict being built: FAIL under
    ``BW_REFERENCE_MIN`` of it; nothing when there is no reference."""
    if reference is None or reference.value <= 0:
        return
    ratio = value / reference.value
    parts.append(f"{reference.source} {reference.value:.0f}")
    levels.append(PASS if ratio >= BW_REFERENCE_MIN else FAIL)
    if ratio < BW_REFERENCE_MIN:
        reasons.append(f"{100 * (1 - ratio):.0f} % under its {reference.source}")


def _against_reference(head: str, value: float, reference: Reference | None) -> ProbeVerdict:
    """``head``, then ``value`` against the reference (the only judge): PASS, FAIL, or no verdict."""
    if reference is None or reference.value <= 0:
        return ProbeVerdict(UNJUDGED, f"{head}, no baseline or previous result to compare: {UNJUDGED}")
    ratio = value / reference.value
    verdict = PASS if ratio >= BW_REFERENCE_MIN else FAIL
    reasons = () if verdict == PASS else (f"{100 * (1 - ratio):.0f} % under its {reference.source}",)
    return ProbeVerdict(verdict, f"{head}, {reference.source} {reference.value:.1f}: {verdict}", reasons)


def alltoall_verdict(busbw_gbytes_s: float, efficiency: float | None, theoretical_gbytes_s: float | None,
                     reference: Reference | None) -> ProbeVerdict:
    """Peak all-to-all bus bandwidth (GB/s), its share of the theoretical figure, judged by the reference."""
    head = f"bus bandwidth {busbw_gbytes_s:.1f} GB/s"
    if efficiency is not None and theoretical_gbytes_s:
        head += f" = {100 * efficiency:.0f} % of the theoretical {theoretical_gbytes_s:.1f} GB/s"
    return _against_reference(head, busbw_gbytes_s, reference)


def ep_verdict(rdma_gbytes_s: float, reference: Reference | None) -> ProbeVerdict:
    """The BF16 dispatch's RDMA bandwidth (GB/s) of the expert-parallel benchmark, judged by the reference."""
    return _against_reference(f"BF16 dispatch {rdma_gbytes_s:.1f} GB/s over RDMA", rdma_gbytes_s, reference)


__all__ = [
    "ALLREDUCE_FLEET_MIN", "ALLREDUCE_NODE_MIN", "BW_LINK_MIN", "BW_REFERENCE_MIN", "FAIL", "LAT_SLOW_FACTOR", "PASS",
    "UNJUDGED", "WARN", "ProbeVerdict", "Reference", "allreduce_verdict", "alltoall_verdict", "bandwidth_verdict",
    "ep_verdict", "latency_verdict",
]  # fmt: skip
