"""series(): raw points exactly as written, at the resolution its span calls for; top_n()."""

from __future__ import annotations

from pathlib import Path

from store_samples import T0, nic_sample

from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def test_raw_series_is_exact_across_frames_and_chunks(fresh_db: Path) -> None:
    writer = StoreWriter(fresh_db).start()
    for k in range(150):
        writer.put_samples(nic_sample("n1", T0 + 10 * k + 0.123, k))
    writer.settle(30)  # the first two blocks are sealed, the rest are frames
    writer.close()
    series = StoreReader(fresh_db).series("n1", "tx_gbps", "mlx5_1", "1", start=T0, end=T0 + 1500)
    assert series.resolution == "raw"
    assert series.ts == [T0 + 10 * k + 0.123 for k in range(150)]
    assert series.avg == [100.0 + 0.37 * ((k * 7 + 1) % 11) for k in range(150)]
    assert series.min == series.avg == series.max and series.p50 is None


def test_auto_resolution_follows_the_span(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        for k in range(30):
            writer.put_samples(nic_sample("n1", T0 + 10 * k, k))
    reader = StoreReader(fresh_db)
    hour = reader.series("n1", "gpu_temp_c", "gpu0", start=T0, end=T0 + 3600)
    day = reader.series("n1", "gpu_temp_c", "gpu0", start=T0 - 86400 + 300, end=T0 + 300)
    month = reader.series("n1", "gpu_temp_c", "gpu0", start=T0 - 30 * 86400, end=T0 + 300)
    assert (hour.resolution, day.resolution, month.resolution) == ("raw", "1m", "1h")
    assert len(hour.ts) == 30
    # 1 min buckets from unsealed data are computed on the fly, exactly
    assert day.ts[:2] == [T0, T0 + 60]
    assert (day.min[0], day.avg[0], day.max[0]) == (40.0, 250 / 6, 44.0)  # k = 0..5
    assert month.ts == [T0]
    assert reader.series("n1", "no_such_metric").ts == []


def test_top_n(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        for k in range(120):
            for i, host in enumerate(("a", "b", "c")):
                sample = nic_sample(host, T0 + 10 * k, k * (i + 1), nics=1)
                writer.put_samples(sample)
    reader = StoreReader(fresh_db)
    newest = reader.top_n("tx_bytes", n=2)
    assert [p.host for p in newest] == ["c", "b"]
    window = reader.top_n("gpu_temp_c", n=1, start=T0, end=T0 + 100)
    assert window[0].value == 44.0
    rising = reader.top_n("symbol_error", n=3, start=T0, end=T0 + 1190)
    assert [(p.host, p.value) for p in rising] == [("c", 3.0), ("b", 2.0), ("a", 1.0)]
    assert [(p.host, p.value) for p in reader.top_n("symbol_error", n=1)] == [("c", 3.0)]  # last hour
