"""Fixtures of the console tests: a real store file and an app reading it on a fixed clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fleetstore import T0, fill_store

from console.app import FleetApp
from console.config import Config
from console.feed import Feed, open_store_loader
from console.view_model import ConsoleView
from store.writer import StoreWriter

NOW = T0 + 1.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, StoreWriter]]:
    path = tmp_path / "fleet.db"
    writer = fill_store(path)
    yield path, writer
    writer.close(timeout=10.0)


@pytest.fixture
def make_app(store: tuple[Path, StoreWriter]) -> Callable[..., FleetApp]:
    path, _writer = store

    def make(*, at: float | None = None, read_only: bool = False, theme: str = "fleet-dark",
             refresh_s: float = 0.2, keymap: dict[str, str] | None = None,
             diagnose: bool = False) -> FleetApp:
        # The diagnosis worker adds finding events to the store; tests of other features leave it off.
        config = Config(db_path=path, read_only=read_only, theme=theme, at_ts=at,
                        refresh_s=refresh_s, keymap=keymap or {}, diagnose=diagnose)
        return FleetApp(config, Feed(lambda: open_store_loader(path), refresh_s=refresh_s,
                                     now=lambda: NOW))

    return make


async def view_where(app: FleetApp, predicate: Callable[[ConsoleView], bool],
                     timeout: float = 5.0) -> ConsoleView:
    """Wait (bounded) for a complete view (values read) the screens drew that satisfies
    ``predicate``."""

    async def wait() -> ConsoleView:
        while True:
            if app.view is not None and app.view.snapshot.complete and predicate(app.view):
                return app.view
            await app.next_view()

    return await asyncio.wait_for(wait(), timeout)


def row(view: ConsoleView, name: str) -> object:
    return next(r for r in view.rows if r.name == name)
