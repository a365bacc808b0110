"""Which findings make a node worth draining in Slurm, and the reason to give Slurm.

A node whose link is down or flapping, whose cable loses bits, whose NIC trained at a lower rate,
whose module's light is too low to hold the link, or whose GPU raised a critical XID slows or fails
every job placed on it (an all-reduce runs at its slowest member's pace). Draining it lets running
jobs finish and starts no new one there until it is repaired and resumed. Only a critical finding
on the node's own hardware offers it: the network's congestion, a switch's problem or a host
fleet cannot reach are not the node's to drain.
"""

from __future__ import annotations

DRAIN_WORTHY = frozenset({"link_down", "link_flapping", "high_ber", "degraded_rate", "optics_low_rx_power",
                          "gpu_xid"})
"""Finding kinds that, critical, make the node worth draining."""


def drain_reason(kind: str, part: str) -> str:
    """The reason Slurm keeps: ``link flapping on mlx5_1`` (``part``: the NIC or GPU, "" for the node)."""
    words = kind.replace("_", " ")
    return f"{words} on {part}" if part else words


def drain_offer(kind: str, critical: bool, node: str, part: str) -> str | None:
    """``drain gpu017: link flapping on mlx5_1`` when such a finding makes ``node`` worth draining, else None."""
    if not critical or not node or kind not in DRAIN_WORTHY:
        return None
    return f"drain {node}: {drain_reason(kind, part)}"


__all__ = ["DRAIN_WORTHY", "drain_offer", "drain_reason"]
