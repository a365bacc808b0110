"""Switch polling's own share of the collector's CPU, and the poll period that keeps it there.

Why: a leaf of a 1,024-node fleet has about 290 ports; NVUE prints each port's counters as its
own JSON document, and reading one poll costs the collector about 34 ms of CPU (a spine, 32 ports:
about 3 ms; measured 2026-12-03 on the simulator's switches). Polled every second like the nodes'
lines, 32 leaves and 32 spines would ask for 1.2 CPU-seconds a second: the switches would starve the nodes, and each other (the first run of
``fleet collect`` at 1,024 nodes saw most switches get no sample in a minute). So switch polling
gets a budget: each poll's reading is timed (it has no await: its wall time is its CPU, or more
when the machine is busy), and every switch is polled every
``max(interval, switches x mean poll CPU / share)`` seconds: at 1,024 nodes about every 5 s,
and at a small fleet every interval. The budget yields to the 10 s within which every switch's
counters must arrive (``MAX_PERIOD_S``): on a machine too busy for both, the switches come first.
"""

from __future__ import annotations

SWITCH_CPU_SHARE = 0.25
"""Of one CPU, what switch polling may use on average; the nodes' lines (about 0.3 CPU-s/s at
1,024 nodes) and the store keep the rest."""
MAX_PERIOD_S = 8.0
"""The longest period: every switch's counters at least every 10 s, with room for a slow poll."""
SMOOTHING = 0.2
"""Weight of each new poll in the running mean of a poll's CPU."""


class SwitchBudget:
    """The CPU of switch polls, and the period that keeps ``switches`` of them within ``share``."""

    def __init__(self, switches: int, interval_s: float, share: float = SWITCH_CPU_SHARE) -> None:
        self.switches = switches
        self.interval_s = interval_s
        self.share = share
        self.poll_cpu_s = 0.0
        """Running mean of one poll's CPU seconds (0 until a poll was measured)."""

    def spent(self, cpu_s: float) -> None:
        """A poll cost ``cpu_s`` seconds of the collector's CPU."""
        self.poll_cpu_s = cpu_s if self.poll_cpu_s == 0.0 else (1 - SMOOTHING) * self.poll_cpu_s + SMOOTHING * cpu_s

    def period_s(self) -> float:
        """Seconds from one poll of a switch to its next."""
        return max(self.interval_s, min(MAX_PERIOD_S, self.switches * self.poll_cpu_s / self.share))


__all__ = ["MAX_PERIOD_S", "SWITCH_CPU_SHARE", "SwitchBudget"]
