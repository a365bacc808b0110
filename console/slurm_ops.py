"""Drain and resume from the console: over the collector's SSH pool, audited in the console's store.

The change itself is ``fleet.collectors.slurm_nodes`` (the exact ``scontrol`` command, the node read
before and after, one audit row); this module finds the Slurm head, the pool (the in-console
collector's, else one of its own through ``app.probes``) and a writer (the collector's, else one of
its own for the change), and flushes the audit before it says the change is done.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from fleet.collectors.guarded_change import actor
from fleet.collectors.slurm_nodes import NodeChange, NodeChangeOutcome, change_node
from fleet.store.writer import StoreWriter

if TYPE_CHECKING:
    from fleet.console.app import FleetApp


class NodeChangeUnavailable(Exception):
    """Why a drain or resume cannot be run from here (no inventory, no Slurm head), in words."""


def slurm_head(app: FleetApp) -> str:
    """The inventory's Slurm head; NodeChangeUnavailable when there is none."""
    inventory = app.inventory
    if inventory is None:
        raise NodeChangeUnavailable("no inventory: start the console with --inventory to drain or resume nodes")
    head = inventory.head
    if head is None:
        raise NodeChangeUnavailable("the inventory names no Slurm head ([slurm] host): nowhere to run scontrol")
    return str(head.name)


async def run_node_change(app: FleetApp, change: NodeChange) -> NodeChangeOutcome:
    """Run ``change`` on the Slurm head; the audit row is stored before this returns."""
    head = slurm_head(app)
    own = None
    writer = app.writer
    if writer is None:
        own = writer = await asyncio.to_thread(lambda: StoreWriter(app.config.db_path).start())
    try:
        outcome = await change_node(app.probes.pool(), head, change, actor=actor(), put_action=writer.put_action)
        await asyncio.to_thread(writer.flush, 30.0)
    finally:
        if own is not None:
            await asyncio.to_thread(own.close, 10.0)
    return outcome


__all__ = ["NodeChangeUnavailable", "run_node_change", "slurm_head"]
