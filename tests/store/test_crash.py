"""kill -9 of a writer process during a burst loses at most the batch in flight, never the file."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from fleet.store.reader import StoreReader

WRITER = r"""
import sys
from fleet.fabric.samples import HostSample
from fleet.store.writer import StoreWriter

writer = StoreWriter(sys.argv[1], batch_samples=2000).start()
k = 0
while True:
    for host in range(20):
        writer.put_samples(HostSample(f"n{host}", 1_700_000_000.0 + 10 * k,
            {("tx_bytes", f"mlx5_{d}", "1"): float(k) for d in range(50)}))
    if k % 5 == 4:
        writer.flush(30)
        print(k, flush=True)  # every tick up to k is committed
    k += 1
"""


def test_kill_9_during_a_burst(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout is not None
    committed = -1
    for line in proc.stdout:
        committed = int(line)
        if committed >= 120:  # past the first sealed block: frames, chunks and latest all in use
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert committed >= 120

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    reader = StoreReader(path)
    for host in ("n0", "n19"):
        series = reader.series(host, "tx_bytes", "mlx5_49", "1", start=1_700_000_000.0,
                               end=1_700_000_000.0 + 10 * (committed + 100))
        # everything acknowledged is there, in order, without gaps
        assert series.avg[: committed + 1] == [float(k) for k in range(committed + 1)]
        assert series.avg == [float(k) for k in range(len(series.avg))]
