"""How late this process's event loop has run: the collector's own time, never a host's.

Why: whether a host is hung or slow is judged by how long its answer took, on our clock. When our
own event loop could not run (it was busy with a thousand other hosts' lines, a store commit held
the GIL, or the machine's other processes had the CPU), an answer that had long arrived waited in
a socket buffer, and on libuv's loop a deadline's timer even runs before the read that would have
met it. That wait is ours. ``LoopLag`` measures it: a timer every ``period_s`` notes how much later
than asked it ran, and the sum is what a judgment subtracts from the time it measured
(``SshPool`` for hung streams and commands, ``NodePoller`` for slow nodes).
"""

from __future__ import annotations

import asyncio


class LoopLag:
    """Seconds of lateness of this event loop's timers, summed since ``start()``.

    A timer asked for every ``period_s`` that runs ``late`` seconds after its time adds ``late``
    beyond ``tolerance_s`` (the loop's ordinary jitter). ``total_s`` only grows: a judgment
    reads it at the start and at the end of what it measures.

    ``total_s`` also counts the lateness of the timer that is due and has not run yet. A loop that
    is busy for seconds is busy in one pass: it reads a thousand hosts' lines, one after the other,
    before its timers' turn comes again. A line read at the end of that pass waited in a socket
    buffer for most of it, and the judgment made then must already see that wait as ours.
    """

    def __init__(self, period_s: float = 0.05, tolerance_s: float = 0.01) -> None:
        self.period_s = period_s
        self.tolerance_s = tolerance_s
        self._counted_s = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return self._handle is not None

    @property
    def total_s(self) -> float:
        """Lateness so far, seconds: what the timer counted, and how overdue it is now."""
        if self._loop is None or self._handle is None:
            return self._counted_s
        return self._counted_s + max(0.0, self._loop.time() - self._due - self.tolerance_s)

    def start(self) -> None:
        """Start measuring on the running loop (again after ``stop()``; a no-op while running)."""
        if self._handle is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._due = self._loop.time() + self.period_s
        self._handle = self._loop.call_at(self._due, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._counted_s = self.total_s
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        late = now - self._due
        if late > self.tolerance_s:
            self._counted_s += late - self.tolerance_s
        self._due = now + self.period_s
        self._handle = self._loop.call_at(self._due, self._tick)

    def since(self, mark: float) -> float:
        """Lateness since ``mark`` (an earlier ``total_s``), seconds."""
        return max(0.0, self.total_s - mark)


__all__ = ["LoopLag"]
