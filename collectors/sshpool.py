"""One SSH transport for the whole fleet: a connection per host, reused, on asyncssh.

Why it looks like this (compared with clush/pdsh on a 1,024-host simulated fleet):
- known_hosts is read ONCE into an ``SSHKnownHosts`` object and that object is
  passed to every connect; passing the path re-reads the file per connect and
  cost five times the CPU at 1,024 hosts.
- RLIMIT_NOFILE is raised at start, so 1,088 connections do not die of EMFILE.
- Connection set-up is bounded by a semaphore (``max_connecting``); commands on
  open connections are not, and every wait has its own timeout, so a slow or
  hung host never delays another.
- Every failure is a specific ``HostState`` with a reason in words: an engineer
  acts differently on a refused connection, a rejected key and a changed host key.
- Hung and slow are the host's time, not ours: every deadline and every "slow" is
  judged net of the time this process's event loop ran late meanwhile
  (``fleet.collectors.loop_lag``), and a set-up that timed out only because we
  could not run is tried again, not held against the host.
- Commands and streams use asyncssh's session callbacks, not its process API:
  output is kept as bytes and decoded once, a stream's lines are split and
  handed on inside the data callback, and one timer per stream watches for
  silence. The process API costs a readline task and an ``asyncio.wait`` per
  line and three tasks per command: about half again the collector's CPU per
  agent line and per command, against the simulator.

Host keys: a key that differs from known_hosts, or a host that known_hosts does
not list, is refused before authentication (nothing is sent to that machine).
With ``tofu=True`` an unknown host's key is accepted, appended to the
known_hosts file and reported as an ``Event`` of kind ``tofu_host_key``; a
changed key is refused even then.

OpenSSH client configuration (Host patterns, HostName, User, Port, IdentityFile,
ProxyJump ...) is honoured through asyncssh's own support for it: ``~/.ssh/config``,
or instead the file the inventory names (``ssh_config``, as ``ssh -F``); the
ssh-agent is used when ``SSH_AUTH_SOCK`` is set; inventory identity files and jump
hosts override the config. A ProxyJump, from the inventory or the config, is one
shared connection per jump host (chains included), checked against the same
known_hosts as every host: a thousand nodes behind one bastion cost the bastion
one connection, not a thousand. An inventory identity file
that group or others may access is refused before connecting, in OpenSSH's words
(``collectors/identity_file.py``), as ``ssh -i`` would refuse it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import random
import resource
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import asyncssh

from fleet.collectors.commands import Command
from fleet.collectors.identity_file import identity_file_problem
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.loop_lag import LoopLag
from fleet.collectors.ssh_ignore import only_for_cbc
from fleet.collectors.ssh_logging import quiet_when_off
from fleet.fabric.events import Event, Severity
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState
from fleet.fabric.text import clean_text

STDERR_KEEP_BYTES = 4096
"""How much of a command's stderr a result keeps (the tail: where the error usually is)."""

MIB = 1 << 20
OUTPUT_CAP_BYTES = 8 * MIB
"""The most stdout one command may print: beyond it the host is ``unparsable`` and the channel
is closed. The largest output fleet reads each tick is a command-mode tick of an 8-NIC node:
sysfs counters (~0.1 MiB), ``nvidia-smi``, ``ethtool -m``, and ``ethtool -S`` of 8 netdevs, which
for mlx5 lists some 80 counters per channel (docs.kernel.org, mlx5 "Ethtool counters"):
~2.4 MiB at 128 channels. 8 MiB leaves 3x headroom and bounds what one host can make the
collector hold (docs/hostile-input.md)."""
LINE_CAP_BYTES = 1 * MIB
"""The longest line a command or a stream may print: beyond it the host is ``unparsable``. An
agent line of an 8-NIC node with its optics is under 64 KiB, a tool's line under 4 KiB."""


_USER_CONFIG = Path("~/.ssh/config")
"""What asyncssh reads when it is given no config: OpenSSH's per-user file."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one command (or one stream) on one host came to.

    ``state``: OK, SLOW (finished, but slower than the slow threshold), or the
    failure: UNREACHABLE, AUTH_FAILED, HOST_KEY_MISMATCH, HUNG, COMMAND_FAILED
    (callers that cannot parse ``stdout`` set UNPARSABLE themselves).
    ``exit_status`` is None when the command never ran to an exit.
    ``seconds``: wall time of the call, connection set-up included.
    """

    host: str
    state: HostState
    stdout: str = ""
    stderr: str = ""
    exit_status: int | None = None
    seconds: float = 0.0
    reason: str = ""
    lines: int = 0
    """Streams only: how many lines were delivered to ``on_line``."""

    @property
    def ok(self) -> bool:
        return not self.state.is_failure


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """Timeouts in seconds; ``max_connecting``: connection set-ups in flight at once."""

    connect_timeout_s: float = 10.0
    max_connecting: int = 64
    slow_threshold_s: float = 5.0
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 20.0
    """The longest wait between two connection attempts to a host that failed: a host back from an
    outage is seen again within it (the diagnosis closes its ``node_unreachable`` a run later, within
    its 45 s target); an attempt at a refusing host costs a SYN, at a silent one ``connect_timeout_s``."""
    keepalive_interval_s: float = 30.0
    keepalive_count_max: int = 3
    max_output_bytes: int = OUTPUT_CAP_BYTES
    """A command's stdout beyond this: ``unparsable``, channel closed (``run(max_output_bytes=)`` per call)."""
    max_line_bytes: int = LINE_CAP_BYTES
    """A line of a command or a stream longer than this: ``unparsable``, channel closed."""
    ssh_config: tuple[Path, ...] | None = None
    """None: asyncssh's default (``~/.ssh/config`` when it exists); ``()``: no config file."""
    open_files_wanted: int = 65536
    encryption_algs: tuple[str, ...] = (
        "aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
        "aes128-ctr", "aes192-ctr", "aes256-ctr",
    )
    """Ciphers in order of preference: AES-GCM first. asyncssh's default puts
    chacha20-poly1305 first, which builds a new cipher context per packet: at 1,024
    hosts a round on open connections costs 1.9x the CPU (``python -m benchmarks collect``)."""


def raise_open_file_limit(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards ``wanted`` (capped by the hard limit); return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return soft


class _Failure(Exception):
    """A connection that could not be made, already classified."""

    def __init__(self, state: HostState, reason: str) -> None:
        reason = clean_text(reason, one_line=True)  # may quote the server (a disconnect's reason)
        super().__init__(reason)
        self.state = state
        self.reason = reason


@dataclass
class _PooledHost:
    """Everything the pool knows about one host: its connection, state and backoff."""

    host: InventoryHost
    status: HostStatus
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    conn: asyncssh.SSHClientConnection | None = None
    config_jump: str | None = None
    """The host's ProxyJump in its OpenSSH config ("" none), looked up once."""
    failures: int = 0
    retry_at: float = 0.0
    last_failure: _Failure | None = None


class _Client(asyncssh.SSHClient):
    """Per-connection callbacks: was TCP accepted, what key was offered, is the host known."""

    def __init__(self, pool: SshPool, name: str, on_lost: Callable[[], None] | None) -> None:
        self._pool = pool
        self._name = name
        self._on_lost = on_lost
        self.tcp_connected = False
        self.key_verdict = ""  # "changed" | "unknown" | "tofu"
        self.offered_key = ""
        self.conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self.tcp_connected = True

    def connection_lost(self, exc: Exception | None) -> None:
        if self._on_lost is not None:
            self._on_lost()

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Called by asyncssh only for a key that known_hosts does not trust."""
        self.offered_key = f"{key.get_algorithm()} {key.get_fingerprint()}"
        if self._pool.knows_host(host, addr, port):
            self.key_verdict = "changed"
            return False
        if not self._pool.tofu:
            self.key_verdict = "unknown"
            return False
        self.key_verdict = "tofu"
        self._pool.trust_new_key(self._name, host, port, key)
        return True


class SshPool:
    """Run commands and streams on many hosts over one reused connection each.

    Use from one asyncio event loop. ``hosts`` are the inventory's hosts;
    ``known_hosts`` None means ``~/.ssh/known_hosts`` (the one file is used for
    every host, ``UserKnownHostsFile`` in ``~/.ssh/config`` is not consulted,
    and a jump host is checked against it too). ``on_event`` receives
    ``tofu_host_key`` events (the store records them). ``clock`` (monotonic
    seconds) and ``rng`` drive the reconnect backoff and can be replaced in tests.
    """

    def __init__(
        self,
        hosts: Iterable[InventoryHost],
        *,
        known_hosts: Path | None = None,
        tofu: bool = False,
        on_event: Callable[[Event], None] | None = None,
        settings: PoolSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        quiet_when_off()
        only_for_cbc()
        self.settings = settings or PoolSettings()
        self.tofu = tofu
        self._on_event = on_event
        self._clock = clock
        self._rng = rng or random.Random()
        self._known_hosts_path = known_hosts or Path("~/.ssh/known_hosts").expanduser()
        self._known_hosts = self._read_known_hosts(self._known_hosts_path)
        now = time.time()
        self._hosts = {
            host.name: _PooledHost(host, HostStatus(host.name, HostState.CONNECTING, now)) for host in hosts
        }
        self._connecting = asyncio.Semaphore(self.settings.max_connecting)
        self._keys: dict[Path, list[asyncssh.SSHKey] | _Failure] = {}
        self._jumps: dict[str, asyncssh.SSHClientConnection] = {}
        self._jump_lock = asyncio.Lock()
        self.lag = LoopLag()
        """How late this process's loop ran: subtracted from every wait judged hung or slow."""
        self.open_files_limit = raise_open_file_limit(
            max(self.settings.open_files_wanted, 4 * len(self._hosts) + 256)
        )

    # --- host keys ----------------------------------------------------------------

    @staticmethod
    def _read_known_hosts(path: Path) -> asyncssh.SSHKnownHosts:
        if path.is_file():
            return asyncssh.read_known_hosts(str(path))
        return asyncssh.SSHKnownHosts()

    def knows_host(self, host: str, addr: str, port: int) -> bool:
        """True when known_hosts has any key or CA for ``host``/``addr`` (on ``port``)."""
        match = self._known_hosts.match(host, addr, port if port != 22 else None)
        return bool(match[0] or match[1] or match[3] or match[5])

    def trust_new_key(self, name: str, host: str, port: int, key: asyncssh.SSHKey) -> None:
        """Trust-on-first-use: append the key to known_hosts (file and memory), report it."""
        pattern = host if port == 22 else f"[{host}]:{port}"
        line = f"{pattern} {key.export_public_key().decode('ascii').strip()}\n"
        self._known_hosts.load(line)
        path = self._known_hosts_path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        existed = path.exists()
        with path.open("a", encoding="ascii") as handle:
            handle.write(line)
        if not existed:
            path.chmod(0o600)
        if self._on_event is not None:
            fingerprint = key.get_fingerprint()
            self._on_event(Event(
                ts=time.time(), kind="tofu_host_key", severity=Severity.WARNING,
                message=f"trusted the new host key of {name} on first use: {key.get_algorithm()} {fingerprint}",
                host=name,
                data={"pattern": pattern, "algorithm": key.get_algorithm(), "fingerprint": fingerprint,
                      "known_hosts": str(path)},
            ))

    # --- state --------------------------------------------------------------------

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(self._hosts)

    def inventory_host(self, host: str) -> InventoryHost:
        """How the inventory describes ``host``."""
        return self._pooled(host).host

    def state(self, host: str) -> HostStatus:
        """The host's collection state since the last change, with the reason in words."""
        return self._hosts[host].status

    def connected(self, host: str) -> bool:
        """Whether ``host`` has an open connection (its next command needs no set-up)."""
        conn = self._pooled(host).conn
        return conn is not None and not conn.is_closed()

    def next_retry_s(self, host: str) -> float:
        """Seconds until the pool will try to connect to ``host`` again (0: now)."""
        return max(0.0, self._hosts[host].retry_at - self._clock())

    def _set_state(self, pooled: _PooledHost, state: HostState, reason: str) -> None:
        if pooled.status.state != state or pooled.status.reason != reason:
            since = pooled.status.since if pooled.status.state == state else time.time()
            pooled.status = HostStatus(pooled.host.name, state, since, reason)

    def _result(self, pooled: _PooledHost, started: float, state: HostState, reason: str = "", **kwargs: Any) -> RunResult:
        self._set_state(pooled, state, reason)
        return RunResult(pooled.host.name, state, seconds=time.monotonic() - started, reason=reason, **kwargs)

    # --- connections --------------------------------------------------------------

    async def _client_keys(self, path: Path | None) -> Sequence[asyncssh.SSHKey] | tuple[()]:
        if path is None:
            return ()
        too_open = await asyncio.to_thread(identity_file_problem, path)  # on every try: a chmod takes effect
        if too_open is not None:
            raise _Failure(HostState.AUTH_FAILED, too_open)
        cached = self._keys.get(path)
        if cached is None:
            try:
                cached = [await asyncio.to_thread(asyncssh.read_private_key, str(path))]
            except (OSError, asyncssh.KeyImportError) as exc:
                cached = _Failure(HostState.AUTH_FAILED, f"cannot read identity file {path}: {exc}")
            self._keys[path] = cached
        if isinstance(cached, _Failure):
            raise cached
        return cached

    def _config_paths(self, host: InventoryHost) -> list[str] | None:
        """The OpenSSH config files for ``host``: the inventory's, else the pool's setting, else
        None (asyncssh's default: ``~/.ssh/config`` when it exists)."""
        if host.ssh_config is not None:
            return [str(host.ssh_config)]
        if self.settings.ssh_config is not None:
            return [str(path) for path in self.settings.ssh_config]
        return None

    def _base_options(self, config: list[str] | None) -> dict[str, Any]:
        options: dict[str, Any] = {
            "known_hosts": self._known_hosts,
            "connect_timeout": self.settings.connect_timeout_s,
            "keepalive_interval": self.settings.keepalive_interval_s,
            "keepalive_count_max": self.settings.keepalive_count_max,
            "encryption_algs": list(self.settings.encryption_algs),
        }
        if config is not None:
            options["config"] = config
        return options

    def _jump_spec(self, pooled: _PooledHost, config: list[str] | None) -> str:
        """The host's jump hosts: the inventory's, else its config's ProxyJump, as asyncssh reads
        that config for this host (Host patterns, Match); "" for none."""
        host = pooled.host
        if host.jump_host:
            return host.jump_host
        if pooled.config_jump is None and (config == [] or (config is None and not _USER_CONFIG.expanduser().is_file())):
            pooled.config_jump = ""  # no config to read
        if pooled.config_jump is None:
            options = asyncssh.SSHClientConnectionOptions(
                config=config if config is not None else (), host=host.connect_address, port=host.port or (),
                username=host.user or (), client_keys=None, known_hosts=None)
            tunnel = options.tunnel
            pooled.config_jump = tunnel if isinstance(tunnel, str) and tunnel.lower() != "none" else ""
        return pooled.config_jump

    async def _jump(self, spec: str, client_keys: Sequence[asyncssh.SSHKey] | tuple[()],
                    config: list[str] | None) -> asyncssh.SSHClientConnection:
        """One shared connection through the jump hosts ``[user@]host[:port][,...]`` (each hop
        through the one before, as OpenSSH's ProxyJump); each hop's own config applies."""
        async with self._jump_lock:
            tunnel: asyncssh.SSHClientConnection | None = None
            hops = [hop.strip() for hop in spec.split(",") if hop.strip()]
            for index, hop in enumerate(hops):
                chain = ",".join(hops[:index + 1])
                conn = self._jumps.get(chain)
                if conn is None or conn.is_closed():
                    conn = await self._open_jump(hop, chain, client_keys, config, tunnel)
                    self._jumps[chain] = conn
                tunnel = conn
            if tunnel is None:
                raise _Failure(HostState.UNREACHABLE, f"jump host {spec!r}: no host named")
            return tunnel

    async def _open_jump(self, hop: str, chain: str, client_keys: Sequence[asyncssh.SSHKey] | tuple[()],
                         config: list[str] | None,
                         tunnel: asyncssh.SSHClientConnection | None) -> asyncssh.SSHClientConnection:
        user, _, hostport = hop.rpartition("@")
        host, _, port_text = hostport.partition(":")
        client = _Client(self, host, None)
        options = self._base_options(config)
        if tunnel is not None:
            options["tunnel"] = tunnel
        try:
            return await asyncssh.connect(
                host, port=int(port_text) if port_text.isdigit() else (), username=user or (),
                client_keys=client_keys, client_factory=lambda: client, **options,
            )
        except Exception as exc:
            failure = self._classify(exc, client)
            raise _Failure(failure.state, f"jump host {chain}: {failure.reason}") from None

    def _classify(self, exc: BaseException, client: _Client) -> _Failure:
        """The specific state of a failed connection attempt."""
        timeout = self.settings.connect_timeout_s
        if isinstance(exc, _Failure):
            return exc
        if isinstance(exc, asyncssh.HostKeyNotVerifiable):
            if client.key_verdict == "changed":
                return _Failure(HostState.HOST_KEY_MISMATCH,
                                f"known_hosts holds other keys: host key CHANGED (offered {client.offered_key}): "
                                "refused before authentication; check for a reinstall or an impostor")
            if client.key_verdict == "unknown":
                return _Failure(HostState.HOST_KEY_MISMATCH,
                                f"host unknown: no key in known_hosts (offered {client.offered_key}); "
                                "add it to known_hosts or allow trust-on-first-use")
            return _Failure(HostState.HOST_KEY_MISMATCH, f"host key not verifiable: {exc.reason}")
        if isinstance(exc, asyncssh.PermissionDenied):
            return _Failure(HostState.AUTH_FAILED, f"authentication rejected: {exc.reason}")
        if isinstance(exc, TimeoutError):
            if client.tcp_connected:
                return _Failure(HostState.HUNG, f"accepted TCP but SSH set-up did not finish within {timeout:g} s")
            return _Failure(HostState.UNREACHABLE, f"connect timeout after {timeout:g} s")
        if isinstance(exc, socket.gaierror):
            return _Failure(HostState.UNREACHABLE, f"name not resolved: {exc.strerror}")
        if isinstance(exc, ConnectionRefusedError):
            return _Failure(HostState.UNREACHABLE, "connection refused")
        if isinstance(exc, OSError):
            words = {errno.EHOSTUNREACH: "no route to host", errno.ENETUNREACH: "network unreachable",
                     errno.EMFILE: "too many open files on the collector"}
            return _Failure(HostState.UNREACHABLE, words.get(exc.errno or 0, str(exc.strerror or exc)))
        if isinstance(exc, asyncssh.DisconnectError):
            return _Failure(HostState.UNREACHABLE, f"disconnected during set-up: {exc.reason}")
        if isinstance(exc, asyncssh.Error):
            return _Failure(HostState.UNREACHABLE, f"SSH error: {exc.reason}")
        return _Failure(HostState.UNREACHABLE, f"{type(exc).__name__}: {exc}")

    def _backoff(self, pooled: _PooledHost, failure: _Failure) -> None:
        pooled.failures += 1
        delay = min(self.settings.backoff_max_s, self.settings.backoff_initial_s * 2 ** (pooled.failures - 1))
        pooled.retry_at = self._clock() + delay * self._rng.uniform(0.5, 1.0)
        pooled.last_failure = failure

    async def _connection(self, pooled: _PooledHost) -> asyncssh.SSHClientConnection:
        """The host's open connection, made when needed; raises _Failure (also while backing off)."""
        async with pooled.lock:
            if pooled.conn is not None and not pooled.conn.is_closed():
                return pooled.conn
            pooled.conn = None
            wait_s = pooled.retry_at - self._clock()
            if pooled.last_failure is not None and wait_s > 0:
                failure = pooled.last_failure
                raise _Failure(failure.state, f"{failure.reason} (next retry in {wait_s:.1f} s)")
            async with self._connecting:
                self.lag.start()
                conn = await self._connect(pooled)
            pooled.conn, pooled.failures, pooled.retry_at, pooled.last_failure = conn, 0, 0.0, None
            return conn

    async def _connect(self, pooled: _PooledHost) -> asyncssh.SSHClientConnection:
        host = pooled.host
        client = _Client(self, host.name, lambda: self._forget(pooled, client))
        lag_mark = self.lag.total_s
        try:
            client_keys = await self._client_keys(host.identity_file)
            config = self._config_paths(host)
            options = self._base_options(config)
            jump = self._jump_spec(pooled, config)
            if jump:
                options["tunnel"] = await self._jump(jump, client_keys, config)
            if host.address and host.address != host.name and self._named_in_known_hosts(host):
                options["host_key_alias"] = host.name
            conn = await asyncssh.connect(
                host.connect_address, port=host.port or (), username=host.user or (),
                client_keys=client_keys, client_factory=lambda: client, **options,
            )
        except Exception as exc:
            failure = self._classify(exc, client)
            own_s = self.lag.since(lag_mark)
            if isinstance(exc, TimeoutError) and own_s > 0.5 * self.settings.connect_timeout_s:
                # Half the wait or more was our own loop running late: nothing to hold against the host.
                raise _Failure(HostState.CONNECTING, f"set-up not finished: the collector itself was "
                                                     f"{own_s:.1f} s late; trying again") from None
            self._backoff(pooled, failure)
            raise failure from None
        client.conn = conn
        return conn

    def _named_in_known_hosts(self, host: InventoryHost) -> bool:
        """known_hosts lists the inventory name (not the address): look keys up by name."""
        return self.knows_host(host.name, "", host.port or 22) and not self.knows_host(
            host.address, host.address, host.port or 22
        )

    def _forget(self, pooled: _PooledHost, client: _Client) -> None:
        """The connection closed under us: the next command reconnects."""
        if pooled.conn is not None and client.conn is pooled.conn:
            pooled.conn = None

    def _pooled(self, host: str) -> _PooledHost:
        try:
            return self._hosts[host]
        except KeyError:
            raise KeyError(f"{host!r} is not in the pool's inventory") from None

    def _lost(self, pooled: _PooledHost, started: float, exc: BaseException) -> RunResult:
        """The connection broke during a command: drop it and back off before reconnecting."""
        if pooled.conn is not None:
            pooled.conn.abort()
            pooled.conn = None
        failure = _Failure(HostState.UNREACHABLE, f"connection lost: {getattr(exc, 'reason', None) or exc}")
        self._backoff(pooled, failure)
        return self._result(pooled, started, failure.state, failure.reason)

    # --- commands -----------------------------------------------------------------

    async def connect(self, host: str) -> RunResult:
        """Open (or reuse) the host's connection without running anything.

        Lets a caller time a command apart from connection set-up: a node is
        ``slow`` when it answers slowly, not when many handshakes queue at start.
        """
        pooled = self._pooled(host)
        started = time.monotonic()
        try:
            await self._connection(pooled)
        except _Failure as failure:
            return self._result(pooled, started, failure.state, failure.reason)
        return RunResult(host, HostState.OK, seconds=time.monotonic() - started)

    async def run(self, host: str, command: Command, timeout_s: float,
                  gate: asyncio.Future[None] | None = None, *, max_output_bytes: int | None = None) -> RunResult:
        """Run ``command`` on ``host`` and wait for it to exit, at most ``timeout_s`` seconds.

        The timeout covers opening the channel and the command itself; connection
        set-up has its own (``connect_timeout_s``). stdin is closed at once, or, for a
        ``gated`` command, once ``gate`` is done: its line is sent then (the wait does
        not count against the timeout). Cancelled before that, the channel is closed
        and the command never runs. Never raises for a machine's fault: every outcome
        is a ``RunResult``. Output over ``max_output_bytes`` (default: the pool's
        ``max_output_bytes``) or a line over ``max_line_bytes`` is not kept: the channel is
        closed and the result is UNPARSABLE, saying which cap (the connection stays open).
        """
        if command.gated != (gate is not None):
            raise ValueError("a gated command needs a gate, and a gate a gated command")
        pooled = self._pooled(host)
        started = time.monotonic()
        try:
            conn = await self._connection(pooled)
        except _Failure as failure:
            return self._result(pooled, started, failure.state, failure.reason)
        command_started = time.monotonic()  # slow means slow to answer, not slow to connect
        lag_mark = self.lag.total_s
        caps = _Caps(self.settings.max_output_bytes if max_output_bytes is None else max_output_bytes,
                     self.settings.max_line_bytes)
        session = _Output(asyncio.get_running_loop(), caps)
        chan: asyncssh.SSHClientChannel[bytes] | None = None
        try:
            async with _within(timeout_s, self.lag):
                chan, _ = await conn.create_session(lambda: session, command.text, encoding=None)
            if gate is not None:  # the wait for its turn does not count
                await _gate_or_close(chan, gate)
                command_started, lag_mark = time.monotonic(), self.lag.total_s
            async with _within(timeout_s - (time.monotonic() - command_started) + self.lag.since(lag_mark),
                               self.lag):
                if gate is not None and not session.closed.done():  # else it ended before its turn
                    chan.write(b"\n")
                if not session.closed.done():
                    chan.write_eof()
                lost = await session.closed
        except TimeoutError:
            if chan is not None:
                chan.close()
            out = _decode_partial(b"".join(session.stdout))
            what = "no output" if not out else f"not finished ({len(out)} characters of output so far)"
            return self._result(pooled, started, HostState.HUNG, f"{what} within {timeout_s:g} s",
                                stdout=out, stderr=session.stderr.text())
        except (asyncssh.Error, OSError) as exc:
            return self._lost(pooled, started, exc)
        if caps.over and chan is not None:
            chan.close()  # what it still sends is dropped; the connection serves the next command
            return self._result(pooled, started, HostState.UNPARSABLE, f"{_tools(command)}: {caps.over}",
                                stderr=session.stderr.text())
        if lost is not None:
            return self._lost(pooled, started, lost)
        out, err = b"".join(session.stdout).decode("utf-8", "replace"), session.stderr.text()
        status = session.exit.status
        if status != 0:
            reason = failure_reason(status, session.exit.signal, err)
            return self._result(pooled, started, HostState.COMMAND_FAILED, reason,
                                stdout=out, stderr=err, exit_status=status)
        seconds = time.monotonic() - command_started - self.lag.since(lag_mark)
        if seconds > self.settings.slow_threshold_s:
            return self._result(pooled, started, HostState.SLOW,
                                f"answered in {seconds:.2f} s (slow above {self.settings.slow_threshold_s:g} s)",
                                stdout=out, stderr=err, exit_status=0)
        return self._result(pooled, started, HostState.OK, stdout=out, stderr=err, exit_status=0)

    async def stream(
        self,
        host: str,
        command: Command,
        on_line: Callable[[str], None],
        *,
        first_line_timeout_s: float,
        line_timeout_s: float,
        stop: asyncio.Event | None = None,
        on_open: Callable[[Callable[[bytes], None]], None] | None = None,
    ) -> RunResult:
        """Run a long-lived ``command`` (the node agent) and hand each stdout line to ``on_line``.

        Returns when the stream ends: OK when ``stop`` was set (stdin is closed,
        which ends the agent) or the command exited 0; HUNG when no line came
        within ``first_line_timeout_s`` of the start or ``line_timeout_s`` of the
        previous line; COMMAND_FAILED on a non-zero exit (stderr kept);
        UNREACHABLE when the connection broke; UNPARSABLE when a line went over the
        pool's ``max_line_bytes`` (the channel is closed, the connection kept). Lines
        are passed without the newline.
        ``on_line`` runs inside the SSH channel's data callback, so no line waits
        for a task; an exception it raises ends the stream and is raised here.
        Cancelling the call closes the channel. ``on_open`` is given the channel's
        ``write`` once the session is open (the far end accepted the command, and
        the first line's deadline has started): for a command that reads requests
        from its stdin (the probe runner), or to end a paced set-up there.
        """
        pooled = self._pooled(host)
        started = time.monotonic()
        try:
            conn = await self._connection(pooled)
        except _Failure as failure:
            return self._result(pooled, started, failure.state, failure.reason)
        stop = stop or asyncio.Event()
        session = _Lines(asyncio.get_running_loop(), on_line, stop, first_line_timeout_s, line_timeout_s,
                         self.settings.max_line_bytes, self.lag)
        stop_wait = asyncio.ensure_future(stop.wait())
        chan: asyncssh.SSHClientChannel[bytes] | None = None
        try:
            async with _within(first_line_timeout_s, self.lag):
                chan, _ = await conn.create_session(lambda: session, command.text, encoding=None)
            session.watch()
            if on_open is not None:
                on_open(chan.write)
            self._set_state(pooled, HostState.OK, "")
            ending: set[asyncio.Future[Any]] = {session.closed, stop_wait}
            done, _ = await asyncio.wait(ending, return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            return self._result(pooled, started, HostState.HUNG,
                                f"stream did not start or end within {first_line_timeout_s:g} s",
                                stderr=session.stderr.text(), lines=session.lines)
        except (asyncssh.Error, OSError) as exc:
            return replace(self._lost(pooled, started, exc), lines=session.lines)
        finally:
            stop_wait.cancel()
            session.unwatch()
            if chan is not None:  # both are no-ops on a channel already closed
                if stop.is_set():
                    chan.write_eof()
                chan.close()
        lines, err = session.lines, session.stderr.text()
        if stop_wait in done:
            return self._result(pooled, started, HostState.OK, "stream stopped", lines=lines)
        if session.error is not None:
            raise session.error
        if session.over:
            return self._result(pooled, started, HostState.UNPARSABLE, f"{_tools(command)}: {session.over}",
                                stderr=err, lines=lines)
        if session.hung:
            return self._result(pooled, started, HostState.HUNG, session.hung, stderr=err, lines=lines)
        lost = session.closed.result()
        if lost is not None:
            return replace(self._lost(pooled, started, lost), lines=lines)
        status = session.exit.status
        if status != 0:
            reason = f"stream ended with exit status {status}"
            if err.strip():
                reason += f": {_first_line(err)}"
            return self._result(pooled, started, HostState.COMMAND_FAILED, reason, stderr=err,
                                exit_status=status, lines=lines)
        return self._result(pooled, started, HostState.OK, "stream ended", stderr=err, exit_status=0, lines=lines)

    async def close(self, timeout_s: float = 5.0) -> None:
        """Close every connection (jump hosts last) and wait up to ``timeout_s`` for them."""
        self.lag.stop()
        conns = [pooled.conn for pooled in self._hosts.values() if pooled.conn is not None]
        for pooled in self._hosts.values():
            pooled.conn = None
        jumps = list(self._jumps.values())
        self._jumps.clear()
        for group in (conns, jumps):
            for conn in group:
                conn.close()
            if group:
                await asyncio.wait([asyncio.ensure_future(conn.wait_closed()) for conn in group],
                                   timeout=timeout_s)


@dataclass(slots=True)
class _Exit:
    """How the remote command ended: ``status`` as asyncssh's ``get_exit_status`` (-1: signal, None: never said)."""

    status: int | None = None
    signal: str = ""

    def exited(self, status: int) -> None:
        self.status = status

    def killed(self, signal: str) -> None:
        self.status, self.signal = -1, signal


class _StderrTail:
    """The last ``STDERR_KEEP_BYTES`` characters of stderr, in bounded memory however much comes."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._size = 0

    def add(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        if self._size > 16 * STDERR_KEEP_BYTES:  # 4 bytes per character at most: 4x keeps enough
            kept = _from_char_start(b"".join(self._chunks)[-4 * STDERR_KEEP_BYTES:])
            self._chunks, self._size = [kept], len(kept)

    def text(self) -> str:
        """The tail, decoded and cleaned (``clean_text``): stderr is the machine's words."""
        return clean_text(_tail(b"".join(self._chunks).decode("utf-8", "replace")))


@contextlib.asynccontextmanager
async def _within(timeout_s: float, lag: LoopLag) -> AsyncIterator[None]:
    """``asyncio.timeout(timeout_s)`` whose deadline moves later by the time our own loop ran late
    meanwhile: what is awaited inside is awaited directly, and cancelled with ``TimeoutError`` when
    ``timeout_s`` seconds of the host's time have passed."""
    loop = asyncio.get_running_loop()
    started, mark = loop.time(), lag.total_s
    async with asyncio.timeout(None) as timeout:
        handle: asyncio.TimerHandle | None = None

        def check() -> None:
            nonlocal handle
            deadline = started + timeout_s + lag.since(mark)
            if loop.time() >= deadline:
                timeout.reschedule(loop.time())  # expires now: asyncio cancels the wait, raises TimeoutError
            else:
                handle = loop.call_at(deadline, check)

        handle = loop.call_at(started + timeout_s, check)
        try:
            yield
        finally:
            if handle is not None:
                handle.cancel()


async def _gate_or_close(chan: asyncssh.SSHClientChannel[bytes], gate: asyncio.Future[None]) -> None:
    """Wait for ``gate``; when the wait is cancelled, close the channel, so that the staged
    command's ``read`` sees the end of stdin and it never runs."""
    try:
        await asyncio.shield(gate)
    except BaseException:
        chan.close()
        raise


@dataclass(slots=True)
class _Caps:
    """run()'s limits on one command's stdout, and what it has printed so far (bytes)."""

    output_bytes: int
    line_bytes: int
    printed: int = 0
    open_line: int = 0
    """Bytes of the line not yet ended by a newline."""
    over: str = ""
    """Which limit the output went over, in words; "" while within both."""

    def take(self, data: bytes) -> bool:
        """Count ``data``; False (and ``over`` set) once the output or one of its lines is too long.

        One ``find`` and one ``rfind`` per packet: a line inside a packet is no longer than the
        packet (32 KiB at most), so only a packet longer than the line cap is split to look.
        """
        self.printed += len(data)
        first = data.find(b"\n")
        if first < 0:
            self.open_line += len(data)
        else:
            longest = self.open_line + first
            if len(data) > self.line_bytes:
                longest = max(longest, *(len(line) for line in data[first + 1:].split(b"\n")))
            self.open_line = len(data) - data.rfind(b"\n") - 1
            if longest > self.line_bytes:
                self.over = f"a line over {self.line_bytes} bytes"
        if self.open_line > self.line_bytes:
            self.over = f"a line over {self.line_bytes} bytes"
        if self.printed > self.output_bytes:
            self.over = f"output over {self.output_bytes} bytes"
        return not self.over


class _Output(asyncssh.SSHClientSession[bytes]):
    """run(): keeps the raw output, decoded once at the end (a character split across packets stays whole).

    Output over its ``caps`` is not kept: ``closed`` is set at once (the caller closes the channel).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, caps: _Caps) -> None:
        self.stdout: list[bytes] = []
        self.stderr = _StderrTail()
        self.exit = _Exit()
        self.caps = caps
        self.closed: asyncio.Future[Exception | None] = loop.create_future()
        """Set when the channel closes (None, or why the connection broke), or when the output went over its caps."""

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if datatype is not None:
            self.stderr.add(data)
        elif not self.caps.over:
            if self.caps.take(data):
                self.stdout.append(data)
            else:
                self.stdout.clear()
                if not self.closed.done():
                    self.closed.set_result(None)

    def exit_status_received(self, status: int) -> None:
        self.exit.exited(status)

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        self.exit.killed(signal)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(exc)


class _Lines(asyncssh.SSHClientSession[bytes]):
    """stream(): splits stdout into lines and hands each to ``on_line`` from the data callback.

    No task or timer per line: one watchdog timer per stream wakes at the
    deadline of the line it expects, and reschedules itself when a line came
    meanwhile. A line is decoded whole, so a character split across packets
    decodes right. A line longer than ``max_line_bytes`` ends the stream (``over``
    says so) instead of growing without bound; ``on_line`` runs synchronously,
    so a fast stream is held back by TCP rather than queued here.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, on_line: Callable[[str], None], stop: asyncio.Event,
                 first_line_timeout_s: float, line_timeout_s: float, max_line_bytes: int, lag: LoopLag) -> None:
        self._loop = loop
        self._lag = lag
        self._lag_mark = lag.total_s
        self._on_line = on_line
        self._stop = stop
        self._first_line_timeout_s = first_line_timeout_s
        self._line_timeout_s = line_timeout_s
        self._partial: list[bytes] = []
        self._partial_bytes = 0
        self._max_line_bytes = max_line_bytes
        self._last_at = loop.time()
        self._eof = False
        self._timer: asyncio.TimerHandle | None = None
        self.lines = 0
        self.stderr = _StderrTail()
        self.exit = _Exit()
        self.hung = ""
        self.over = ""
        """Set when a line went over ``max_line_bytes``: the stream ended there."""
        self.error: BaseException | None = None
        """What ``on_line`` raised: ends the stream, raised again by ``stream()``."""
        self.closed: asyncio.Future[Exception | None] = loop.create_future()
        """Set when the stream is over: channel closed (None, or why the connection broke), hung, or on_line failed."""

    # --- the watchdog -------------------------------------------------------------

    def watch(self) -> None:
        """Start the deadlines now (the session has started): the first line's, or, when lines
        came while the session was being opened, the next line's."""
        if self.lines == 0:
            self._last_at, self._lag_mark = self._loop.time(), self._lag.total_s
        self._check()

    def unwatch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _rearm(self) -> None:
        """The deadline's rule changed (first line, end of output): check at the new deadline, not the old."""
        if self._timer is not None:
            self._timer.cancel()
            self._check()

    def _check(self) -> None:
        if self.closed.done():
            self._timer = None
            return
        if self._eof:
            limit = self._line_timeout_s
        else:
            limit = self._first_line_timeout_s if self.lines == 0 else self._line_timeout_s
        deadline = self._last_at + limit + self._lag.since(self._lag_mark)  # our own lateness is not the host's
        if self._loop.time() < deadline:
            self._timer = self._loop.call_at(deadline, self._check)
            return
        self._timer = None
        if self._eof:
            self._end(hung=f"stream did not start or end within {self._first_line_timeout_s:g} s")
        else:
            what = "no first line" if self.lines == 0 else f"no line after line {self.lines}"
            self._end(hung=f"{what} within {limit:g} s")

    def _end(self, *, hung: str = "", over: str = "", error: BaseException | None = None,
             lost: Exception | None = None) -> None:
        if self.closed.done():
            return
        self.hung, self.over, self.error = hung, over, error
        self.closed.set_result(lost)

    # --- asyncssh's callbacks -----------------------------------------------------

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if datatype is not None:
            self.stderr.add(data)
            return
        if self.closed.done() or self._stop.is_set():
            return  # stopped, hung or failed: nothing more is delivered
        try:
            self._split(data)
        except Exception as exc:  # on_line's own failure: the caller's, not the connection's
            self._end(error=exc)

    def _split(self, data: bytes) -> None:
        end = data.find(b"\n")
        if end < 0:
            self._partial.append(data)
            self._partial_bytes += len(data)
            if self._partial_bytes > self._max_line_bytes:
                self._partial.clear()
                self._end(over=f"a line over {self._max_line_bytes} bytes")
            return
        if self._partial:
            self._partial.append(data[:end])
            line = b"".join(self._partial)
            self._partial.clear()
            self._partial_bytes = 0
        else:
            line = data[:end]
        self._deliver(line)
        start = end + 1
        while (end := data.find(b"\n", start)) >= 0:
            if self._stop.is_set() or self.closed.done():
                return
            self._deliver(data[start:end])
            start = end + 1
        if start < len(data) and not self._stop.is_set() and not self.closed.done():
            self._partial.append(data[start:])
            self._partial_bytes = len(data) - start
            if self._partial_bytes > self._max_line_bytes:
                self._partial.clear()
                self._end(over=f"a line over {self._max_line_bytes} bytes")

    def _deliver(self, line: bytes) -> None:
        if len(line) > self._max_line_bytes:  # whole in one packet longer than the cap
            self._end(over=f"a line over {self._max_line_bytes} bytes")
            return
        self.lines += 1
        self._last_at, self._lag_mark = self._loop.time(), self._lag.total_s
        if self.lines == 1:
            self._rearm()  # the line timeout may be shorter than the first line's
        self._on_line(line.decode("utf-8", "replace"))

    def _flush_partial(self) -> None:
        """The last line had no newline: it is still a line."""
        if self._partial and not self.closed.done() and not self._stop.is_set():
            line = b"".join(self._partial)
            self._partial.clear()
            self._partial_bytes = 0
            try:
                self._deliver(line)
            except Exception as exc:
                self._end(error=exc)

    def eof_received(self) -> bool:
        self._flush_partial()
        self._eof = True
        self._last_at, self._lag_mark = self._loop.time(), self._lag.total_s
        self._rearm()
        return True  # half-open, as asyncssh's process API: stdin stays ours to close

    def exit_status_received(self, status: int) -> None:
        self.exit.exited(status)

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        self.exit.killed(signal)

    def connection_lost(self, exc: Exception | None) -> None:
        self._flush_partial()
        self.unwatch()
        self._end(lost=exc)


def _tools(command: Command) -> str:
    """The tools a command line runs, for a reason that names them (section markers left out)."""
    tools = [tool for tool in command.tools if tool not in ("echo", "true")] or list(command.tools)
    return ", ".join(dict.fromkeys(tools))


def _from_char_start(data: bytes) -> bytes:
    """``data`` from its first byte that starts a UTF-8 character (drops at most 3 continuation bytes)."""
    skip = 0
    while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
        skip += 1
    return data[skip:]


def _decode_partial(data: bytes) -> str:
    """Output cut short: decode what is whole, as an incremental decoder would have by now."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


def _tail(text: str) -> str:
    return text[-STDERR_KEEP_BYTES:]


def failure_reason(status: int | None, signal: str, stderr: str) -> str:
    """Why a command that did not exit 0 failed, in words: the signal that ended it, or its exit
    status and the first line of its stderr (where the error usually is)."""
    if status is None or status < 0:
        return f"killed by signal {clean_text(signal, one_line=True) or '?'}"
    return f"exit status {status}" + (f": {_first_line(stderr)}" if stderr.strip() else "")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


__all__ = ["PoolSettings", "RunResult", "SshPool", "failure_reason", "raise_open_file_limit"]
