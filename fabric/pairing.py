"""Which node pairs a link test probes, and in which rounds.

Why rounds of disjoint pairs: a NIC in two probes at once measures the other
probe, not the fabric, and a node idle in a round is wasted time. The circle
method (round-robin tournament) schedules a full mesh of n nodes in n-1
rounds where every node is in exactly one pair per round (n odd: n rounds,
one node sits out each round, "the bye"). A link test of 128 nodes is then
127 rounds of 64 probes instead of 8,128 probes one at a time.

Modes:

- ``mesh``: every node pair, on every rail at once (rail r's NIC to rail r's
  NIC: eight independent probes per pair, one per NIC, so no NIC is doubled).
- ``rail``: every node pair, one rail after another: the spines see one rail's
  probes at a time, so a congested spine does not blur which rail is bad.
- ``sample``: ``sample_rounds`` rounds of the mesh drawn at random (seeded):
  every node still meets a peer each round, at a fraction of the cost.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

MODES = ("mesh", "rail", "sample")


@dataclass(frozen=True, slots=True)
class PairTest:
    """One probe: ``src`` runs the client on rail ``rail``'s NIC, ``dst`` the server."""

    src: str
    dst: str
    rail: int


Round = tuple[PairTest, ...]


def circle_rounds(nodes: Sequence[str]) -> list[tuple[tuple[str, str], ...]]:
    """Rounds of disjoint pairs covering every pair of ``nodes`` exactly once.

    n-1 rounds for even n, n rounds for odd n (each round one node has a bye).
    Sides are balanced (the lower-listed node is client when the two positions'
    sum is odd), so every node is client about as often as server.
    """
    names = list(dict.fromkeys(nodes))
    if len(names) < 2:
        return []
    players: list[str | None] = [*names, None] if len(names) % 2 else list(names)
    n = len(players)
    index = {name: k for k, name in enumerate(names)}
    fixed, rest = players[0], players[1:]
    rounds: list[tuple[tuple[str, str], ...]] = []
    for _ in range(n - 1):
        ring = [fixed, *rest]
        pairs: list[tuple[str, str]] = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is None or b is None:
                continue
            low, high = (a, b) if index[a] < index[b] else (b, a)
            pairs.append((low, high) if (index[a] + index[b]) % 2 else (high, low))
        rounds.append(tuple(pairs))
        rest = [rest[-1], *rest[:-1]]
    return rounds


def schedule(
    nodes: Sequence[str],
    rails: Sequence[int],
    mode: str = "mesh",
    *,
    sample_rounds: int = 4,
    seed: int = 0,
) -> list[Round]:
    """The link test's rounds for ``nodes`` on ``rails`` in ``mode`` (see the module doc)."""
    if mode not in MODES:
        raise ValueError(f"unknown link test mode {mode!r}; one of {', '.join(MODES)}")
    base = circle_rounds(nodes)
    if mode == "sample":
        rng = random.Random(seed)
        base = rng.sample(base, min(max(1, sample_rounds), len(base)))
    if mode == "rail":
        return [tuple(PairTest(a, b, rail) for a, b in pairs) for rail in rails for pairs in base]
    return [tuple(PairTest(a, b, rail) for a, b in pairs for rail in rails) for pairs in base]


def rounds_are_disjoint(rounds: Sequence[Round]) -> bool:
    """True when no NIC (node, rail) is in two probes of one round."""
    for tests in rounds:
        used: set[tuple[str, int]] = set()
        for test in tests:
            ends = {(test.src, test.rail), (test.dst, test.rail)}
            if used & ends:
                return False
            used |= ends
    return True


__all__ = ["MODES", "PairTest", "Round", "circle_rounds", "rounds_are_disjoint", "schedule"]
