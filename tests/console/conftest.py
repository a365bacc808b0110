"""Fixtures of the console tests: a real store file and an app reading it on a fixed clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from console_waits import NOW
from fleetstore import fill_store

from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.store.writer import StoreWriter


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, StoreWriter]]:
    path = tmp_path / "fleet.db"
    writer = fill_store(path)
    yield path, writer
    writer.close(timeout=10.0)


@pytest.fixture
def make_app(store: tuple[Path, StoreWriter], tmp_path: Path) -> Callable[..., FleetApp]:
    path, _writer = store

    def make(*, at: float | None = None, read_only: bool = False, theme: str = "fleet-dark",
             refresh_s: float = 0.2, keymap: dict[str, str] | None = None,
             diagnose: bool = False) -> FleetApp:
        # The diagnosis worker adds finding events to the store; tests of other features leave it off.
        config = Config(db_path=path, read_only=read_only, theme=theme, at_ts=at,
                        refresh_s=refresh_s, keymap=keymap or {}, diagnose=diagnose,
                        screenshot_dir=tmp_path / "screenshots", config_path=tmp_path / "config.toml")
        return FleetApp(config, Feed(lambda: open_store_loader(path), refresh_s=refresh_s,
                                     now=lambda: NOW))

    return make
