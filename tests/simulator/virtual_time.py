"""A simulator module's view of ``asyncio`` on a virtual clock, for tests of how long things last.

The clock stands still but for the module's own waits: ``sleep(d)`` and ``wait(..., timeout=d)``
move it forward by ``d`` at once (and let other tasks run a turn). How long a simulated run lasts,
or when a stream's lines come, is then the simulator's own arithmetic, read exactly, with no wall
clock in the test. Installed with ``monkeypatch.setattr(module, "asyncio", VirtualTime())``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


class VirtualTime:
    def __init__(self) -> None:
        self.now = 0.0
        """Seconds of virtual loop time."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    def get_running_loop(self) -> Any:
        clock, loop = self, asyncio.get_running_loop()

        class _Loop:
            def time(self) -> float:
                return clock.now

            def __getattr__(self, name: str) -> Any:
                return getattr(loop, name)

        return _Loop()

    async def sleep(self, delay: float) -> None:
        self.now += max(0.0, delay)
        await asyncio.sleep(0)

    async def wait(self, futures: Iterable[asyncio.Future[Any]], *, timeout: float | None = None,
                   return_when: str = asyncio.ALL_COMPLETED) -> tuple[set[Any], set[Any]]:
        """A wait that times out at once (the clock moved by ``timeout``) unless already done."""
        waited = set(futures)
        if timeout is None:
            return await asyncio.wait(waited, return_when=return_when)
        self.now += max(0.0, timeout)
        await asyncio.sleep(0)
        done = {future for future in waited if future.done()}
        return done, waited - done
