"""Waiting for what the console drew: helpers the console tests import by name."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fleetstore import T0
from textual.command import CommandList
from textual.pilot import Pilot

from fleet.console.app import FleetApp
from fleet.console.view_model import ConsoleView

NOW = T0 + 1.0
"""The fixed clock the test apps read the store at."""


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


async def palette_highlights(app: FleetApp, pilot: Pilot[object], text: str, timeout: float = 5.0) -> None:
    """Wait (bounded) until the open command palette has searched what was typed and highlights a
    command whose prompt holds ``text``: its search runs in a worker, its hits come when they come."""

    async def wait() -> None:
        while True:
            commands = app.screen.query(CommandList)
            option = commands.first().highlighted_option if commands else None
            if option is not None and text in _plain(option.prompt):
                return
            await pilot.pause()

    await asyncio.wait_for(wait(), timeout)


def _plain(prompt: object) -> str:
    plain = getattr(prompt, "plain", None)
    return plain if isinstance(plain, str) else str(prompt)
