"""One asyncssh listener per simulated machine, each on its own loopback address with its own host key.

Every machine accepts the one client key the simulator generates. Exec
requests (``ssh host cmd``) and interactive shells (``ssh host``, with or
without a PTY) both run through the machine's :class:`~simulator.shell.Shell`,
so the real OpenSSH client and the console's asyncssh pool get the same
answers. An exec of stateless commands (a collector's ``grep -H . /sys/...``)
is answered in the callback that starts the session, without a process task
(a collection round over 1,024 nodes is 1,024 of them). Faults of the
scenario shape the server itself: ``node_unreachable`` closes the listener
(connections are refused) for the fault's time, ``node_hang`` accepts and
authenticates but never answers a command, ``slow_node`` answers after its
delay. Views are computed per command, never per tick, so an idle fleet
costs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import asyncssh
from asyncssh.constants import MSG_IGNORE

from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous, Stdin, StreamIO
from fleet.simulator.shell import Shell

log = logging.getLogger(__name__)


def _send_packet_as_openssh(self: asyncssh.SSHServerConnection, pkttype: int, *args: bytes,
                            handler: Any = None) -> None:
    """Send a packet as a node's sshd would: with no empty SSH_MSG_IGNORE before it.

    asyncssh's ``send_packet`` puts an empty IGNORE in front of every packet once the
    transport is encrypted; OpenSSH's sshd, what a real node runs, does not. Left in,
    every agent line and command output reached a collector as two packets, so the
    simulated fleet cost more to read than a real one.
    """
    if pkttype != MSG_IGNORE:
        _SEND_PACKET(self, pkttype, *args, handler=handler)


_SEND_PACKET = asyncssh.SSHServerConnection.send_packet
asyncssh.SSHServerConnection.send_packet = _send_packet_as_openssh  # type: ignore[method-assign,assignment]

_GATHERED: dict[asyncio.Transport, list[bytes]] = {}
"""Packets a connection has sent in this turn of the event loop, not yet written to its socket."""


def _send_gathered(self: asyncssh.SSHServerConnection, data: bytes) -> None:
    """Write a connection's packets of one loop turn to its socket at once, at the end of the turn.

    A perftest exec's answer is several packets sent one after the other
    (its output, the exit status, EOF, close; the channel's confirmation and
    the exec request's reply), and asyncssh writes each on its own: one
    ``send`` system call each, on loopback the receiver's TCP work included
    (a perftest pair took ~11 sends, now ~7). The bytes and their order on
    the wire are the same; they leave a few callbacks later. The abort that ends a connection is itself scheduled
    (``call_soon``) after the write, so nothing queued is lost.
    """
    transport = self._transport
    if transport is None:
        return
    gathered = _GATHERED.get(transport)
    if gathered is None:
        _GATHERED[transport] = [data]
        self._loop.call_soon(_write_gathered, transport)
    else:
        gathered.append(data)


def _write_gathered(transport: asyncio.Transport) -> None:
    gathered = _GATHERED.pop(transport)
    if transport.is_closing():  # the peer went away meanwhile: asyncssh's own write would have been dropped
        return
    with contextlib.suppress(ConnectionError):
        transport.write(gathered[0] if len(gathered) == 1 else b"".join(gathered))


asyncssh.SSHServerConnection._send = _send_gathered  # type: ignore[method-assign,assignment]


@dataclass
class Listener:
    host: str
    role: str
    address: str
    port: int = 0
    key: asyncssh.SSHKey | None = None
    server: asyncssh.SSHAcceptor | None = None
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    connections: weakref.WeakSet[asyncssh.SSHServerConnection] = field(default_factory=weakref.WeakSet)
    """Connections that ran a command here: aborted when the machine becomes unreachable."""


class FleetServer:
    """The SSH side of the simulated fleet."""

    def __init__(self, model: FleetModel) -> None:
        self.model = model
        self.rendezvous = Rendezvous()
        self.client_key = asyncssh.generate_private_key("ssh-ed25519", comment="fleet-sim client")
        self._authorized = asyncssh.import_authorized_keys(self.client_key.export_public_key().decode())
        topology = model.topology
        self.listeners: dict[str, Listener] = {
            host: Listener(host, topology.role_of(host), topology.addresses[host]) for host in topology.hosts
        }
        self._shells: dict[str, Shell] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Boot the machines (``FleetModel.boot``), generate each one's host key and listen on its
        address (ephemeral port)."""
        self.model.boot()
        for listener in self.listeners.values():
            listener.key = asyncssh.generate_private_key("ssh-ed25519", comment=listener.host)
            await self._listen(listener)
        self._schedule_unreachable()

    async def _listen(self, listener: Listener) -> None:
        assert listener.key is not None
        listener.server = await asyncssh.listen(
            listener.address,
            listener.port,
            server_host_keys=[listener.key],
            authorized_client_keys=self._authorized,
            server_factory=self._server_factory(listener.host),
            encoding="utf-8",
            errors="surrogateescape",  # a hostile_output fault's binary bytes travel as they are
            allow_scp=False,
            x11_forwarding=False,
            agent_forwarding=False,
            password_auth=False,
            kbdint_auth=False,
            reuse_address=True,
        )
        if listener.port == 0:
            listener.port = listener.server.sockets[0].getsockname()[1]

    def _schedule_unreachable(self) -> None:
        """Close listeners while a node_unreachable fault holds, reopen them after."""
        loop = asyncio.get_running_loop()
        now = self.model.now()
        for fault in self.model.scenario.faults:
            if fault.kind != "node_unreachable" or fault.target not in self.listeners:
                continue
            listener = self.listeners[fault.target]
            listener.timers.append(loop.call_later(max(0.0, fault.at - now), self._unreachable, listener))
            if fault.until is not None:
                listener.timers.append(loop.call_later(max(0.0, fault.until - now), self._reopen, listener))

    def _unreachable(self, listener: Listener) -> None:
        """The machine drops off the network: no new connections, and the open ones die."""
        self._close_listener(listener)
        for connection in list(listener.connections):
            connection.abort()
        listener.connections.clear()

    def _close_listener(self, listener: Listener) -> None:
        if listener.server is not None:
            listener.server.close()
            listener.server = None

    def _reopen(self, listener: Listener) -> None:
        """Listen again on the same address and port once a node_unreachable fault ends."""
        self.spawn(self._listen(listener))

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` in a task held until it ends (the loop keeps only weak ones), cancelled by ``close``."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def shell(self, host: str) -> Shell:
        shell = self._shells.get(host)
        if shell is None:
            listener = self.listeners[host]
            shell = Shell(Machine(host, listener.role, self.model, self.rendezvous))
            self._shells[host] = shell
        return shell

    def _server_factory(self, host: str) -> Callable[[], asyncssh.SSHServer]:
        handle = self._process_factory(host)

        def make() -> asyncssh.SSHServer:
            return _MachineServer(lambda: _Session(self, host, handle))

        return make

    def prompt_shell(self, host: str) -> Shell | None:
        """The machine's shell when it answers at once; None when it hangs or answers slowly.

        A hung or slow machine's exec requests go through the process path
        (``_handle``), which models both.
        """
        behaviour = self.model.behaviour(host, self.model.now())
        if behaviour.hung or behaviour.delay_s:
            return None
        return self.shell(host)

    def _process_factory(self, host: str) -> Callable[[asyncssh.SSHServerProcess[str]], Awaitable[None]]:
        async def handle(process: asyncssh.SSHServerProcess[str]) -> None:
            try:
                await self._handle(host, process)
            except (asyncssh.Error, ConnectionError, BrokenPipeError):
                pass
            except Exception:  # a bug must not take the fleet down; the client sees exit 1
                log.exception("command on %s failed", host)
                with contextlib.suppress(Exception):
                    process.stderr.write("simulator: internal error\n")
                    process.exit(1)

        return handle

    async def _handle(self, host: str, process: asyncssh.SSHServerProcess[str]) -> None:
        io = StreamIO(_writer(process.stdout.write), _writer(process.stderr.write), drain=_drainer(process.stdout))
        watcher = asyncio.ensure_future(_watch_channel(process, io))
        connection = process.get_extra_info("connection")
        if connection is not None:
            self.listeners[host].connections.add(connection)
        try:
            behaviour = self.model.behaviour(host, self.model.now())
            if behaviour.hung:
                await io.closed.wait()
                return
            if behaviour.delay_s:
                await asyncio.sleep(behaviour.delay_s)
            shell = self.shell(host)
            if process.command is not None:
                reader = asyncio.ensure_future(_drain_stdin(process, io))
                try:
                    status = await shell.run(process.command, io)
                finally:
                    reader.cancel()
                process.exit(status)
                return
            await self._interactive(host, shell, process, io)
        finally:
            watcher.cancel()

    async def _interactive(
        self, host: str, shell: Shell, process: asyncssh.SSHServerProcess[str], io: StreamIO
    ) -> None:
        prompt = f"{host}:~$ " if process.get_terminal_type() else ""
        # on a terminal, as with a real sshd, errors share the one tty stream; ``read`` takes the next line typed
        io = StreamIO(io.stdout, io.stdout if prompt else io.stderr, io.closed, io.stdin_eof, io.drain, _Typed(process))
        status = 0
        while True:
            if prompt:
                process.stdout.write(prompt)
            try:
                line = await process.stdin.readline()
            except (asyncssh.BreakReceived, asyncssh.SignalReceived, asyncssh.TerminalSizeChanged):
                continue
            except asyncssh.Error:
                break
            if not line:
                break
            if line.strip() in ("exit", "logout"):
                break
            status = await shell.run(line.rstrip("\n"), io)
        io.stdin_eof.set()
        process.exit(status)

    async def close(self) -> None:
        for listener in self.listeners.values():
            for timer in listener.timers:
                timer.cancel()
            self._close_listener(listener)
        for task in list(self._tasks):
            task.cancel()


class _MachineServer(asyncssh.SSHServer):
    """One connection's server side: its sessions are ``_Session``s."""

    def __init__(self, session: Callable[[], asyncssh.SSHServerSession[str]]) -> None:
        self._session = session

    def session_requested(self) -> asyncssh.SSHServerSession[str]:
        return self._session()


class _Session(asyncssh.SSHServerProcess[str]):
    """A session that runs a plain exec request itself, without asyncssh's process streams, when it can.

    A line of stateless commands (``grep -H . /sys/...``, ``ethtool -S``)
    needs neither a task nor stdin: its output is written and the exit
    status sent in the callback that starts the session (a collection round
    over 1,024 nodes is 1,024 of them). A line whose stateful commands only
    write and watch for the client's close (perftest, all_reduce_perf:
    ``Shell.output_only``) runs in one task of its own: it writes to the
    channel, learns of stdin's end and of the close from this session's
    callbacks, and sends the exit status when the line ends; the process path
    would add asyncssh's three streams and two helper tasks (a link test on
    128 nodes starts 16,256 perftests, 64 of them at once each round, on the
    simulator's one CPU). Everything else (shells, PTYs, the node agent,
    switch changes, a hung or slow machine) runs as an ``SSHServerProcess``
    through ``FleetServer._handle``.
    """

    def __init__(
        self, fleet: FleetServer, host: str, handle: Callable[[asyncssh.SSHServerProcess[str]], Awaitable[None]]
    ) -> None:
        super().__init__(handle, None, 0, False)
        self._fleet = fleet
        self._host = host
        self._io: StreamIO | None = None
        """The streams of a line this session runs itself; None on the process path."""

    def session_started(self) -> None:
        channel = self.channel
        connection = channel.get_extra_info("connection")
        if connection is not None:
            self._fleet.listeners[self._host].connections.add(connection)
        command = channel.get_command()
        shell = None
        if command is not None and channel.get_terminal_type() is None:
            shell = self._fleet.prompt_shell(self._host)
        if command is None or shell is None:
            super().session_started()
            return
        try:
            answer = shell.run_now(command)
            if answer is None and shell.output_only(command):
                self._start(shell, command)
                return
        except Exception:  # a bug must not take the fleet down; the client sees exit 1
            log.exception("command on %s failed", self._host)
            answer = [(2, "simulator: internal error\n")], 1
        if answer is None:
            super().session_started()
            return
        chunks, status = answer
        with contextlib.suppress(asyncssh.Error, ConnectionError, BrokenPipeError, OSError):
            for stream, text in chunks:
                if stream == 1:
                    channel.write(text)
                else:
                    channel.write_stderr(text)
            channel.exit(status)

    def _start(self, shell: Shell, command: str) -> None:
        channel = self.channel
        self._io = io = StreamIO(_writer(channel.write), _writer(channel.write_stderr))
        self._fleet.spawn(self._run(shell, command, io))

    async def _run(self, shell: Shell, command: str, io: StreamIO) -> None:
        try:
            status = await shell.run(command, io)
        except Exception:  # a bug must not take the fleet down; the client sees exit 1
            log.exception("command on %s failed", self._host)
            io.stderr("simulator: internal error\n")
            status = 1
        with contextlib.suppress(asyncssh.Error, ConnectionError, BrokenPipeError, OSError):
            self.channel.exit(status)

    def data_received(self, data: str, datatype: asyncssh.DataType) -> None:
        """What the client sends goes to the line's stdin (only the shell's ``read`` takes any)."""
        if self._io is None:
            super().data_received(data, datatype)
        elif datatype is None:
            self._io.stdin.feed(data)

    def eof_received(self) -> bool:
        if self._io is not None:
            self._io.stdin_eof.set()
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        """The client closed the channel or the connection dropped: a line run here sees ``closed``."""
        super().connection_lost(exc)
        if self._io is not None:
            self._io.closed.set()
            self._io.stdin_eof.set()


class _Typed(Stdin):
    """An interactive session's stdin, as the shell's ``read`` sees it: the next line typed."""

    def __init__(self, process: asyncssh.SSHServerProcess[str]) -> None:
        super().__init__()
        self.process = process

    async def readline(self, eof: asyncio.Event) -> str | None:
        try:
            line = await self.process.stdin.readline()
        except asyncssh.Error:
            return None
        return line[:-1] if line.endswith("\n") else None


def _writer(write_to: Callable[[str], None]) -> Callable[[str], None]:
    """A stream's ``write`` that drops what the client can no longer take (the channel closed under it)."""

    def write(text: str) -> None:
        with contextlib.suppress(asyncssh.Error, ConnectionError, BrokenPipeError, OSError):
            write_to(text)

    return write


def _drainer(stream: asyncssh.SSHWriter[str]) -> Callable[[], Awaitable[None]]:
    async def drain() -> None:
        with contextlib.suppress(asyncssh.Error, ConnectionError, BrokenPipeError, OSError):
            await stream.drain()

    return drain


async def _drain_stdin(process: asyncssh.SSHServerProcess[str], io: StreamIO) -> None:
    """Read an exec request's stdin into ``io.stdin`` (kept for the shell's ``read``) until EOF,
    then set ``stdin_eof``."""
    try:
        while True:
            try:
                data = await process.stdin.read(65536)
            except (asyncssh.BreakReceived, asyncssh.SignalReceived, asyncssh.TerminalSizeChanged):
                continue
            if not data:
                break
            io.stdin.feed(data)
    except (asyncssh.Error, ConnectionError, BrokenPipeError):
        pass
    finally:
        io.stdin_eof.set()


async def _watch_channel(process: asyncssh.SSHServerProcess[str], io: StreamIO) -> None:
    """Set ``closed`` (and ``stdin_eof``) when the client closes the channel or the connection drops."""
    try:
        await process.channel.wait_closed()
    finally:
        io.closed.set()
        io.stdin_eof.set()
