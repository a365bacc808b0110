"""Waiting for what the console drew: helpers the console tests import by name."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fleetstore import T0

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
