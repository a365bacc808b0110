"""1 min and 1 h rollups: min/avg/max (and p50/p99 for latencies), computed once the data is sealed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from store_samples import T0

from fleet.fabric.samples import HostSample
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

LATENCY = ("collect_seconds", "", "")
GAUGE = ("gpu_power_w", "gpu0", "")


def _values(k: int) -> tuple[float, float]:
    rng = np.random.default_rng(k)
    return float(np.round(rng.uniform(0.2, 3.0), 3)), float(np.round(rng.normal(300, 40), 3))


def _expected(ts: np.ndarray, values: np.ndarray, bucket_s: float, start: float, end: float) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ts": [], "min": [], "avg": [], "max": [], "p50": [], "p99": []}
    for b in np.arange(start, end, bucket_s):
        part = values[(ts >= b) & (ts < b + bucket_s)]
        if len(part) == 0:
            continue
        out["ts"].append(float(b))
        out["min"].append(float(part.min()))
        out["avg"].append(float(part.sum() / len(part)))
        out["max"].append(float(part.max()))
        p50, p99 = np.percentile(part, [50, 99])
        out["p50"].append(float(p50))
        out["p99"].append(float(p99))
    return out


def test_rollups_are_stored_and_match_the_raw_points(fresh_db: Path) -> None:
    step_s, count = 30.0, int(26 * 3600 / 30)  # 26 h: one whole day gets its 1 h rollup
    ts = T0 + step_s * np.arange(count)
    lat, power = np.array([_values(k) for k in range(count)]).T
    writer = StoreWriter(fresh_db).start()
    for k in range(count):
        writer.put_samples(HostSample("n1", float(ts[k]), {LATENCY: float(lat[k]), GAUGE: float(power[k])}))
    assert writer.settle(60)
    writer.close()
    conn = sqlite3.connect(fresh_db)
    assert conn.execute("SELECT count(*) FROM rollup_1m").fetchone()[0] == 2 * 2  # 2 groups x 2 days
    assert conn.execute("SELECT count(*) FROM rollup_1h").fetchone()[0] >= 2

    reader = StoreReader(fresh_db)
    start, end = T0 + 3600, T0 + 3 * 3600  # stored 1 min rollups
    got = reader.series("n1", *LATENCY, start=start, end=end - 1, resolution="1m")
    want = _expected(ts, lat, 60, start, end)
    assert got.ts == want["ts"]
    assert got.min == want["min"] and got.max == want["max"]
    assert np.allclose(got.avg, want["avg"], rtol=1e-12)
    assert got.p50 == want["p50"] and got.p99 == want["p99"]

    day0 = (T0 // 86400) * 86400
    hourly = reader.series("n1", *GAUGE, start=day0, end=day0 + 86400 - 1, resolution="1h")
    want = _expected(ts, power, 3600, day0, day0 + 86400)
    assert hourly.ts == want["ts"] and hourly.max == want["max"] and hourly.min == want["min"]
    assert np.allclose(hourly.avg, want["avg"], rtol=1e-12)
    assert hourly.p50 is None  # not a latency metric

    # the newest hours are not rolled up yet: computed on the fly, same numbers
    tail_start = T0 + 25 * 3600
    tail = reader.series("n1", *GAUGE, start=tail_start, end=ts[-1], resolution="1m")
    want = _expected(ts, power, 60, tail_start, float(ts[-1]) + 1)
    assert tail.ts == want["ts"] and tail.max == want["max"]


def test_counter_rollups_keep_the_last_value_of_each_bucket(fresh_db: Path) -> None:
    key = ("tx_bytes", "mlx5_0", "1")
    count = int(3 * 3600 / 10)
    with StoreWriter(fresh_db) as writer:
        for k in range(count):
            writer.put_samples(HostSample("n1", T0 + 10 * k, {key: float(k * k)}))
        assert writer.settle(60)
    assert sqlite3.connect(fresh_db).execute("SELECT count(*) FROM rollup_1m").fetchone()[0] >= 1
    got = StoreReader(fresh_db).series("n1", *key, start=T0, end=T0 + 2 * 3600 - 1, resolution="1m")
    last = [float((6 * m + 5) ** 2) for m in range(120)]  # k = 6m + 5 ends minute m
    assert got.ts == [T0 + 60 * m for m in range(120)]
    assert got.max == last and got.min == last and got.avg == last
