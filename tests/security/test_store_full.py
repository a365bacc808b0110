"""A store that cannot write is loud: a one-line reason, exit 3, no sample claimed that was not stored,
the console's header says STORE FAILING, and what was committed before stays readable.

On a real small filesystem (a 3 MiB tmpfs, root only), on a read-only file, and
with SQLite's page cap (``PRAGMA max_page_count``), which gives the same SQLITE_FULL.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.disk import read_only_file, small_filesystem
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.cli import main
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.widgets.header import FleetHeader
from fleet.fabric.samples import HostSample
from fleet.store.info import db_info
from fleet.store.reader import StoreReader
from fleet.store.schema import open_for_writing
from fleet.store.writer import StoreWriter

T0 = 1_699_999_200.0


def _sample(k: int) -> HostSample:
    """200 counter values: each one a point in a frame, so points stored = values written."""
    return HostSample("n1", T0 + 10 * k, {("tx_bytes", f"mlx5_{d}", "1"): float(k * 1000 + d) for d in range(200)})


async def _fleet(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, main, list(args), catch_exceptions=False)


def test_the_writer_reports_only_what_it_committed_and_stops_waiting(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    open_for_writing(path).close()
    conn = sqlite3.connect(path)
    pages = conn.execute("PRAGMA page_count").fetchone()[0] + 6  # room for a few samples only
    conn.close()
    writer = StoreWriter(path, page_limit=pages, retry_s=0.05, attempts=3).start()
    writer.put_samples(_sample(0))
    assert writer.flush(10)  # one sample fits
    for k in range(1, 200):
        writer.put_samples(_sample(k))
    reason = writer.wait_failing(30)
    assert reason is not None and reason == f"cannot write {path}: the disk (or its size cap) is full"
    assert writer.flush(30) is False  # it gives up at the next failed retry: nothing more will fit
    stats = writer.stats()
    assert stats.failing == reason and stats.queued > 0
    writer.close(timeout=5)
    committed = db_info(path).stored_samples  # what was committed before stays readable
    assert stats.samples_written == committed and 200 <= committed < 200 * 200
    with StoreReader(path) as reader:
        assert reader.series("n1", "tx_bytes", "mlx5_7", "1", start=T0, end=T0 + 2000).avg[:1] == [7.0]


@pytest.mark.timeout(180)
async def test_collect_on_a_3_mib_filesystem_stops_with_exit_3(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "3m") as small:
        db = small / "fleet.db"
        async with running_fleet(small_scenario(), tmp_path / "sim") as inventory:
            result = await _fleet("collect", "--duration", "30", "--json", "--inventory", str(inventory),
                                  "--db", str(db))
            once = await _fleet("collect", "--once", "--inventory", str(inventory), "--db", str(db))
        assert result.exit_code == 3, result.output
        reason = f"fleet: store failing: cannot write {db}: the disk (or its size cap) is full"
        assert result.stderr.startswith(reason) and result.stderr.count("\n") == 1, result.stderr
        document = json.loads(result.stdout)
        assert document["store"]["failing"] == f"cannot write {db}: the disk (or its size cap) is full"
        assert document["samples_written"] < document["samples_collected"]
        assert db_info(db).stored_samples <= document["samples_written"]  # committed, readable, not over-claimed
        assert once.exit_code == 3 and once.stderr.startswith(reason), once.output


@pytest.mark.timeout(120)
async def test_collect_into_a_read_only_file_exits_3_and_keeps_what_it_had(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory:
        first = await _fleet("collect", "--once", "--inventory", str(inventory), "--db", str(db))
        assert first.exit_code == 0, first.output
        before = db_info(db).stored_samples
        with read_only_file(db):
            refused = await _fleet("collect", "--once", "--inventory", str(inventory), "--db", str(db))
    assert refused.exit_code == 3, refused.output
    assert refused.stderr.startswith(f"fleet: store failing: cannot write {db}: the file is read-only or was moved")
    assert "0 samples stored" in refused.stdout
    assert db_info(db).stored_samples == before > 0


@pytest.mark.timeout(120)
async def test_the_console_header_says_store_failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        first = await _fleet("collect", "--once", "--inventory", str(inventory_path), "--db", str(db))
        assert first.exit_code == 0, first.output
        with read_only_file(db):
            config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.3, diagnose=False)
            app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.3), load_inventory(inventory_path))
            async with app.run_test(size=(160, 40)) as pilot:
                failing: asyncio.Future[str] = asyncio.get_running_loop().create_future()

                def seen(reason: str) -> None:
                    if reason and not failing.done():
                        failing.set_result(reason)

                app.watch(app, "store_failing", seen)
                reason = await asyncio.wait_for(failing, 60)
                await pilot.pause()
                header = app.screen.query_one(FleetHeader)
                shown = str(header.render())
                assert "STORE FAILING" in shown and reason in shown
                assert reason == f"cannot write {db}: the file is read-only or was moved"
