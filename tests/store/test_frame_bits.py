"""The writer's fast frame path (a cached layout packs a sample's values with ``struct`` and puts
a cached head before them) stores exactly the bytes the general encoder gives for the same values,
converted as ``np.fromiter`` converts them: NaN payloads, -0.0, infinities, subnormals and Python
ints (also past 2**53) included."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import numpy as np
import pytest
from store_samples import T0

from fleet.fabric.samples import HostSample, SeriesKey
from fleet.store.codec import decode_frame, encode_frame
from fleet.store.ingest import Ingestor, ts_to_ms
from fleet.store.pending import Item
from fleet.store.schema import connect

_KEYS: list[SeriesKey] = [
    *[(metric, f"mlx5_{n}", "1") for n in range(4) for metric in ("tx_bytes", "tx_gbps", "symbol_error")],
    ("gpu_temp_c", "gpu0", ""), ("optics_rx_dbm", "mlx5_0", "1"),
]

_ODD = [math.nan, -math.nan, struct.unpack("d", struct.pack("Q", 0x7FF8_0000_DEAD_BEEF))[0], -0.0, 0.0,
        math.inf, -math.inf, 5e-324, 1.7976931348623157e308, 2**53 + 1, 2**64 + 3, -(2**63), 7, True,
        np.float64(0.1), 0.30000000000000004]
"""Values whose bits a careless conversion would change (the ints round as ``float(int)`` does)."""


def _samples(rng: random.Random, count: int) -> list[HostSample]:
    """One host; mostly the same keys in the same order (the cached layout's path), sometimes reordered."""
    keys = list(_KEYS)
    out = []
    for k in range(count):
        if rng.random() < 0.2:
            keys = rng.sample(keys, len(keys))
        values = {key: rng.choice(_ODD) if rng.random() < 0.5 else rng.uniform(-1e6, 1e6) for key in keys}
        out.append(HostSample("n1", T0 + k, values))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_frames_hold_the_general_encoders_bytes(fresh_db: Path, seed: int) -> None:
    rng = random.Random(seed)
    samples = _samples(rng, 60)
    conn = connect(fresh_db)
    ingestor = Ingestor(conn)
    for at in range(0, len(samples), 7):
        conn.execute("BEGIN IMMEDIATE")
        ingestor.write([Item("samples", s, len(s.values)) for s in samples[at : at + 7]])
        conn.execute("COMMIT")
    sid_of = {(m, d, p): sid for sid, m, d, p, kind in
              conn.execute("SELECT id, metric, device, port, kind FROM series") if kind != "error"}
    stored = dict(conn.execute("SELECT ts_ms, data FROM frames"))
    assert len(stored) == len(samples)
    for sample in samples:
        kept = [key for key in sample.values if key in sid_of]
        bits = np.fromiter((sample.values[key] for key in kept), dtype=np.float64, count=len(kept))
        sids = np.array([sid_of[key] for key in kept], dtype=np.int64)
        blob = stored[ts_to_ms(sample.ts)]
        assert blob == encode_frame(sids, bits)
        read_sids, values, _ = decode_frame(blob)
        order = np.argsort(sids)
        assert read_sids.tolist() == sids[order].tolist()
        assert values.view(np.uint64).tolist() == bits[order].view(np.uint64).tolist()
    conn.close()


def test_a_value_that_is_not_a_number_fails_the_batch_as_before(fresh_db: Path) -> None:
    """A non-number is refused (the batch is not written), as ``np.fromiter`` refused None."""
    conn = connect(fresh_db)
    ingestor = Ingestor(conn)
    good = HostSample("n1", T0, dict.fromkeys(_KEYS, 1.0))
    bad = HostSample("n1", T0 + 1, {**dict.fromkeys(_KEYS, 1.0), _KEYS[0]: None})  # type: ignore[dict-item]
    conn.execute("BEGIN IMMEDIATE")
    ingestor.write([Item("samples", good, len(good.values))])
    conn.execute("COMMIT")
    conn.execute("BEGIN IMMEDIATE")
    with pytest.raises((TypeError, struct.error)):
        ingestor.write([Item("samples", bad, len(bad.values))])
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM frames").fetchone()[0] == 1
    conn.close()
