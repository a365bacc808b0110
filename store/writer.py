"""The store's only writer: one thread that owns the write connection.

Producers (the asyncio loop of the collector, probe runners, the action
engine) call the non-blocking ``put_*`` methods; they only append to a bounded
in-memory queue (:mod:`fleet.store.pending`). The writer thread takes batches from
it, writes each batch in one transaction, and between batches runs the
maintenance steps (sealing, rollups, retention) in slices of at most
``step_budget_s`` so that no write waits longer than that.

When a commit fails (disk full, read-only or moved file, I/O error) the batch
goes back to the front of the queue and the thread retries every ``retry_s``
seconds on a fresh connection until it works; meanwhile the queue keeps
accepting items, bounded as usual. After ``attempts`` failures in a row the
failure is surfaced: ``stats().failing`` says why in one line, :meth:`flush`
stops waiting for what cannot be written, and callers decide (``fleet collect``
stops with exit 3; the console shows STORE FAILING and keeps retrying, since
space may come back). What was committed before stays readable.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from fleet.fabric.events import Event
from fleet.fabric.records import (
    ActionRecord,
    HostRecord,
    HostStatus,
    JobRecord,
    PortRecord,
    ProbeRecord,
)
from fleet.fabric.samples import HostSample
from fleet.store.errors import write_failure
from fleet.store.ingest import Ingestor
from fleet.store.maintenance import Maintenance
from fleet.store.pending import Item, PendingQueue
from fleet.store.schema import connect, open_for_writing
from fleet.store.types import Retention, WriterStats


class StoreWriter:
    """Writes samples and records to the SQLite history at ``path`` from its own thread."""

    def __init__(
        self,
        path: Path | str,
        *,
        max_queued_samples: int = 4_000_000,
        batch_samples: int = 250_000,
        retention: Retention | None = None,
        block_s: float = 600.0,
        replay_s: float = 3600.0,
        step_budget_s: float = 0.03,
        retry_s: float = 1.0,
        attempts: int = 3,
        page_limit: int | None = None,
        linger_s: float = 0.25,
    ) -> None:
        """``max_queued_samples``: sample values held before back-pressure drops gauges;
        ``block_s``: seconds of points per sealed chunk; ``replay_s``: seconds host
        frames are kept after sealing, for fast whole-fleet replay; ``page_limit``: a cap on the
        file size in pages (``PRAGMA max_page_count``), e.g. for a disk quota; ``attempts``: failed
        writes in a row (``retry_s`` apart) before ``stats().failing`` reports it: a transient error
        (a lock held past the busy timeout, a brief I/O hiccup) is retried quietly; ``linger_s``: how long
        the thread lets items gather after the first one before it commits (``flush``, ``settle`` and
        ``close`` cut it short): a collector puts one sample per line, and one commit per few
        lines instead of per line saves most of the writer's fixed cost per transaction. A
        quarter second (~250 lines of a 1,024-node fleet at 1 s) writes each B-tree page a
        commit touches once for more lines, about 15 % less of the writer's CPU per line than
        0.05 s (``python -m benchmarks collect``), and the console, which redraws every
        second, sees a line at most that much later.
        """
        self.path = Path(path)
        self.retention = retention or Retention()
        if not 0 < block_s <= 86400:
            raise ValueError(f"block_s must be in (0, 86400] seconds, not {block_s}")
        self.block_s = block_s
        self.replay_s = replay_s
        self.step_budget_s = step_budget_s
        self.retry_s = retry_s
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {attempts}")
        self.attempts = attempts
        self.batch_samples = batch_samples
        self.linger_s = linger_s
        self._hurry = threading.Event()
        """Set while someone waits for what is queued: commit at once, do not linger."""
        self._page_limit = page_limit
        self._page_limit_changed = page_limit is not None
        self._queue = PendingQueue(max_queued_samples)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._written = 0
        self._samples_written = 0
        self._failing: str | None = None
        """Why writing fails, once it failed ``attempts`` times in a row; None while it works."""
        self._failures_in_row = 0
        self._failures = 0
        """Failed attempts since start: :meth:`flush` gives up after one more once failing."""
        self._maintaining = True
        self._busy_s = 0.0
        self._longest_step_s = 0.0
        open_for_writing(self.path).close()

    # --- lifecycle -------------------------------------------------------
    def start(self) -> StoreWriter:
        """Start the writer thread (idempotent); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="fleet-store-writer", daemon=True)
            self._thread.start()
        return self

    def close(self, timeout: float = 10.0) -> bool:
        """Write what is queued (up to ``timeout`` seconds), then stop; False if items were left.
        While writing is failing it does not wait for another retry: whoever closes has been told."""
        if self._thread is None or self._failing is not None:
            flushed = self._queue.queued == 0
        else:
            flushed = self.flush(timeout)
        self._stop.set()
        self._hurry.set()
        self._queue.wake()
        if self._thread is not None:
            self._thread.join(timeout)
        return flushed

    def __enter__(self) -> StoreWriter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- producers (any thread, never block) -----------------------------
    def put_samples(self, sample: HostSample) -> bool:
        """Queue one host's sample; False when back-pressure dropped queued gauge samples."""
        return self._queue.put(Item("samples", sample, len(sample.values)))

    def put_event(self, event: Event) -> None:
        self._queue.put(Item("event", event))

    def put_host_status(self, status: HostStatus) -> None:
        self._queue.put(Item("status", status))

    def put_hosts(self, hosts: list[HostRecord]) -> None:
        self._queue.put(Item("hosts", list(hosts)))

    def put_ports(self, ports: list[PortRecord]) -> None:
        self._queue.put(Item("ports", list(ports)))

    def put_probe(self, probe: ProbeRecord) -> None:
        self._queue.put(Item("probe", probe))

    def put_jobs(self, jobs: list[JobRecord], ts: float | None = None) -> None:
        """A full snapshot of the running jobs at ``ts`` (default: the newest job ``ts``, else now)."""
        when = ts if ts is not None else max((j.ts for j in jobs), default=time.time())
        self._queue.put(Item("jobs", (when, list(jobs))))

    def put_action(self, action: ActionRecord) -> None:
        self._queue.put(Item("action", action))

    def put_baseline(self, name: str, ts: float, data: dict[str, Any]) -> None:
        """One baseline (``fleet baseline take``): its numbers, keys with units."""
        self._queue.put(Item("baseline", (name, ts, dict(data))))

    def set_page_limit(self, pages: int | None) -> None:
        """Change the file size cap (``None``: no cap beyond SQLite's own)."""
        self._page_limit = pages
        self._page_limit_changed = True
        self._queue.wake()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far is committed; False on timeout, or as soon as a
        retry fails while writing is failing (a full disk is not waited out)."""
        self._hurry.set()
        since = self._failures
        return self._queue.wait_idle(
            timeout, give_up=lambda: self._failing is not None and self._failures > since)

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until everything is committed and sealing, rollups and expiry have caught up."""
        self._hurry.set()
        since = self._failures
        return self._queue.wait_idle(timeout, lambda: not self._maintaining,
                                     give_up=lambda: self._failing is not None and self._failures > since)

    def wait_failing(self, timeout: float) -> str | None:
        """Wait until writing fails (disk full, read-only file); the reason, or None on timeout."""
        self._queue.wait_for(lambda: self._failing is not None, timeout)
        return self._failing

    def stats(self) -> WriterStats:
        failing = self._failing
        queued = self._queue.queued_samples + self._queue.queued
        return WriterStats(
            queued=queued,
            written=self._written,
            samples_written=self._samples_written,
            dropped=self._queue.dropped,
            failing=failing,
            in_memory=queued if failing else 0,
            busy_s=self._busy_s,
            longest_step_s=self._longest_step_s,
        )

    # --- the writer thread -----------------------------------------------
    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        ingestor: Ingestor | None = None
        maintenance: Maintenance | None = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = connect(self.path)
                    self._page_limit_changed = True
                    ingestor = Ingestor(conn)
                    maintenance = Maintenance(conn, ingestor.catalog, self.retention, self.block_s,
                                              self.replay_s)
                assert ingestor is not None and maintenance is not None
                if self._page_limit_changed:
                    self._page_limit_changed = False
                    limit = self._page_limit if self._page_limit is not None else 4294967294
                    conn.execute(f"PRAGMA max_page_count = {int(limit)}")
                if not maintenance.has_work() and self._maintaining:
                    self._maintaining = False
                    self._queue.wake()
                idle_wait = None if not maintenance.has_work() else 0.0
                waited = self._linger(idle_wait)
                batch = self._queue.take(self.batch_samples, 0.0 if waited else idle_wait)
                if batch:
                    self._maintaining = True
                    self._commit(conn, ingestor, batch)
                if self._failing is None and maintenance.has_work():
                    self._maintain(conn, maintenance)
            except Exception as error:
                self._failures_in_row += 1
                self._failures += 1
                if self._failures_in_row >= self.attempts:
                    self._failing = write_failure(error, self.path)
                self._queue.wake()
                if conn is not None:
                    _safe_close(conn)
                conn = None
                self._stop.wait(self.retry_s)
        if conn is not None:
            _safe_close(conn)

    def _linger(self, idle_wait: float | None) -> bool:
        """With nothing else to do (``idle_wait`` None), wait for something to be queued, then give
        the items behind it ``linger_s`` to arrive (unless hurried); False when it did not wait.
        While maintenance has work its steps between batches give the queue that time instead."""
        if self.linger_s <= 0 or self._failing is not None or idle_wait is not None:
            return False
        if self._queue.queued == 0:
            self._hurry.clear()  # whoever hurried has what they waited for
        if self._queue.wait_items(None) and self._queue.queued_samples < self.batch_samples:
            self._hurry.wait(self.linger_s)
        return True

    def _commit(self, conn: sqlite3.Connection, ingestor: Ingestor, batch: list[Item]) -> None:
        began = time.perf_counter()
        try:
            conn.execute("BEGIN IMMEDIATE")
            written = ingestor.write(batch)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            self._queue.give_back(batch)
            raise
        self._written += written.samples + written.records
        self._samples_written += written.samples
        self._busy_s += time.perf_counter() - began
        self._failures_in_row = 0
        self._failing = None
        self._queue.done(batch)

    def _maintain(self, conn: sqlite3.Connection, maintenance: Maintenance) -> None:
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        try:
            maintenance.step(began + self.step_budget_s)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            took = time.perf_counter() - began
            self._busy_s += took
            self._longest_step_s = max(self._longest_step_s, took)


def _safe_close(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn.close()
