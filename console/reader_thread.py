"""One thread that owns the store's read connection.

SQLite connections belong to the thread that made them, and Textual starts a
new thread per thread worker; so every read is handed to this one thread and
awaited from an async worker. Reads are serial, which also means a slow read
makes the next refresh skip instead of piling up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

R = TypeVar("R")
S = TypeVar("S")


class ReaderThread(Generic[S]):
    """Runs ``fn(state)`` on the reader thread; ``state`` (the reader) is built there lazily."""

    def __init__(self, open_state: Callable[[], S]) -> None:
        self._open = open_state
        self._state: S | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fleet-store-read")

    def _run(self, fn: Callable[[S], R]) -> R:
        if self._state is None:
            self._state = self._open()
        return fn(self._state)

    async def call(self, fn: Callable[[S], R]) -> R:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._run, fn)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
