"""Shards: N collectors on N machines share one inventory, each host collected by exactly one.

``fleet collect --shard K/N`` (and ``fleet export --collect --shard K/N``) keep the hosts
whose shard is K: every node, switch and the Slurm head is placed by its name alone, so
N boxes given the same inventory and the same N agree on the split without talking to
each other, and together they cover the fleet exactly once (docs/scale-out.md).

The placement is rendezvous (highest random weight) hashing, Thaler and Ravishankar,
"Using name-based mappings to increase hit rates", IEEE/ACM ToN 6(1), 1998
(https://doi.org/10.1109/90.663936): a host goes to the shard with the highest hash of
(shard, name). Each shard gets an even share in expectation, and going from N to N+1
shards moves only the hosts the new shard takes (about 1/(N+1) of them), where a plain
``hash mod N`` would move almost every host. The hash is BLAKE2b of the UTF-8 name, so
the split is the same on every machine, Python version and run (``hash()`` is salted
per process and could not be used).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass

from fleet.collectors.inventory import Inventory

MAX_SHARDS = 4096
"""More collectors than this would each hold a handful of hosts; the limit catches a typo (1/40960)."""

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count``, numbered from 1 (``--shard 1/2`` and ``--shard 2/2``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS:
            raise ValueError(f"the number of shards must be 1-{MAX_SHARDS}, got {self.count}")
        if not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index} is outside 1-{self.count}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, name: str) -> bool:
        """Whether this shard collects the host called ``name``."""
        return shard_of(name, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """``K/N`` -> Shard(K, N); ValueError with the reason in words otherwise."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r}: expected K/N, e.g. 1/2 (shard K of N, counted from 1)")
    return Shard(int(match.group(1)), int(match.group(2)))


def _weight(index: int, name: str) -> int:
    digest = hashlib.blake2b(f"{index}/{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def shard_of(name: str, count: int) -> int:
    """The shard (1..``count``) that collects host ``name``: the one with the highest weight."""
    return max(range(1, count + 1), key=lambda index: _weight(index, name))


def shard_inventory(inventory: Inventory, shard: Shard) -> Inventory:
    """The part of ``inventory`` that ``shard`` collects.

    Hosts: those the shard owns, in the inventory's order. The cabling plan keeps every
    cable with at least one end here (a node or a switch of this shard): the rules then
    check this shard's side of each cable it can see, and never call a cable missing
    because both of its ends belong to other shards.
    """
    hosts = tuple(host for host in inventory.hosts if shard.owns(host.name))
    names = {host.name for host in hosts}
    cabling = tuple(row for row in inventory.cabling if row.node in names or row.switch in names)
    return dataclasses.replace(inventory, hosts=hosts, cabling=cabling)
