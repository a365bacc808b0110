"""Where the console's data comes from: the store (always) and the collector (live, with an
inventory). No Textual here; the app runs these as workers and posts what they return.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleet.console.reader_thread import ReaderThread
from fleet.console.snapshot import SnapshotLoader, StoreReading
from fleet.console.view_memory import ViewMemory
from fleet.console.view_model import ConsoleView, build_view
from fleet.fabric.health import HealthThresholds
from fleet.fabric.records import HostStatus


def open_store_loader(db_path: Path) -> SnapshotLoader:
    from fleet.store.reader import StoreReader

    reader: StoreReading = StoreReader(db_path)
    return SnapshotLoader(reader)


class Feed:
    """Reads views of the fleet through one reader thread."""

    def __init__(
        self,
        open_loader: Callable[[], SnapshotLoader],
        *,
        thresholds: HealthThresholds | None = None,
        refresh_s: float = 1.0,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._thread: ReaderThread[SnapshotLoader] = ReaderThread(open_loader)
        self._thresholds = thresholds or HealthThresholds()
        self._refresh_s = refresh_s
        self._memory = ViewMemory()
        """Sparklines and steady worst NICs; touched only on the reader thread."""
        self.now = now

    async def load_view(self, cursor_ts: float | None, *, with_values: bool = True) -> ConsoleView:
        now_ts = self.now()
        clock = time.monotonic()
        thresholds, refresh_s, memory = self._thresholds, self._refresh_s, self._memory

        def read(loader: SnapshotLoader) -> ConsoleView:
            snapshot = loader.load(cursor_ts, now_ts, clock, with_values=with_values)
            return memory.apply(build_view(snapshot, thresholds, refresh_s), loader.reader)

        return await self._thread.call(read)

    async def read(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(reader)`` on the reader thread (node detail, job latency, ...)."""
        return await self._thread.call(lambda loader: fn(loader.reader))

    def close(self) -> None:
        self._thread.close()


async def run_collector(
    inventory: Any,
    writer: Any,
    on_status: Callable[[HostStatus], None],
    on_round: Callable[[Any], None],
    on_writer_problem: Callable[[str], None],
    on_start: Callable[[Any], None] | None = None,
) -> None:
    """Collect from the inventory into the store until cancelled (live mode only); closes the
    writer (``fleet.store.writer.StoreWriter``, started) when done. ``on_start`` gets the
    ``fleet.collectors.engine.Collector`` before it runs (the probes share its SSH pool)."""
    from fleet.collectors.engine import Collector

    def round_done(summary: Any) -> None:
        stats = writer.stats()
        problem = stats.failing or ""
        if not problem and stats.dropped:
            problem = f"{stats.dropped:,} samples dropped (writer behind)"
        on_writer_problem(problem)
        on_round(summary)

    collector = Collector(inventory, writer, on_status=on_status, on_round=round_done)
    if on_start is not None:
        on_start(collector)
    try:
        await collector.run()
    finally:
        await collector.close()
        writer.close(timeout=5.0)
