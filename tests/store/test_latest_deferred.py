"""A host's ``latest`` row is not rewritten for every sample (store.latest): readers merge the
frames newer than the row, and must see exactly what a row rewritten every time would hold."""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

from store_samples import T0

from fleet.fabric.samples import HostSample, SeriesKey
from fleet.store.latest import MAX_DEFER_MS, MAX_DEFERRED, MAX_GAP_MS
from fleet.store.maintenance import SEAL_GRACE_MS
from fleet.store.reader import StoreReader
from fleet.store.types import Retention
from fleet.store.writer import StoreWriter

Newest = dict[tuple[str, str, str, str], tuple[float, bytes]]


def _expected(samples: list[HostSample]) -> Newest:
    """Per series, the (time, value bits) of its newest sample; the later one wins on equal times."""
    newest: Newest = {}
    for sample in samples:
        ts = round(sample.ts * 1000) / 1000.0
        for (metric, device, port), value in sample.values.items():
            key = (sample.host, metric, device, port)
            if key not in newest or newest[key][0] <= ts:
                newest[key] = (ts, struct.pack("<d", value))
    return newest


def _seen(reader: StoreReader) -> Newest:
    return {(p.host, p.metric, p.device, p.port): (p.ts, struct.pack("<d", p.value)) for p in reader.latest()}


def _sample(rng: random.Random, host: str, ts: float, k: int, errors: float, extra: bool) -> HostSample:
    """Counters, gauges (one sometimes NaN) and error counters; ``extra`` adds a series."""
    values: dict[SeriesKey, float] = {}
    for nic in range(3):
        dev = f"mlx5_{nic}"
        values[("tx_bytes", dev, "1")] = float(1000 * k + nic)
        values[("tx_gbps", dev, "1")] = rng.choice([rng.random(), float("nan"), -0.0])
        values[("symbol_error", dev, "1")] = errors
        values[("link_downed", dev, "1")] = 0.0
    values[("gpu_temp_c", "gpu0", "")] = float(40 + k % 7)
    if extra:
        values[("gpu_power_w", "gpu0", "")] = 300.0 + k
    return HostSample(host, ts, values)


def test_readers_see_every_sample_as_if_the_row_were_written_each_time(fresh_db: Path) -> None:
    rng = random.Random(7)
    written: list[HostSample] = []
    polling = None
    writer = StoreWriter(fresh_db).start()
    try:
        errors = {"n1": 0.0, "n2": 0.0, "n3": 0.0}
        offsets = {"n1": 0.0, "n2": 0.3, "n3": 0.6}
        for k in range(60):
            for host in errors:
                if rng.random() < 0.1:  # an error counter changes: that sample goes into the row
                    errors[host] += 1
                # hosts a little apart (a reader looks for frames older than the newest one too),
                # now and then a late sample
                ts = T0 + k + offsets[host] + rng.choice([0.0, 0.0, 0.0, -2.5])
                sample = _sample(rng, host, ts, k, errors[host], extra=k > 20 and host == "n2")
                if rng.random() < 0.1:  # a sample with fewer series
                    sample = HostSample(host, ts, dict(list(sample.values.items())[:5]))
                writer.put_samples(sample)
                written.append(sample)
            if k % 3 == 0:
                assert writer.flush(10)
                polling = polling or StoreReader(fresh_db)
                assert _seen(polling) == _expected(written)  # a reader that keeps up, frame by frame
                assert _seen(StoreReader(fresh_db)) == _expected(written)  # a new reader, from the rows
    finally:
        writer.close()
    assert polling is not None
    assert _seen(polling) == _seen(StoreReader(fresh_db)) == _expected(written)
    rows = sqlite3.connect(fresh_db).execute("SELECT sum(version + 1) FROM latest").fetchone()[0]
    assert rows < len(written) / 2  # the point of it: most samples did not rewrite their row


def test_a_row_is_written_after_max_deferred_samples(fresh_db: Path) -> None:
    rng = random.Random(1)
    with StoreWriter(fresh_db) as writer:
        for k in range(1 + MAX_DEFERRED + 1):
            writer.put_samples(_sample(rng, "n1", T0 + k, k, 0.0, extra=False))
            assert writer.flush(10)
    conn = sqlite3.connect(fresh_db)
    # the first sample wrote the row, the next MAX_DEFERRED only frames, the one after the row again
    assert conn.execute("SELECT version, ts_ms FROM latest").fetchone() == (1, round((T0 + MAX_DEFERRED + 1) * 1000))


def test_a_host_sampled_less_often_than_streaming_writes_its_row_every_time(fresh_db: Path) -> None:
    rng = random.Random(4)
    with StoreWriter(fresh_db) as writer:
        for k in range(4):
            writer.put_samples(_sample(rng, "n1", T0 + k * (MAX_GAP_MS / 1000 + 0.001), k, 0.0, extra=False))
            assert writer.flush(10)
    version, ts_ms = sqlite3.connect(fresh_db).execute("SELECT version, ts_ms FROM latest").fetchone()
    assert (version, ts_ms) == (3, round((T0 + 3 * (MAX_GAP_MS / 1000 + 0.001)) * 1000))


def test_a_host_that_stops_gets_its_row_before_its_frames_are_sealed_and_expired(fresh_db: Path) -> None:
    assert MAX_DEFER_MS < SEAL_GRACE_MS
    rng = random.Random(2)
    quiet = [_sample(rng, "quiet", T0 + k, k, 0.0, extra=False) for k in range(3)]
    with StoreWriter(fresh_db) as writer:
        for sample in quiet:  # one at a time: the first writes the row, the others only frames
            writer.put_samples(sample)
            assert writer.flush(10)
    assert sqlite3.connect(fresh_db).execute("SELECT ts_ms FROM latest").fetchone()[0] == round(T0 * 1000)
    # a restarted writer knows which samples are left out of the row, and when they are due
    with StoreWriter(fresh_db, block_s=60, replay_s=0, retention=Retention(raw_s=3600)) as writer:
        for k in range(400):  # another host goes on: the store's clock passes sealing and expiry
            writer.put_samples(_sample(rng, "busy", T0 + k, k, float(k), extra=False))  # rows: errors change
            if k % 50 == 0:
                assert writer.flush(10)
        assert writer.settle(30)
    conn = sqlite3.connect(fresh_db)
    assert conn.execute("SELECT count(*) FROM frames WHERE host = 'quiet'").fetchone()[0] == 0  # expired
    assert conn.execute("SELECT ts_ms FROM latest WHERE host = 'quiet'").fetchone()[0] == round((T0 + 2) * 1000)
    seen = {key: value for key, value in _seen(StoreReader(fresh_db)).items() if key[0] == "quiet"}
    assert seen == _expected(quiet)


def test_a_restarted_writer_continues_from_the_frames_newer_than_the_rows(fresh_db: Path) -> None:
    rng = random.Random(3)
    first = [_sample(rng, "n1", T0 + k, k, 0.0, extra=True) for k in range(4)]
    with StoreWriter(fresh_db) as writer:
        for sample in first:
            writer.put_samples(sample)
            assert writer.flush(10)
    conn = sqlite3.connect(fresh_db)
    assert conn.execute("SELECT ts_ms FROM latest").fetchone()[0] == round(T0 * 1000)  # three samples in frames only
    # after the restart an unchanged error counter is not a change, and the newest values go on from the
    # frames (gpu_power_w, not in the samples after the restart, keeps its value of the last frame)
    second = [_sample(rng, "n1", T0 + 4, 4, 0.0, extra=False),
              HostSample("n1", T0 + 5, {("gpu_temp_c", "gpu0", ""): 99.0})]
    with StoreWriter(fresh_db) as writer:
        writer.put_samples(second[0])
        assert writer.flush(10)
        # the restart rewrote no row (a reader would re-read every host), and that sample only has a frame
        assert conn.execute("SELECT version, ts_ms FROM latest").fetchone() == (0, round(T0 * 1000))
        assert _seen(StoreReader(fresh_db)) == _expected(first + second[:1])
        writer.put_samples(second[1])  # no error counters, unlike the row's newest: the row is written
    assert _seen(StoreReader(fresh_db)) == _expected(first + second)
    assert conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 6  # the first values only
