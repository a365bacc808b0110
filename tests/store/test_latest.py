"""`latest` holds the newest value of every series, upserted on write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from store_samples import T0, nic_sample

from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def test_latest_is_upserted_one_row_per_host(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        for k in range(5):
            for host in ("n1", "n2"):
                writer.put_samples(nic_sample(host, T0 + 10 * k, k))
    assert sqlite3.connect(fresh_db).execute("SELECT count(*) FROM latest").fetchone()[0] == 2
    reader = StoreReader(fresh_db)
    points = reader.latest()
    assert len(points) == 2 * 7
    temps = reader.latest(hosts=["n2"], metrics=["gpu_temp_c"])
    assert [(p.host, p.device, p.ts, p.value) for p in temps] == [("n2", "gpu0", T0 + 40, 44.0)]


def test_a_late_sample_does_not_replace_a_newer_value(fresh_db: Path) -> None:
    key = ("gpu_temp_c", "gpu0", "")
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(HostSample("n1", T0 + 20, {key: 50.0}))
        writer.put_samples(HostSample("n1", T0 + 10, {key: 40.0, ("tx_gbps", "mlx5_0", "1"): 1.5}))
    points = {p.metric: p for p in StoreReader(fresh_db).latest()}
    assert (points["gpu_temp_c"].ts, points["gpu_temp_c"].value) == (T0 + 20, 50.0)
    assert (points["tx_gbps"].ts, points["tx_gbps"].value) == (T0 + 10, 1.5)


def test_latest_survives_a_restart_of_the_writer(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(nic_sample("n1", T0, 0))
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(HostSample("n1", T0 + 10, {("gpu_temp_c", "gpu0", ""): 60.0}))
    points = {(p.metric, p.device): p for p in StoreReader(fresh_db).latest()}
    assert len(points) == 7
    assert points[("gpu_temp_c", "gpu0")].value == 60.0
    assert points[("tx_bytes", "mlx5_1")].value == 1.0
    # an unchanged error counter after the restart is not stored again
    assert sqlite3.connect(fresh_db).execute("SELECT count(*) FROM changes").fetchone()[0] == 2


def test_a_reader_sees_new_values_and_reuses_unchanged_hosts(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db).start()
    writer.put_samples(nic_sample("n1", T0, 0))
    writer.put_samples(nic_sample("n2", T0, 0))
    assert writer.flush(10)
    reader = StoreReader(fresh_db)
    first = {(p.host, p.metric, p.device): p for p in reader.latest()}
    unchanged = reader._latest["n2"]
    writer.put_samples(nic_sample("n1", T0 + 10, 1))
    assert writer.flush(10)
    writer.close()
    second = {(p.host, p.metric, p.device): p for p in reader.latest()}
    assert second[("n1", "tx_bytes", "mlx5_0")].value == 1_000_000.0
    assert second[("n2", "tx_bytes", "mlx5_0")] == first[("n2", "tx_bytes", "mlx5_0")]
    assert reader._latest["n2"] is unchanged  # its row was not read again
    arrays = reader.latest_arrays(metrics=["gpu_temp_c"])
    assert sorted(arrays.values.tolist()) == [40.0, 41.0]
    assert arrays.points() == reader.latest(metrics=["gpu_temp_c"])


def test_a_filter_sees_series_created_after_the_reader_opened(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db).start()
    writer.put_samples(nic_sample("n1", T0, 0, nics=1))
    assert writer.flush(10)
    reader = StoreReader(fresh_db)
    assert len(reader.latest(metrics=["tx_bytes"])) == 1
    writer.put_samples(nic_sample("n2", T0 + 10, 1, nics=1))
    assert writer.flush(10)
    writer.close()
    assert sorted(p.host for p in reader.latest(metrics=["tx_bytes"])) == ["n1", "n2"]
    assert sorted(p.host for p in reader.as_of(T0 + 10, metrics=["tx_bytes", "symbol_error"])
                  if p.metric == "symbol_error") == ["n1", "n2"]
