"""Fixed names of simulated and planned fabric parts.

Scenarios and tests target machines by name, so the numbering is part of the
interface: nodes ``gpu001``.., leaves numbered group-major (group g, rail r
from 0: leaf number ``8*g + r + 1``, so group 1 rail 2 is ``leaf11``), spines
``spine01``.., the Slurm head ``head01``.
"""

from __future__ import annotations

RAILS_PER_NODE = 8
"""One RDMA NIC per GPU; NIC i of every node in a group goes to that group's rail-i leaf."""


def node_name(index: int) -> str:
    """Name of node ``index`` counted from 1: ``gpu001``; four digits past 999."""
    return f"gpu{index:03d}"


def leaf_name(group: int, rail: int, rails: int = RAILS_PER_NODE) -> str:
    """Leaf for ``rail`` of leaf group ``group`` (both from 0)."""
    return f"leaf{rails * group + rail + 1:02d}"


def spine_name(index: int) -> str:
    """Spine ``index`` counted from 1: ``spine01``."""
    return f"spine{index:02d}"


def nic_name(rail: int) -> str:
    """RDMA device of ``rail``: ``mlx5_<rail>``."""
    return f"mlx5_{rail}"


HEAD_NAME = "head01"
