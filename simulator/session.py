"""What a running command can reach: its machine, the fleet model, and its output streams.

Shared by the shell and the stateful commands (perftest, the node agent, the
switch configuration CLI), so that none of them imports another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from fleet.simulator.model import FleetModel


@dataclass
class Rendezvous:
    """perftest servers waiting for a client, and distributed launches waiting for their nodes, per
    (host, TCP port): the fleet's one meeting place."""

    servers: dict[tuple[str, int], tuple[object, asyncio.Future[object]]] = field(default_factory=dict)
    """(host, port) -> (the server's own parsed arguments, a future the client resolves on arrival)."""
    groups: dict[tuple[str, int], dict[int, str]] = field(default_factory=dict)
    """(master address, port) -> node rank -> node: the ``torchrun`` nodes that have joined so far."""
    joined: dict[tuple[str, int], asyncio.Event] = field(default_factory=dict)
    """(master address, port) -> set once every node of the launch has joined."""


@dataclass(frozen=True)
class Machine:
    """One simulated machine as a command sees it."""

    host: str
    role: str  # "node" | "leaf" | "spine" | "head"
    model: FleetModel
    rendezvous: Rendezvous


STDIN_KEPT = 65536
"""Characters of unread stdin a command keeps (a Linux pipe's buffer)."""


@dataclass
class Stdin:
    """What the client has sent on a command's stdin and not yet read (the shell's ``read``)."""

    pending: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    on_line: Callable[[str], None] | None = None
    """Set by ``take_lines``: whole lines go there as they arrive instead of waiting for ``readline``."""

    def feed(self, data: str) -> None:
        """Keep what came, up to a pipe's 64 KiB: a command that never reads stdin holds no more."""
        if len(self.pending) < STDIN_KEPT:
            self.pending += data[: STDIN_KEPT - len(self.pending)]
        if self.on_line is not None:
            *lines, self.pending = self.pending.split("\n")
            for line in lines:
                self.on_line(line)
            return
        self.arrived.set()

    def take_lines(self, on_line: Callable[[str], None]) -> None:
        """Hand every whole line to ``on_line`` as it arrives, those already here first.

        For a command that serves requests line by line (the probe runner):
        each is handled in the callback that received it, with no task woken
        per line as ``readline`` would.
        """
        self.on_line = on_line
        self.feed("")

    async def readline(self, eof: asyncio.Event) -> str | None:
        """The next line without its newline; None once ``eof`` is set with no whole line left."""
        while "\n" not in self.pending:
            if eof.is_set():
                return None
            self.arrived.clear()
            waiters = [asyncio.ensure_future(self.arrived.wait()), asyncio.ensure_future(eof.wait())]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
        line, _, self.pending = self.pending.partition("\n")
        return line


@dataclass
class StreamIO:
    """Where a command writes; ``closed``: the client has gone; ``stdin_eof``: its stdin ended (or it has gone)."""

    stdout: Callable[[str], None]
    stderr: Callable[[str], None]
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    stdin_eof: asyncio.Event = field(default_factory=asyncio.Event)
    drain: Callable[[], Awaitable[None]] = field(default=lambda: _nothing())
    """Wait until the client has taken what was written (SSH flow control): a stream paces itself."""
    stdin: Stdin = field(default_factory=Stdin)
    asked_at: float | None = None
    """The event loop's time the command was asked for, when that is before it runs (a probe
    runner's request is read, its task runs a turn later); None: when it runs."""


async def _nothing() -> None:
    return None


Handler = Callable[[Machine, list[str], StreamIO], Awaitable[int]]
"""A stateful command: runs for as long as it needs and returns its exit status."""
