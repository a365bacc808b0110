"""The writer lets its WAL gather :data:`store.writer.CHECKPOINT_PAGES` pages before a commit
checkpoints it (fewer copies of pages a streaming fleet rewrites, fewer fsyncs); readers see every
commit meanwhile, and closing the writer leaves all of it in the file, intact."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from store_samples import T0

from fabric.samples import HostSample
from store.reader import StoreReader
from store.writer import CHECKPOINT_PAGES, StoreWriter

_HOSTS = 30
_TICKS = 40
_SERIES = 250


def _sample(host: int, tick: int) -> HostSample:
    return HostSample(f"n{host}", T0 + tick,
                      {("tx_bytes", f"mlx5_{d}", "1"): float(1000 * tick + d + host / 8) for d in range(_SERIES)})


def test_the_wal_gathers_pages_and_readers_see_every_commit(fresh_db: Path) -> None:
    wal = Path(f"{fresh_db}-wal")
    with StoreWriter(fresh_db, linger_s=0.0) as writer:
        for tick in range(_TICKS):
            for host in range(_HOSTS):
                assert writer.put_samples(_sample(host, tick))
            assert writer.flush(30)
        probe = sqlite3.connect(fresh_db)
        page = int(probe.execute("PRAGMA page_size").fetchone()[0])
        probe.close()
        in_wal = wal.stat().st_size // (page + 24)
        # ~2 pages a frame: past SQLite's default 1,000, short of ours, so never checkpointed
        assert 2_000 < in_wal < CHECKPOINT_PAGES
        reader = StoreReader(fresh_db)
        latest = {(p.host, p.device): p.value for p in reader.latest([f"n{h}" for h in range(_HOSTS)])}
        assert latest == {(f"n{h}", f"mlx5_{d}"): float(1000 * (_TICKS - 1) + d + h / 8)
                          for h in range(_HOSTS) for d in range(_SERIES)}
        series = reader.series("n7", "tx_bytes", "mlx5_3", "1", start=T0, end=T0 + _TICKS)
        assert series.avg == [float(1000 * t + 3 + 7 / 8) for t in range(_TICKS)]
        reader.close()
    assert not os.path.exists(wal) or wal.stat().st_size == 0  # the last connection checkpointed it all
    conn = sqlite3.connect(fresh_db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM frames").fetchone()[0] == _HOSTS * _TICKS
    conn.close()
