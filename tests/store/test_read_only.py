"""A read-only file is reported clearly, the data waits in memory, and writing resumes once it is writable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from store_samples import T0, nic_sample

from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def _set_read_only(path: Path, read_only: bool) -> None:
    """chmod for ordinary users; root ignores modes, so for root the immutable attribute."""
    if os.geteuid() != 0:
        path.chmod(0o444 if read_only else 0o644)
        return
    done = subprocess.run(["chattr", "+i" if read_only else "-i", str(path)],
                          capture_output=True, text=True, timeout=10, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot make a file read-only as root here: {done.stderr.strip()}")


def test_read_only_file_is_reported_and_writing_resumes(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(nic_sample("n1", T0, 0))
    _set_read_only(fresh_db, True)
    try:
        writer = StoreWriter(fresh_db, retry_s=0.05).start()
        writer.put_samples(nic_sample("n1", T0 + 10, 1))
        reason = writer.wait_failing(10)
        assert reason is not None and "read-only" in reason and str(fresh_db) in reason
        assert writer.stats().in_memory > 0
    finally:
        _set_read_only(fresh_db, False)
    assert writer.flush(10)
    assert writer.stats().failing is None
    writer.close()
    series = StoreReader(fresh_db).series("n1", "tx_bytes", "mlx5_0", "1", start=T0, end=T0 + 20)
    assert series.avg == [0.0, 1_000_000.0]
