"""Fixtures for the store tests: real SQLite files in tmp_path, small synthetic hosts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet.store.schema import open_for_writing
from fleet.store.writer import StoreWriter


@pytest.fixture
def fresh_db(tmp_path: Path) -> Path:
    """The path of a new, migrated, empty store."""
    path = tmp_path / "fleet.db"
    open_for_writing(path).close()
    return path


@pytest.fixture
def writer(fresh_db: Path) -> Iterator[StoreWriter]:
    w = StoreWriter(fresh_db).start()
    yield w
    w.close(timeout=10)
