"""A simulated fleet collected by N shards, each serving ``fleet export``, and a real Prometheus scraping them all.

Everything runs as it would on N collector boxes: ``fleet sim`` in a child process, one
``fleet export --collect --shard K/N`` per shard (or, ``frozen_after_s``, one ``fleet collect
--shard K/N --duration S`` per shard beside a plain ``fleet export`` of its store, so that the data
stops changing after S seconds while Prometheus holds its history), and Prometheus
(``helpers.prometheus``) with the shipped rules.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fleet.collectors.inventory import Inventory, load_inventory
from fleet.console.cli.export import READY_PREFIX
from fleet.console.cli.sim_process import SimProcess, start_sim
from fleet.store.errors import HistoryFileError
from fleet.store.reader import StoreReader
from helpers.prometheus import Prometheus, running_prometheus, scrape_config, wait_for

ROOT = Path(__file__).resolve().parents[2]
RULES = (ROOT / "deploy" / "prometheus" / "recording.rules.yml", ROOT / "deploy" / "prometheus" / "alerts.rules.yml")
FLEET = [sys.executable, "-c", "from fleet.console.cli import main; main()"]


@dataclass(frozen=True, slots=True)
class RunningShard:
    index: int
    db: Path
    url: str
    """The shard's /metrics URL."""

    @property
    def target(self) -> str:
        """HOST:PORT, as a scrape config names it."""
        return self.url.removeprefix("http://").removesuffix("/metrics")


@dataclass(frozen=True, slots=True)
class ShardedFleet:
    inventory: Inventory
    inventory_path: Path
    shards: tuple[RunningShard, ...]
    prometheus: Prometheus


@contextlib.contextmanager
def _process(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=output)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _served_url(process: subprocess.Popen[bytes], log: Path) -> str:
    def ready() -> str | None:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(READY_PREFIX):
                return line[len(READY_PREFIX):].strip()
        if process.poll() is not None:
            raise AssertionError(f"fleet export exited with {process.returncode}: {log.read_text(errors='replace')}")
        return None

    return wait_for(ready, 60, f"fleet export to listen ({log})")


def _collected(process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    status = wait_for(process.poll, timeout_s, f"fleet collect to finish ({log})")
    assert status in (0, 1), f"fleet collect exited with {status}: {log.read_text(errors='replace')}"


def _history_ready(db: Path) -> bool:
    """Whether ``fleet export`` can open ``db`` (the collector creates it as it starts)."""
    try:
        StoreReader(db).close()
    except (OSError, HistoryFileError, sqlite3.Error):
        return False
    return True


@contextlib.contextmanager
def sharded_fleet(folder: Path, *, scenario: str = "healthy", count: int = 2, frozen_after_s: float | None = None,
                  scrape_interval_s: float = 1.0, rule_files: tuple[Path, ...] = RULES) -> Iterator[ShardedFleet]:
    """The simulated ``scenario`` behind ``count`` shards and a Prometheus over them, all stopped afterwards."""
    sim: SimProcess = start_sim(scenario, folder / "sim")
    try:
        with contextlib.ExitStack() as stack:
            shards = []
            collects = []
            for k in range(1, count + 1):
                db = folder / f"shard{k}.db"
                shard = ["--shard", f"{k}/{count}", "--job-latency", "--inventory", str(sim.inventory), "--db", str(db)]
                if frozen_after_s is None:
                    log = folder / f"export{k}.log"
                    process = stack.enter_context(_process([*FLEET, "export", "--listen", "127.0.0.1:0", "--collect",
                                                            *shard], log))
                    shards.append(RunningShard(k, db, _served_url(process, log)))
                else:
                    log = folder / f"collect{k}.log"
                    collects.append((stack.enter_context(_process(
                        [*FLEET, "collect", "--duration", repr(frozen_after_s), *shard], log)), log))
            for k in range(1, len(collects) + 1):
                db = folder / f"shard{k}.db"
                wait_for(lambda db=db: _history_ready(db), 60, f"{db} to hold a history")
                export_log = folder / f"export{k}.log"
                exporter = stack.enter_context(_process([*FLEET, "export", "--listen", "127.0.0.1:0", "--db", str(db)],
                                                        export_log))
                shards.append(RunningShard(k, db, _served_url(exporter, export_log)))
            config = scrape_config([shard.target for shard in shards], interval_s=scrape_interval_s)
            prometheus = stack.enter_context(running_prometheus(folder / "prometheus", config, rule_files=rule_files))
            for process, log in collects:
                _collected(process, log, (frozen_after_s or 0) + 120)
            yield ShardedFleet(load_inventory(sim.inventory), sim.inventory, tuple(shards), prometheus)
    finally:
        sim.stop()
