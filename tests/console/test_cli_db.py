"""`fleet db info` and `fleet db vacuum` on a real history file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleet.console.cli import main
from fleet.fabric.samples import HostSample
from fleet.store.schema import SCHEMA_VERSION
from fleet.store.writer import StoreWriter


def _history(path: Path) -> None:
    with StoreWriter(path) as writer:
        for k in range(30):
            writer.put_samples(HostSample("gpu001", 1_700_000_000.0 + 10 * k,
                                          {("tx_bytes", "mlx5_0", "1"): float(k), ("gpu_temp_c", "gpu0", ""): 40.0}))


def test_info_json_reports_counts_span_and_bytes_per_sample(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    _history(path)
    result = CliRunner().invoke(main, ["db", "info", "--db", str(path), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["schema_version"] == SCHEMA_VERSION == 6
    assert info["stored_samples"] == 60
    assert info["rows"]["series"] == 2 and info["rows"]["latest"] == 1
    assert info["time_span"] == [1_700_000_000.0, 1_700_000_290.0]
    assert info["size_bytes"] > 0 and info["bytes_per_sample"] == info["size_bytes"] / 60


def test_info_text_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    _history(path)
    result = CliRunner().invoke(main, ["db", "info", "--db", str(path)])
    assert result.exit_code == 0
    assert f"schema version  {SCHEMA_VERSION}" in result.output and "stored samples  60" in result.output
    missing = CliRunner().invoke(main, ["db", "info", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 3 and "no fleet history" in missing.output  # nothing there (docs/exit-codes.md)


def test_default_path_follows_xdg_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    _history(tmp_path / "fleet" / "fleet.db")
    result = CliRunner().invoke(main, ["db", "info", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["path"] == str(tmp_path / "fleet" / "fleet.db")


def test_vacuum_keeps_the_data(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    _history(path)
    result = CliRunner().invoke(main, ["db", "vacuum", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert str(path) in result.output
    info = json.loads(CliRunner().invoke(main, ["db", "info", "--db", str(path), "--json"]).output)
    assert info["stored_samples"] == 60


def test_info_describes_an_older_file_without_upgrading_it(tmp_path: Path) -> None:
    import sqlite_utils

    from fleet.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    MIGRATIONS.apply(sqlite_utils.Database(path), stop_before="m002_rollups")
    result = CliRunner().invoke(main, ["db", "info", "--db", str(path), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["schema_version"] == 1 and info["time_span"] is None
