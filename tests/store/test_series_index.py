"""The reader's series catalogue: loaded on first use, in bulk, and kept current incrementally."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store_samples import T0, nic_sample

from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.schema import connect
from fleet.store.series_index import SeriesIndex
from fleet.store.writer import StoreWriter


def _table(path: Path) -> list[tuple[int, str, str, str, str, str, int]]:
    return sqlite3.connect(path).execute(
        "SELECT id, host, metric, device, port, kind, group_id FROM series ORDER BY id").fetchall()


def _assert_matches_table(index: SeriesIndex, path: Path) -> None:
    rows = _table(path)
    assert index.max_sid == rows[-1][0]
    for sid, host, metric, device, port, kind, gid in rows:
        assert index.keys[sid] == (host, metric, device, port)
        assert bool(index.is_error[sid]) == (kind == "error")
        assert int(index.group[sid]) == gid
    for host in {r[1] for r in rows}:
        assert index.host_sids[host].tolist() == [r[0] for r in rows if r[1] == host]
        assert index.continuous[host].tolist() == [r[0] for r in rows if r[1] == host and r[5] != "error"]
    for metric in {r[2] for r in rows}:
        assert index.metric_sids[metric].tolist() == [r[0] for r in rows if r[2] == metric]
    assert index.error_sids.tolist() == [r[0] for r in rows if r[5] == "error"]


def test_the_index_equals_the_series_table_across_incremental_refreshes(fresh_db: Path) -> None:
    index = SeriesIndex()
    conn = connect(fresh_db, read_only=True)
    index.refresh(conn)  # empty store: nothing to read
    assert index.max_sid == 0
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(nic_sample("n1", T0, 0))
        writer.put_samples(nic_sample("n2", T0, 0))
    index.refresh(conn)
    _assert_matches_table(index, fresh_db)
    with StoreWriter(fresh_db) as writer:  # new series of a known host and group, and a new host
        writer.put_samples(nic_sample("n1", T0 + 10, 1, nics=3))
        writer.put_samples(nic_sample("n3", T0 + 10, 1))
        writer.put_samples(HostSample("n2", T0 + 20, {("gpu_temp_c", "gpu1", ""): 41.0,
                                                      ("port_rcv_errors", "mlx5_0", "1"): 0.0}))
    index.refresh(conn)
    _assert_matches_table(index, fresh_db)
    first = index.keys[1]
    assert first is not None
    host, device = first[0], first[2]
    same = [k for k in index.keys[1:] if k is not None and k[0] == host and k[2] == device]
    assert all(k[0] is host and k[2] is device for k in same)  # names are shared, not copied per series


def test_a_reader_opened_on_an_empty_store_sees_series_written_later(fresh_db: Path) -> None:
    reader = StoreReader(fresh_db)
    assert reader.latest() == []
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(nic_sample("n1", T0, 0))
    assert len(reader.latest()) == 7
    assert {p.metric for p in reader.as_of(T0)} == {"tx_bytes", "tx_gbps", "symbol_error", "gpu_temp_c"}
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(nic_sample("n1", T0 + 10, 1, nics=3))
    points = reader.latest()
    assert len(points) == 10
    assert {p.device for p in points} == {"mlx5_0", "mlx5_1", "mlx5_2", "gpu0"}
    assert {p.device for p in reader.as_of(T0 + 10)} == {"mlx5_0", "mlx5_1", "mlx5_2", "gpu0"}


def test_ids_with_gaps_land_at_their_own_index(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(HostSample("n1", T0, {("gpu_temp_c", "gpu0", ""): 40.0}))
    conn = sqlite3.connect(fresh_db)  # ids are never reused or skipped by the writer; the index must not assume it
    gid = conn.execute("SELECT group_id FROM series").fetchone()[0]
    conn.executemany("INSERT INTO series (id, host, metric, device, port, kind, group_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(7, "n1", "gpu_temp_c", "gpu3", "", "gauge", gid), (12, "n1", "gpu_temp_c", "gpu5", "", "gauge", gid)])
    conn.commit()
    index = SeriesIndex()
    index.refresh(connect(fresh_db, read_only=True))
    _assert_matches_table(index, fresh_db)
    assert index.keys[2:7] == [None] * 5
