"""The one JSON shape every benchmark prints, and the machine facts that qualify its figures.

``{"name", "machine": {"cpus", "load_before", "load_after"}, "results", "targets", "met"}``:
``results`` holds the figures (units in the key: ``_s``, ``_ms``, ``_mib``, ``_x``), ``targets`` the
bound each figure is held to (``{"max": 1.0}`` or ``{"min": 20.0}``), and ``met`` whether it was.
The load averages before and after tell a reader whether the machine was busy while it ran.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Bound:
    """A target for one figure: it must be at most ``max`` or at least ``min`` (exactly one is set)."""

    max: float | None = None
    min: float | None = None

    def met_by(self, value: float) -> bool:
        if self.max is not None:
            return value <= self.max
        assert self.min is not None
        return value >= self.min

    def as_json(self) -> dict[str, float]:
        return {"max": self.max} if self.max is not None else {"min": float(self.min or 0.0)}


class BenchmarkFailed(Exception):
    """A benchmark could not measure (a simulator that did not start, a store that could not be
    filled); the message says why in one line. ``python -m benchmarks`` exits 3 with it."""


def at_most(value: float) -> Bound:
    return Bound(max=value)


def at_least(value: float) -> Bound:
    return Bound(min=value)


@dataclass
class Measured:
    """What one benchmark run found: its figures and the targets some of them are held to."""

    results: dict[str, Any]
    targets: dict[str, Bound] = field(default_factory=dict)


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def document(name: str, measured: Measured, load_before: float, load_after: float) -> dict[str, Any]:
    """The common shape. A target whose figure is missing from ``results`` (or None) is not met.

    A figure that is not a finite number (a rate over nothing seen) becomes None: JSON has no NaN."""
    results = {key: None if isinstance(value, float) and not math.isfinite(value) else value
               for key, value in measured.results.items()}
    met = {}
    for key, bound in measured.targets.items():
        value = results.get(key)
        met[key] = isinstance(value, int | float) and bound.met_by(float(value))
    return {
        "name": name,
        "machine": {"cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after},
        "results": results,
        "targets": {key: bound.as_json() for key, bound in measured.targets.items()},
        "met": met,
    }
