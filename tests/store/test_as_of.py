"""as_of(): the fleet as it was at any past time, the same from unsealed frames and sealed chunks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_samples import T0, nic_sample

from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.types import Point
from fleet.store.writer import StoreWriter


def _by_key(points: list[Point]) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    return {(p.host, p.metric, p.device, p.port): (p.ts, p.value) for p in points}


@pytest.mark.parametrize("replay_s", [0.0, 3600.0])  # sealed frames dropped at once / kept
def test_as_of_is_exact_before_and_after_sealing(fresh_db: Path, replay_s: float) -> None:
    writer = StoreWriter(fresh_db, replay_s=replay_s).start()
    for k in range(200):  # 2000 s: three 600 s blocks sealed once the clock passes them
        for host in ("n1", "n2"):
            writer.put_samples(nic_sample(host, T0 + 10 * k + (0.25 if host == "n2" else 0), k))
    assert writer.flush(10)
    reader = StoreReader(fresh_db)
    asked = [T0 + 5, T0 + 595, T0 + 600, T0 + 1230.1, T0 + 1990]
    before = [_by_key(reader.as_of(ts)) for ts in asked]
    assert writer.settle(30)
    writer.close()
    conn = sqlite3.connect(fresh_db)
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    sealed_frames = conn.execute("SELECT count(*) FROM frames WHERE sealed = 1").fetchone()[0]
    assert (sealed_frames > 0) == (replay_s > 0)
    after = [_by_key(reader.as_of(ts)) for ts in asked]
    assert before == after

    at = after[3]  # T0 + 1230.1: n1's last sample is k = 123, n2's (0.25 s late) k = 122
    assert at[("n1", "tx_bytes", "mlx5_1", "1")] == (T0 + 1230, 123_000_001.0)
    assert at[("n2", "tx_bytes", "mlx5_0", "1")] == (T0 + 1220.25, 122_000_000.0)
    assert at[("n1", "gpu_temp_c", "gpu0", "")] == (T0 + 1230, 43.0)
    assert at[("n1", "symbol_error", "mlx5_0", "1")] == (T0 + 1000, 1.0)  # changed at k = 100
    assert len(at) == 2 * 7


def test_as_of_window_and_filters(fresh_db: Path) -> None:
    gauge, error = ("gpu_temp_c", "gpu0", ""), ("symbol_error", "mlx5_0", "1")
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(HostSample("quiet", T0, {gauge: 30.0, error: 5.0}))
        for k in range(100):
            writer.put_samples(nic_sample("busy", T0 + 10 * k, k))
    reader = StoreReader(fresh_db)
    early = _by_key(reader.as_of(T0 + 599))
    assert early[("quiet", *gauge)] == (T0, 30.0)
    late = _by_key(reader.as_of(T0 + 601))  # the quiet gauge is older than 10 minutes
    assert ("quiet", *gauge) not in late
    assert late[("quiet", *error)] == (T0, 5.0)  # error counters: the last value ever
    assert reader.as_of(T0 - 1) == []

    only = reader.as_of(T0 + 500, hosts=["busy"], metrics=["tx_bytes", "symbol_error"])
    assert sorted((p.metric, p.device, p.value) for p in only) == [
        ("symbol_error", "mlx5_0", 0.0), ("symbol_error", "mlx5_1", 0.0),
        ("tx_bytes", "mlx5_0", 50_000_000.0), ("tx_bytes", "mlx5_1", 50_000_001.0)]


def test_as_of_arrays_match_the_points(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        for k in range(30):
            writer.put_samples(nic_sample("n1", T0 + 10 * k, k))
    reader = StoreReader(fresh_db)
    arrays = reader.as_of_arrays(T0 + 100, metrics=["tx_bytes"])
    assert arrays.points() == reader.as_of(T0 + 100, metrics=["tx_bytes"])
    assert sorted(arrays.values.tolist()) == [10_000_000.0, 10_000_001.0]


def test_a_reader_follows_new_and_late_error_changes(fresh_db: Path) -> None:
    key = ("link_downed", "mlx5_0", "1")
    writer = StoreWriter(fresh_db).start()
    writer.put_samples(HostSample("n1", T0, {key: 0.0}))
    writer.put_samples(HostSample("n2", T0, {key: 0.0}))
    assert writer.flush(10)
    reader = StoreReader(fresh_db)
    assert {p.host: p.value for p in reader.as_of(T0 + 100)} == {"n1": 0.0, "n2": 0.0}
    writer.put_samples(HostSample("n1", T0 + 50, {key: 2.0}))  # newer than anything seen
    assert writer.flush(10)
    assert {p.host: p.value for p in reader.as_of(T0 + 100)} == {"n1": 2.0, "n2": 0.0}
    assert {p.host: p.value for p in reader.as_of(T0 + 40)} == {"n1": 0.0, "n2": 0.0}
    writer.put_samples(HostSample("n2", T0 + 30, {key: 1.0}))  # late: older than n1's change
    assert writer.flush(10)
    writer.close()
    assert {p.host: (p.ts, p.value) for p in reader.as_of(T0 + 100)} == {
        "n1": (T0 + 50, 2.0), "n2": (T0 + 30, 1.0)}


def test_sealed_as_of_takes_a_series_missing_from_the_newer_block_from_the_older_one(fresh_db: Path) -> None:
    """The chunk path reads a group's newest chunk first and an older chunk only for the series
    the newer one lacks (here mlx5_1, which stopped reporting at the block boundary)."""
    writer = StoreWriter(fresh_db, replay_s=0.0).start()
    for k in range(120):  # blocks [T0, T0+600) and [T0+600, T0+1200)
        sample = nic_sample("n1", T0 + 10 * k, k)
        values = {key: v for key, v in sample.values.items() if k < 58 or key[1] != "mlx5_1"}
        writer.put_samples(HostSample("n1", sample.ts, values))
    writer.put_samples(nic_sample("n1", T0 + 3 * 3600, 999))  # moves the clock: both blocks seal
    assert writer.settle(30)
    writer.close()
    assert sqlite3.connect(fresh_db).execute(
        "SELECT count(*) FROM frames WHERE ts_ms < ?", (int((T0 + 1200) * 1000),)).fetchone()[0] == 0
    at = _by_key(StoreReader(fresh_db).as_of(T0 + 905))
    assert at[("n1", "tx_bytes", "mlx5_0", "1")] == (T0 + 900, 90_000_000.0)
    assert at[("n1", "tx_bytes", "mlx5_1", "1")] == (T0 + 570, 57_000_001.0)  # from the older chunk
    assert at[("n1", "tx_gbps", "mlx5_1", "1")][0] == T0 + 570
    assert ("n1", "tx_bytes", "mlx5_1", "1") not in _by_key(StoreReader(fresh_db).as_of(T0 + 1175))
