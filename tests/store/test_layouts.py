"""The writer's per-host layout cache (keys of the last sample -> columns) never files a value
under the wrong series: samples that keep, reorder, swap or drop keys read back exactly, whether
their values are dicts or a stream's ``PackedValues`` (read as an array, by their shared layout)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from store_samples import T0

from fleet.fabric.samples import HostSample, SeriesKey, SeriesLayouts
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

_KEYS: list[SeriesKey] = [
    *[(metric, f"mlx5_{n}", "1") for n in range(3) for metric in ("tx_bytes", "tx_gbps", "symbol_error")],
    ("gpu_temp_c", "gpu0", ""), ("gpu_temp_c", "gpu1", ""), ("optics_temp_c", "mlx5_0", ""),
]


def _samples(rng: random.Random, count: int) -> list[HostSample]:
    """A host whose samples mostly repeat the previous keys (the same key objects, in order),
    and now and then reorder them, swap one for another of the same count, or drop some."""
    keys = _KEYS[:8]
    out = []
    for k in range(count):
        roll = rng.random()
        if roll < 0.15:
            keys = rng.sample(keys, len(keys))
        elif roll < 0.3:
            missing = [key for key in _KEYS if key not in keys]
            if missing:
                keys = [*keys[:-1], rng.choice(missing)]
        elif roll < 0.4:
            keys = rng.sample(_KEYS, rng.randrange(1, len(_KEYS) + 1))
        values = {key: float(rng.randrange(0, 4) if key[0] == "symbol_error" else k * 100 + i)
                  for i, key in enumerate(keys)}
        out.append(HostSample("n1", T0 + k, values))
    return out


@pytest.mark.parametrize("as_packed", [False, True], ids=["dict", "packed"])
@pytest.mark.parametrize("seed", range(4))
def test_every_value_reads_back_under_its_own_series(fresh_db: Path, seed: int, as_packed: bool) -> None:
    rng = random.Random(seed)
    samples = _samples(rng, 120)
    if as_packed:
        layouts = SeriesLayouts()
        samples = [HostSample(s.host, s.ts, layouts.packed(s.values)) for s in samples]
    with StoreWriter(fresh_db, batch_samples=rng.choice((5, 40, 1000))) as writer:
        for sample in samples:
            assert writer.put_samples(sample)
            if rng.random() < 0.3:
                assert writer.flush(10)
    reader = StoreReader(fresh_db)
    for key in _KEYS:
        points = [(s.ts, s.values[key]) for s in samples if key in s.values]
        if key[0] == "symbol_error":  # error counters: stored when they change
            points = [p for i, p in enumerate(points) if i == 0 or p[1] != points[i - 1][1]]
        series = reader.series("n1", *key, start=T0, end=T0 + 200)
        assert list(zip(series.ts, series.avg, strict=True)) == points, key
    last = {key: (s.ts, s.values[key]) for s in samples for key in s.values}
    assert {(p.metric, p.device, p.port): (p.ts, p.value) for p in reader.latest(["n1"])} == last
