"""Tiny real asyncssh servers on 127.0.0.x for the SSH pool's tests.

Each server has its own ed25519 host key and accepts one client key. What it
does with a command is chosen per server (``behaviour``): answer, answer late,
never answer, fail, or stream lines until stdin closes. Counters record what
the server saw, so tests can prove e.g. that no authentication was attempted.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from byte_ssh import FAST, ByteServer

from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import SshPool

sys.path.insert(0, str(Path(__file__).parent))  # agent_harness, however pytest imports tests

_addresses = itertools.count(2)


def next_address() -> str:
    """A loopback address of its own for each server (127.0.0.2 ...)."""
    number = next(_addresses)
    return f"127.0.{number // 250 % 250}.{number % 250 + 2}"


@dataclass
class ServerStats:
    tcp_connections: int = 0
    auth_attempts: int = 0
    commands: list[str] = field(default_factory=list)
    forwards: list[tuple[str, int]] = field(default_factory=list)
    auth_in_flight: int = 0
    max_auth_in_flight: int = 0


@dataclass
class FakeHost:
    """One in-process SSH server. ``behaviour``: ok | hang | slow | fail | stream | exec.

    ``exec`` runs the command with ``/bin/sh -c`` like sshd does, in ``exec_env``,
    piping stdin, stdout and stderr: the real path of a command through a shell.
    """

    name: str
    address: str
    host_key: asyncssh.SSHKey
    client_key: asyncssh.SSHKey
    behaviour: str = "ok"
    delay_s: float = 0.3
    auth_delay_s: float = 0.0
    stats: ServerStats = field(default_factory=ServerStats)
    port: int = 0
    acceptor: asyncssh.SSHAcceptor | None = None
    connections: list[asyncssh.SSHServerConnection] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    exec_env: dict[str, str] = field(default_factory=dict)
    handlers: set[asyncio.Task[Any]] = field(default_factory=set)

    def known_hosts_line(self, key: asyncssh.SSHKey | None = None) -> str:
        public = (key or self.host_key).export_public_key().decode().strip()
        return f"[{self.address}]:{self.port} {public}\n"

    async def start(self) -> None:
        host = self

        class Server(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                host.stats.tcp_connections += 1
                host.connections.append(conn)

            async def begin_auth(self, username: str) -> bool:
                host.stats.auth_attempts += 1
                host.stats.auth_in_flight += 1
                host.stats.max_auth_in_flight = max(host.stats.max_auth_in_flight, host.stats.auth_in_flight)
                try:
                    if host.auth_delay_s:
                        await asyncio.sleep(host.auth_delay_s)  # a slow handshake, not a wait for a result
                finally:
                    host.stats.auth_in_flight -= 1
                return True

            def public_key_auth_supported(self) -> bool:
                return True

            def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
                return key == host.client_key.convert_to_public()

            def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> bool:
                host.stats.forwards.append((dest_host, dest_port))
                return True

        self.acceptor = await asyncssh.listen(
            self.address, self.port, server_host_keys=[self.host_key],
            server_factory=Server, process_factory=self._handle,
            reuse_address=True,  # a restart listens again on the port its closed connections leave in TIME_WAIT
        )
        self.port = self.acceptor.get_port()

    async def stop(self) -> None:
        """Stop listening and drop every open connection (a restart's first half)."""
        assert self.acceptor is not None
        self.acceptor.close()
        await self.acceptor.wait_closed()
        for conn in self.connections:
            conn.abort()
        self.connections.clear()

    async def _handle(self, process: asyncssh.SSHServerProcess[str]) -> None:
        command = process.command or ""
        self.stats.commands.append(command)
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        task.add_done_callback(self.handlers.discard)
        if self.behaviour == "exec":
            process.exit(await _shell(command, self.exec_env, process))
            return
        if self.behaviour == "hang":
            await self.release.wait()
        elif self.behaviour == "slow":
            await asyncio.sleep(self.delay_s)  # the fault being simulated: a node that answers late
        if self.behaviour == "fail":
            process.stderr.write("cat: /sys/class/infiniband: No such file or directory\n")
            process.exit(1)
            return
        if self.behaviour == "stream":
            for seq in range(3):
                process.stdout.write(f'{{"seq": {seq}}}\n')
            await process.stdin.read()  # until the client closes stdin
            process.exit(0)
            return
        process.stdout.write(f"{self.name}\n")
        process.exit(0)


async def _shell(command: str, env: dict[str, str], process: asyncssh.SSHServerProcess[str]) -> int:
    """``/bin/sh -c command`` with the SSH channel as its stdin, stdout and stderr; its exit status."""
    local = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert local.stdin is not None and local.stdout is not None and local.stderr is not None
    stdin = local.stdin

    async def pump_in() -> None:
        while chunk := await process.stdin.read(65536):
            stdin.write(chunk.encode())
        stdin.close()

    async def pump_out(source: asyncio.StreamReader, sink: asyncssh.SSHWriter[str]) -> None:
        while chunk := await source.read(65536):
            sink.write(chunk.decode(errors="replace"))

    feeder = asyncio.ensure_future(pump_in())
    try:
        await asyncio.gather(pump_out(local.stdout, process.stdout), pump_out(local.stderr, process.stderr))
        return await local.wait()
    finally:
        feeder.cancel()
        if local.returncode is None:
            local.kill()
            await local.wait()


@pytest.fixture(autouse=True)
def clean_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user config, no agent: the tests see only what they set up."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture
def client_key(tmp_path: Path) -> Iterator[tuple[asyncssh.SSHKey, Path]]:
    key = asyncssh.generate_private_key("ssh-ed25519")
    path = tmp_path / "id_ed25519"
    key.write_private_key(str(path))
    path.chmod(0o600)
    yield key, path


@pytest.fixture
async def fake_hosts(client_key: tuple[asyncssh.SSHKey, Path]) -> AsyncIterator[list[FakeHost]]:
    """A list to which tests add started servers via ``make_host``; all are stopped afterwards."""
    hosts: list[FakeHost] = []
    yield hosts
    for host in hosts:
        host.release.set()
        if host.acceptor is not None:
            host.acceptor.close()
        for conn in host.connections:
            conn.abort()
    handlers = [task for host in hosts for task in host.handlers]
    if handlers:  # let command handlers (and their subprocesses) finish inside this event loop
        _, pending = await asyncio.wait(handlers, timeout=10)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)


@pytest.fixture
def make_host(fake_hosts: list[FakeHost], client_key: tuple[asyncssh.SSHKey, Path]):  # type: ignore[no-untyped-def]
    async def make(name: str, behaviour: str = "ok", **kwargs: object) -> FakeHost:
        host = FakeHost(name, next_address(), asyncssh.generate_private_key("ssh-ed25519"),
                        client_key[0], behaviour, **kwargs)  # type: ignore[arg-type]
        await host.start()
        fake_hosts.append(host)
        return host

    return make


@pytest.fixture
async def byte_server(client_key: tuple[asyncssh.SSHKey, Path]) -> AsyncIterator[ByteServer]:
    server = ByteServer({})
    allowed = client_key[0].convert_to_public()

    class Auth(asyncssh.SSHServer):
        def begin_auth(self, username: str) -> bool:
            return True

        def public_key_auth_supported(self) -> bool:
            return True

        def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
            return key == allowed

    acceptor = await asyncssh.listen("127.0.0.1", 0, server_host_keys=[server.host_key], server_factory=Auth,
                                     process_factory=server.handle, encoding=None)
    server.port = acceptor.get_port()
    yield server
    acceptor.close()
    await acceptor.wait_closed()


@pytest.fixture
async def pool(byte_server: ByteServer, client_key: tuple[asyncssh.SSHKey, Path], tmp_path: Path) -> AsyncIterator[SshPool]:
    """A pool of one host, gpu100, that reaches ``byte_server``."""
    host = InventoryHost("gpu100", "node", "127.0.0.1", byte_server.port, "fleet", identity_file=client_key[1])
    pool = SshPool([host], known_hosts=byte_server.known_hosts(tmp_path / "known_hosts"), settings=FAST)
    yield pool
    await pool.close()
