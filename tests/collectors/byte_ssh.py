"""A loopback SSH server that writes exactly the bytes a test gives it (SshPool and ProbeSessions tests).

The server writes bytes exactly as given, one SSH data packet per write, so a
character can be split across packets the way a real sshd splits a pipe; its
commands are names in ``handlers`` (the last word of the command line).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from fleet.collectors.commands import Command, command
from fleet.collectors.sshpool import PoolSettings

Handler = Callable[[asyncssh.SSHServerProcess[bytes]], Awaitable[None]]
FAST = PoolSettings(connect_timeout_s=2.0, slow_threshold_s=5.0, ssh_config=())


@dataclass
class ByteServer:
    """One loopback SSH server whose commands are names in ``handlers``."""

    handlers: dict[str, Handler]
    host_key: asyncssh.SSHKey = field(default_factory=lambda: asyncssh.generate_private_key("ssh-ed25519"))
    port: int = 0
    finished: defaultdict[str, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))
    """Set when a command's handler has returned or was cancelled (its channel closed)."""
    stdin_closed: defaultdict[str, asyncio.Event] = field(default_factory=lambda: defaultdict(asyncio.Event))

    async def handle(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        name = (process.command or "").split()[-1]
        try:
            await self.handlers[name](process)
        finally:
            self.finished[name].set()

    async def read_stdin_to_eof(self, name: str, process: asyncssh.SSHServerProcess[bytes]) -> None:
        await process.stdin.read()
        self.stdin_closed[name].set()

    def known_hosts(self, path: Path) -> Path:
        path.write_text(f"[127.0.0.1]:{self.port} {self.host_key.export_public_key().decode().strip()}\n")
        return path


def named(name: str) -> Command:
    """The command the server answers as ``name`` (``echo`` only to pass the allow-list)."""
    return command("echo", name)


def writes(*pieces: bytes, stderr: tuple[bytes, ...] = (), status: int = 0) -> Handler:
    """A command that writes each piece as its own packet, then exits with ``status``."""

    async def handler(process: asyncssh.SSHServerProcess[bytes]) -> None:
        for piece in pieces:
            process.stdout.write(piece)
        for piece in stderr:
            process.stderr.write(piece)
        process.exit(status)

    return handler
