"""What a new probe is compared with, read from a real store: the same pair's previous result (same kind,
test, NICs; successful; older) and the newest baseline's value for its part."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.probes.history import BaselineValue, baseline_value, previous_probe
from fleet.fabric.baseline import Baseline, FleetShape, part_id
from fleet.fabric.records import ProbeRecord
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def lat(ts: float, src: str = "gpu001", dst: str = "gpu002", nic: str = "mlx5_0", ok: bool = True,
        test: str = "ib_send_lat", kind: str = "lat") -> ProbeRecord:
    return ProbeRecord(ts=ts, kind=kind, src=src, dst=dst, src_nic=nic, dst_nic=nic, ok=ok, params={"test": test},
                       result={"p99_usec": ts / 100})


def baseline(label: str, ts: float, parts: dict[str, dict[str, float]]) -> dict[str, object]:
    return Baseline(label=label, ts=ts, tool_version="test", shape=FleetShape(), parts=parts).to_json()


def test_previous_is_the_same_pair_nics_and_test_before_it(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    with StoreWriter(db) as writer:
        for record in (lat(100), lat(200), lat(250, ok=False), lat(260, nic="mlx5_1"), lat(270, dst="gpu003"),
                       lat(280, test="ib_write_lat"), lat(290, kind="bw", test="ib_send_bw"), lat(400)):
            writer.put_probe(record)
        assert writer.flush(timeout=10)
    with StoreReader(db) as reader:
        previous = previous_probe(reader, lat(300))
        assert previous is not None and previous.ts == 200
        assert previous_probe(reader, lat(100)) is None
        bw = previous_probe(reader, lat(500, kind="bw", test="ib_send_bw"))
        assert bw is not None and bw.ts == 290


def test_baseline_value_is_the_newest_baselines_pair_or_nic(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    with StoreWriter(db) as writer:
        writer.put_baseline("old", 10.0, baseline("old", 10.0, {part_id("pair", 0, "gpu002", "gpu001"):
                                                               {"p99_usec": 9.0}}))
        writer.put_baseline("new", 20.0, baseline("new", 20.0, {
            part_id("pair", 0, "gpu002", "gpu001"): {"p99_usec": 2.5},
            part_id("nic", "gpu001", "mlx5_0"): {"bw_avg_gbps": 390.0}}))
        assert writer.flush(timeout=10)
    with StoreReader(db) as reader:
        # the pair was measured the other way round: either direction counts
        assert baseline_value(reader, lat(300)) == BaselineValue("new", 20.0, "p99_usec", 2.5)
        assert baseline_value(reader, lat(300, kind="bw", test="ib_send_bw")) == BaselineValue(
            "new", 20.0, "bw_avg_gbps", 390.0)
        assert baseline_value(reader, lat(300, nic="mlx5_3")) is None  # another rail: not in the baseline


def test_no_baseline_stored(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    with StoreWriter(db) as writer:
        writer.put_probe(lat(1))
        assert writer.flush(timeout=10)
    with StoreReader(db) as reader:
        assert baseline_value(reader, lat(2)) is None
