"""What the console's ECMP screens do to machines and the store, without Textual.

One :class:`EcmpOps` per open plan screen: an SSH pool (switch configuration,
the guarded apply and its probe) and a store writer (the audit rows and the
probes the apply records). The console hands it the app's shared pool and
writer (``app.probes``: the collector's when it runs); given none it makes its
own and closes them when the screen goes.
Balances and the audit are read from the store only; in replay without an
inventory file the roles the store knows stand in for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fleet.collectors.ecmp_apply import ApplyOutcome, ApplySettings, StepCallback
from fleet.collectors.ecmp_status import LeafPlan, guarded_apply, leaf_balances, plan_leaf
from fleet.collectors.guarded_change import actor
from fleet.collectors.inventory import Inventory, InventoryHost
from fleet.collectors.sshpool import SshPool
from fleet.fabric.ecmp import EcmpThresholds, LeafBalance, ecmp_thresholds
from fleet.fabric.ecmp_plan import Remedy
from fleet.fabric.records import ActionRecord
from fleet.store.audit import ChainVerdict
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


@dataclass(frozen=True, slots=True)
class EcmpSettings:
    """Seconds. The defaults are ``fleet.fabric.ecmp``'s: 60 s of counters, imbalance held 60 s."""

    window_s: float = 60.0
    """Uplink throughput judged for the topology bars and the plan."""
    sustain_s: float = 60.0
    """How long the imbalance must hold to be flagged (at most the window)."""
    verify_window_s: float = 10.0
    """Fresh counters before and after a change (``ApplySettings.window_s``)."""
    interval_s: float = 1.0
    """Switch polls during the verify windows."""

    @property
    def thresholds(self) -> EcmpThresholds:
        return ecmp_thresholds(self.window_s, self.sustain_s)

    @property
    def apply_settings(self) -> ApplySettings:
        return ApplySettings(window_s=self.verify_window_s, interval_s=self.interval_s,
                             thresholds=ecmp_thresholds(self.verify_window_s, self.sustain_s))


def roles_inventory(hosts: Iterable[tuple[str, str]]) -> Inventory:
    """An inventory of (name, role) pairs: enough for ``leaf_balances``, which needs roles only."""
    return Inventory(path=Path(), hosts=tuple(InventoryHost(name, role) for name, role in hosts),
                     known_hosts=None, interval_s=1.0)


def read_balances(reader: StoreReader, inventory: Inventory, settings: EcmpSettings,
                  end: float | None = None) -> dict[str, LeafBalance]:
    """Every leaf's balance over ``settings.window_s`` ending at ``end`` (None: the newest samples)."""
    balances = leaf_balances(reader, inventory, settings.thresholds, window_s=settings.window_s, end=end)
    return {b.leaf: b for b in balances}


@dataclass(frozen=True, slots=True)
class LastChange:
    """A leaf's newest audited ECMP verdict with the uplink utilizations (%) measured before and after."""

    ts: float
    verdict: str
    before_util_pct: tuple[float, ...]
    after_util_pct: tuple[float, ...]


def _utils(numbers: dict[str, object]) -> tuple[float, ...]:
    balance = numbers.get("balance")
    uplinks = balance.get("uplinks", []) if isinstance(balance, dict) else []
    return tuple(float(u.get("util_pct", 0.0)) for u in uplinks if isinstance(u, dict))


def last_changes(rows: Iterable[ActionRecord]) -> dict[str, LastChange]:
    """Each switch's newest ECMP verdict that has numbers before and after (the audit is oldest first)."""
    found: dict[str, LastChange] = {}
    for row in rows:
        if row.step == "verdict" and row.action.startswith("ecmp.") and row.before and row.after:
            found[row.target] = LastChange(row.ts, row.verdict, _utils(row.before), _utils(row.after))
    return found


def read_balances_and_changes(reader: StoreReader, inventory: Inventory, settings: EcmpSettings,
                              end: float | None = None) -> tuple[dict[str, LeafBalance], dict[str, LastChange]]:
    """The topology's one read: every leaf's balance and its last audited change (up to ``end``)."""
    rows = [r for r in reader.audit() if end is None or r.ts <= end]
    return read_balances(reader, inventory, settings, end), last_changes(rows)


async def read_audit(db_path: Path) -> list[ActionRecord]:
    """Every audit row, oldest first, on a fresh connection (sees what another writer just wrote)."""

    def read() -> list[ActionRecord]:
        if not db_path.exists():
            return []
        with StoreReader(db_path) as reader:
            return reader.audit()

    return await asyncio.to_thread(read)


async def verify_audit(db_path: Path) -> ChainVerdict | None:
    """The audit's hash chain walked on a fresh connection (None: no history yet)."""

    def read() -> ChainVerdict | None:
        if not db_path.exists():
            return None
        with StoreReader(db_path) as reader:
            return reader.verify_audit()

    return await asyncio.to_thread(read)


class EcmpOps:
    """The plan and the guarded apply of one leaf (see the module doc)."""

    def __init__(self, inventory: Inventory, db_path: Path, settings: EcmpSettings, *,
                 pool: SshPool | None = None, writer: StoreWriter | None = None) -> None:
        self.inventory = inventory
        self.db_path = db_path
        self.settings = settings
        self._pool = pool
        self._writer = writer
        self._own_pool: SshPool | None = None
        self._own_writer: StoreWriter | None = None

    @property
    def pool(self) -> SshPool:
        if self._pool is None:
            self._pool = self._own_pool = SshPool(self.inventory.hosts, known_hosts=self.inventory.known_hosts)
        return self._pool

    def _writer_started(self) -> StoreWriter:
        if self._writer is None:
            self._writer = self._own_writer = StoreWriter(self.db_path).start()
        return self._writer

    async def balance(self, leaf: str) -> LeafBalance | None:
        """The leaf's balance from the store (fresh connection), None when it has no uplink data."""

        def read() -> LeafBalance | None:
            self._writer_started()  # creates the schema of a new store before reading it
            with StoreReader(self.db_path) as reader:
                found = leaf_balances(reader, self.inventory, self.settings.thresholds,
                                      window_s=self.settings.window_s, leaves=[leaf])
            return found[0] if found and found[0].uplinks else None

        return await asyncio.to_thread(read)

    async def plan(self, leaf: str) -> LeafPlan:
        """The remedies for ``leaf`` from the configuration it runs now (read over SSH)."""
        balance = await self.balance(leaf)
        return await plan_leaf(self.pool, self.inventory.host(leaf), balance)

    async def apply(self, plan: LeafPlan, remedy: Remedy, *, read_only: bool,
                    on_step: StepCallback) -> ApplyOutcome:
        """The guarded apply; every step is audited, the audit is flushed before this returns."""
        writer = self._writer_started()

        def open_reader() -> StoreReader:
            return StoreReader(self.db_path)

        reader = await asyncio.to_thread(open_reader)
        try:
            outcome = await guarded_apply(self.pool, self.inventory, reader, writer, plan, remedy, actor=actor(),
                                          settings=self.settings.apply_settings, read_only=read_only,
                                          on_step=on_step)
        finally:
            reader.close()
            await asyncio.to_thread(writer.flush, 30.0)
        return outcome

    async def close(self) -> None:
        """Close what this object opened itself; a shared pool or writer stays open."""
        if self._own_pool is not None:
            pool, self._own_pool, self._pool = self._own_pool, None, None
            await pool.close()
        if self._own_writer is not None:
            writer, self._own_writer, self._writer = self._own_writer, None, None
            await asyncio.to_thread(writer.close, 10.0)


__all__ = ["EcmpOps", "EcmpSettings", "LastChange", "actor", "last_changes", "read_audit", "read_balances",
           "read_balances_and_changes", "roles_inventory", "verify_audit"]
