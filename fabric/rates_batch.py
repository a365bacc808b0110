"""The rate gauges of many hosts' changed-only samples in one pass of array arithmetic.

``RateTracker.update_changed`` walks a line's changed counters in Python: about a
hundred a line, a thousand lines a second at 1,024 nodes. numpy does the same
sums in a few dozen calls whatever their number, but each call costs microseconds:
too many for one line, few for the dozens of lines a collector reads in a tenth
of a second. So the collector gathers the lines of many hosts and this module
derives them together.

The arithmetic is ``_Still.derive``'s, operation for operation and in the same
order (error counters summed in the sample's order), so the gauges are the same
floats, bit for bit. A line this cannot do exactly (a counter that wrapped,
reset or reached its maximum; a port whose FEC counters stood still) is marked
and left to ``update_changed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleet.fabric.samples import SeriesLayout

BATCH_FROM = 4
"""Fewer lines of a plan than this are derived one by one: the arrays' fixed cost would be more."""

Floats = np.ndarray[Any, np.dtype[np.float64]]
Places = np.ndarray[Any, np.dtype[np.intp]]


@dataclass(frozen=True, eq=False, slots=True)
class RatePlan:
    """Where each place of a root layout feeds a rate row (``layout``: the host's standing rate
    keys, then a ``pre_fec_ber`` per FEC port). Shared by every host of that shape."""

    layout: SeriesLayout
    """The keys of a rate row, in the order ``derive`` leaves them."""
    width: int
    """How many places the root layout has: a place at or past it is not this plan's."""
    counter: np.ndarray[Any, np.dtype[np.bool_]]
    """By place: whether it is a counter (the rest are gauges, which feed nothing)."""
    saturated_at: Floats
    """By place: the value from which the counter counts as saturated (``inf`` if it wraps)."""
    gauge_col: Places
    """By place: the column of the rate gauge the counter feeds, -1 for none."""
    factor: Floats
    """By place: the factor from the counter's per-second to its gauge's unit."""
    error_col: Places
    """By place: the column of its port's ``errors_per_s`` for a NIC error counter, else -1."""
    fec_at: Places
    """By place: 2k for the corrected bits of FEC port k, 2k + 1 for its received bits, else -1."""
    ber_cols: Places
    """FEC port k -> the column of its ``pre_fec_ber``."""


def batch_rates(plan: RatePlan, before: Sequence[Any], now: Sequence[Any], places: Sequence[Sequence[int] | Places],
                dt_s: Floats) -> tuple[Floats, np.ndarray[Any, np.dtype[np.bool_]]]:
    """The rate rows of ``len(now)`` lines of one plan, and which of them are exact.

    Line i: ``before[i]``/``now[i]`` its host's previous and current values (float64
    buffers, the plan's places first), ``places[i]`` those that changed, ``dt_s[i]`` the
    seconds between. A row is what ``_Still.derive`` gives where ``exact[i]``; where
    not, it means nothing and the line needs ``update_changed``.
    """
    lines, width = len(now), plan.width
    counts = np.fromiter(map(len, places), np.intp, lines)
    # A collector's places come as arrays (collectors.agent_reader.write_slots): joined at C speed.
    place = np.concatenate([np.asarray(line, np.intp) for line in places]) if lines else np.zeros(0, np.intp)
    columns = len(plan.layout.keys)
    exact = np.ones(lines, dtype=np.bool_)
    if place.size and (place.min() < 0 or place.max() >= width):
        return np.zeros((lines, columns)), ~exact
    line = np.repeat(np.arange(lines), counts)
    at = line * width + place
    was = np.frombuffer(b"".join(memoryview(values)[:width] for values in before), np.float64)[at]
    is_ = np.frombuffer(b"".join(memoryview(values)[:width] for values in now), np.float64)[at]
    counter = plan.counter[place]
    with np.errstate(invalid="ignore"):
        went_up = (was <= is_) & (is_ < plan.saturated_at[place])
    exact[line[counter & ~went_up]] = False  # wrapped, reset, saturated or not a number
    delta = is_ - was
    per_s = delta / dt_s[line]
    # Errors per port: each changed counter once, in the sample's order (as derive sums them).
    error = plan.error_col[place] >= 0
    firsts = np.unique(at[error], return_index=True)[1]
    error_lines = line[error][firsts]
    sums = np.bincount(error_lines * columns + plan.error_col[place][error][firsts],
                       weights=per_s[error][firsts], minlength=lines * columns)
    rows = sums.astype(np.float64, copy=False).reshape(lines, columns)  # no weights at all: numpy counts in ints
    gauge = plan.gauge_col[place] >= 0
    rows[line[gauge], plan.gauge_col[place][gauge]] = per_s[gauge] * plan.factor[place][gauge]
    ports = len(plan.ber_cols)
    if ports:
        fec = plan.fec_at[place] >= 0
        bits = np.zeros((lines, 2 * ports))
        moved = np.zeros((lines, 2 * ports), dtype=np.bool_)
        bits[line[fec], plan.fec_at[place][fec]] = delta[fec]
        moved[line[fec], plan.fec_at[place][fec]] = True
        corrected, received = bits[:, 0::2], bits[:, 1::2]
        # A port whose FEC counters stood still keeps no ratio, nor one over no bits: update_changed.
        exact &= (moved[:, 0::2] | moved[:, 1::2]).all(axis=1) & (received != 0).all(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            rows[:, plan.ber_cols] = corrected / received
    return rows, exact
