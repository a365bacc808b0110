"""Maintenance runs in small units: a step stops at its deadline with the rest left for later."""

from __future__ import annotations

import time
from pathlib import Path

from store_samples import T0, nic_sample

from fleet.store.ingest import Ingestor
from fleet.store.maintenance import Maintenance
from fleet.store.pending import Item
from fleet.store.schema import connect
from fleet.store.types import Retention
from fleet.store.writer import StoreWriter


def test_a_step_past_its_deadline_does_one_unit(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db)  # never started: the test drives maintenance by hand
    writer.close()
    conn = connect(fresh_db)
    ingestor = Ingestor(conn)
    samples = [nic_sample(f"n{h}", T0 + 10 * k, k) for k in range(80) for h in range(5)]
    conn.execute("BEGIN IMMEDIATE")
    ingestor.write([Item("samples", s, len(s.values)) for s in samples])
    conn.execute("COMMIT")
    maintenance = Maintenance(conn, ingestor.catalog, Retention(), block_s=600)

    def unsealed_hosts() -> int:
        return conn.execute(
            "SELECT count(DISTINCT host) FROM frames WHERE sealed = 0 AND ts_ms < ?",
            (int((T0 + 600) * 1000),)).fetchone()[0]

    assert unsealed_hosts() == 5
    maintenance.step(deadline=time.perf_counter())  # no time left: still one unit of progress
    assert unsealed_hosts() == 4 and maintenance.has_work()
    maintenance.step(deadline=time.perf_counter() + 30)
    assert unsealed_hosts() == 0
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 5 * 3  # tx_bytes, tx_gbps, gpu_temp_c
