"""A store holding the synthetic fleet's first readings, as the console and the exporter find it."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from benchmarks._synthetic_fleet import SyntheticFleet
from benchmarks.report import BenchmarkFailed
from fleet.fabric.records import HostRecord, HostStatus
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

TICKS = 3
"""Readings per series written (10 s apart): enough for every rate to have a value."""


def _fill(path: str, nodes: int, start_ts: float) -> None:
    fleet = SyntheticFleet(nodes, start_ts)
    with StoreWriter(path) as writer:
        writer.put_hosts([HostRecord(name, "node", group=i // 32) for i, name in enumerate(fleet.names)])
        for name in fleet.names:
            writer.put_host_status(HostStatus(name, HostState.OK, start_ts - 60))
        for samples in fleet.ticks(TICKS):
            for sample in samples:
                writer.put_samples(sample)
        writer.flush(600.0)


def fill_store(db: Path, nodes: int, start_ts: float) -> None:
    """Write ``nodes`` hosts, each up since a minute before ``start_ts``, and :data:`TICKS` readings
    of every series from ``start_ts`` on, in a child process, so that its memory is not the
    measuring process's."""
    child = multiprocessing.get_context("spawn").Process(target=_fill, args=(str(db), nodes, start_ts))
    child.start()
    child.join()
    if child.exitcode != 0:
        raise BenchmarkFailed(f"filling the store failed (exit {child.exitcode})")
