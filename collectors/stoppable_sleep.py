"""A sleep that ends early when the collector is told to stop."""

from __future__ import annotations

import asyncio
import contextlib


async def sleep_until_stopped(stop: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds`` or until ``stop`` is set, whichever comes first."""
    if seconds <= 0:
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
