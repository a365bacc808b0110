"""One perftest latency or bandwidth probe between two nodes, a NIC on each.

Why it looks like this: done by hand, an engineer forgets the port, the GID
index or leaves a server hanging. Here the server side (``dst``) is started
first with the right device (``-d``), port (``-i``), GID index (``-x``, RoCE
only: the RoCE v2 entry carrying an IPv4 address, read with ``show_gids``) and
a TCP port (``-p``) no other probe of this process holds on that node; the
client (``src``) starts once the server listens. The server ALWAYS goes away:

- it runs under ``timeout -k 2 N`` so it cannot outlive the probe on the node
  even when our SSH channel is gone;
- it is stopped in a ``finally`` on success, failure, timeout and asyncio
  cancellation (Ctrl-C): its SSH channel closed, or, started by the node's
  probe runner (``fleet.collectors.probe_sessions``, which ``launcher`` may be),
  its process group ended.

A link test starts a probe's server while its two NICs are still in their
previous probes (``after``) and its client once those have ended: a waiting
perftest server has only opened the device and listens on TCP (perftest's
``write_lat.c`` creates its memory region, CQ and QP after the client has
connected), so it touches neither NIC's traffic, and the start of the server
does not lie between one probe and the next.

Both sides' output are kept in the record's ``raw``. Results: latency in
microseconds (``t_min_usec``, ``t_typical_usec``, ``t_avg_usec``, ``p99_usec``,
``p999_usec`` ...) or bandwidth in Gbit/s (``bw_avg_gbps``, ``bw_peak_gbps``).
A failed probe is a record with ``ok=False`` and ``result["error"]`` in words
(and ``result["stage"]``, ``result["failed_host"]``), never an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleet.collectors.commands import Arg, Command, command, gated, sequence
from fleet.collectors.parsers.perftest import parse_perftest
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.probe_sessions import Launcher
from fleet.collectors.probes.ports import PortAllocator
from fleet.collectors.sshpool import RunResult
from fleet.fabric.records import ProbeRecord

LAT_TESTS = ("ib_send_lat", "ib_write_lat", "ib_read_lat")
BW_TESTS = ("ib_send_bw", "ib_write_bw", "ib_read_bw")

DEFAULT_LAT_SIZE_BYTES = 2
"""perftest's own default for latency tests."""
DEFAULT_BW_SIZE_BYTES = 65536
"""perftest's own default for bandwidth tests: large enough to reach line rate."""

LISTEN_WAIT_S = 3.0
"""How long to wait for the server's "Waiting for client" banner before trying the client
anyway: a real perftest's stdout is block-buffered over SSH, so the banner may only
arrive at exit. Connection refusals are then retried (``CONNECT_RETRIES``)."""
CONNECT_RETRIES = 5
"""Tries of a client that was refused while its server had not yet said it listens."""
CONNECT_RETRY_DELAY_S = 0.3
"""The most a refused client waits before its next try; the server's banner ends the wait at once."""
PORT_RETRIES = 3
"""Other ports to try when a server cannot listen on its port (held by someone else)."""
SERVER_GRACE_S = 5.0
"""How long the server may take to print its half after its client finished."""
KILL_AFTER_S = 2
"""``timeout -k``: seconds between SIGTERM and SIGKILL for a server that ignores TERM."""
AFTER_GRACE_S = 2 * SERVER_GRACE_S
"""How much longer than ``timeout_s`` a probe waits for the probes ``after`` (see ``run_perftest``):
each of them is already measuring, so ends within its own ``timeout_s``, its server's
grace to finish and its grace to stop."""

_WAITING = "Waiting for client to connect"
_CANNOT_LISTEN = ("Couldn't listen", "Unable to open file descriptor")
_CANNOT_CONNECT = ("Couldn't connect",)

StageCallback = Callable[[str], None]
"""Told each stage as it starts: "gid", "server", "listening", "client", "done".

"client" means the measurement starts: the NICs are free (``run_perftest``'s ``after``)."""


@dataclass(frozen=True, slots=True)
class PerftestSpec:
    """What to measure: ``src`` runs the client on ``src_nic``, ``dst`` the server on ``dst_nic``."""

    src: str
    dst: str
    test: str = "ib_send_lat"
    src_nic: str = "mlx5_0"
    dst_nic: str = ""
    """"" means the same device name as ``src_nic``."""
    size_bytes: int | None = None
    """None: 2 bytes for latency, 65536 for bandwidth (perftest's defaults)."""
    iterations: int | None = None
    """None: perftest's default (1000 for latency, 5000 for bandwidth)."""
    ib_port: int = 1
    gid_index: int | None = None
    """None: found on each side (RoCE v2 with IPv4; none on InfiniBand)."""
    flow_label: int | None = None
    """RoCE GRH flow label: changes the UDP source port and so the ECMP path."""
    qps: int = 1
    timeout_s: float = 30.0
    """The whole probe, GID look-up included; the server's ``timeout`` is this plus a margin."""
    peer_address: str = ""
    """What the client connects to for the set-up exchange; "" means the ``dst`` name."""
    job: str = ""
    run_id: str = ""

    def __post_init__(self) -> None:
        if self.test not in LAT_TESTS + BW_TESTS:
            raise ValueError(f"unknown perftest {self.test!r}; one of {', '.join(LAT_TESTS + BW_TESTS)}")
        if self.src == self.dst and (self.dst_nic or self.src_nic) == self.src_nic:
            raise ValueError("a probe needs two different NICs")

    @property
    def kind(self) -> str:
        """"lat" or "bw"."""
        return "lat" if self.test in LAT_TESTS else "bw"

    @property
    def server_nic(self) -> str:
        return self.dst_nic or self.src_nic

    @property
    def size(self) -> int:
        if self.size_bytes is not None:
            return self.size_bytes
        return DEFAULT_LAT_SIZE_BYTES if self.kind == "lat" else DEFAULT_BW_SIZE_BYTES


class ProbeFailed(Exception):
    """A probe that cannot go on; ``stage`` and ``host`` say where."""

    def __init__(self, stage: str, host: str, reason: str) -> None:
        super().__init__(f"{host}: {reason}")
        self.stage = stage
        self.host = host
        self.reason = reason


@dataclass
class GidCache:
    """GID index per (host, device, port), looked up once: a link test asks for each NIC many times.

    Value None: InfiniBand, no ``-x`` needed.
    """

    known: dict[tuple[str, str, int], int | None] = field(default_factory=dict)

    async def index(self, launcher: Launcher, host: str, device: str, ib_port: int, timeout_s: float) -> int | None:
        key = (host, device, ib_port)
        if key not in self.known:
            self.known[key] = await lookup_gid_index(launcher, host, device, ib_port, timeout_s)
        return self.known[key]

    async def pair(self, launcher: Launcher, spec: PerftestSpec) -> tuple[int | None, int | None]:
        """The client's and the server's GID index, both looked up at once when either is unknown."""
        client = (spec.src, spec.src_nic, spec.ib_port)
        server = (spec.dst, spec.server_nic, spec.ib_port)
        if client in self.known and server in self.known:  # a link test's usual case: no task to start
            return self.known[client], self.known[server]
        found = await asyncio.gather(self.index(launcher, *client, spec.timeout_s), self.index(launcher, *server, spec.timeout_s))
        return found[0], found[1]


async def lookup_gid_index(launcher: Launcher, host: str, device: str, ib_port: int, timeout_s: float) -> int | None:
    """The GID index perftest needs on ``host``'s ``device``: None on InfiniBand; raises ProbeFailed."""
    sysfs = f"/sys/class/infiniband/{device}/ports/{ib_port}/link_layer"
    result = await launcher.run(host, sequence(command("cat", sysfs), command("show_gids", device, ib_port)), timeout_s)
    if not result.ok and not result.stdout:
        raise ProbeFailed("gid", host, _reach_reason(result))
    link_layer = result.stdout.splitlines()[0].strip() if result.stdout.strip() else ""
    if link_layer not in ("InfiniBand", "Ethernet"):
        raise ProbeFailed("gid", host, f"no RDMA device {device} port {ib_port} ({_first(result.stderr)})")
    if link_layer == "InfiniBand":
        return None
    index = parse_show_gids(result.stdout).roce_v2_index(device, ib_port)
    if index is None:
        raise ProbeFailed(
            "gid", host,
            f"{device} port {ib_port} is RoCE but has no RoCE v2 GID with an IPv4 address "
            "(is its netdev up with an address? is show_gids installed?); pass a GID index",
        )  # fmt: skip
    return index


def perftest_argv(spec: PerftestSpec, device: str, gid_index: int | None, port: int) -> list[Arg]:
    """perftest options shared by both sides; the client adds the server's address."""
    args: list[Arg] = ["-d", device, "-i", spec.ib_port, "-p", port, "-s", spec.size]
    if gid_index is not None:
        args += ["-x", gid_index]
    if spec.iterations is not None:
        args += ["-n", spec.iterations]
    if spec.flow_label is not None:
        args += ["--flow_label", spec.flow_label]
    if spec.qps != 1:
        args += ["-q", spec.qps]
    if spec.kind == "bw":
        args.append("--report_gbits")
    return args


def _timed(seconds: float, tool: str, args: list[Arg]) -> Command:
    return command("timeout", "-k", KILL_AFTER_S, max(1, int(seconds + 0.999)), tool, *args)


async def run_perftest(
    launcher: Launcher,
    spec: PerftestSpec,
    *,
    ports: PortAllocator | None = None,
    gids: GidCache | None = None,
    on_stage: StageCallback | None = None,
    clock: Callable[[], float] = time.time,
    after: Sequence[asyncio.Future[Any]] = (),
    on_client_ended: Callable[[], None] | None = None,
) -> ProbeRecord:
    """Run one probe; always returns a record (``ok=False`` with the reason on failure).

    ``after``: done once the two NICs are free of the probes they are still in
    (a link test's previous round, each already measuring). The server starts
    at once; the client starts, and the measurement with it, only once they are
    all done. That wait does not count against ``timeout_s`` (it is bounded by
    ``timeout_s`` plus AFTER_GRACE_S), and the server's own ``timeout`` allows for it.
    ``on_client_ended`` is told once the client has exited, before the server's
    half is read: the client's NIC measures no more.

    Cancelling the calling task still closes the server side before the
    CancelledError propagates.
    """
    ports = ports or PortAllocator()
    gids = gids or GidCache()
    stage = on_stage or (lambda _s: None)
    started = time.monotonic()
    ts = clock()
    params: dict[str, Any] = {
        "test": spec.test, "size_bytes": spec.size, "iterations": spec.iterations, "ib_port": spec.ib_port,
        "flow_label": spec.flow_label, "qps": spec.qps, "timeout_s": spec.timeout_s,
    }  # fmt: skip
    raw: list[str] = []

    def record(ok: bool, result: dict[str, Any]) -> ProbeRecord:
        return ProbeRecord(
            ts=ts, kind=spec.kind, src=spec.src, dst=spec.dst, src_nic=spec.src_nic, dst_nic=spec.server_nic,
            ok=ok, params=params, result=result, raw="".join(raw), job=spec.job, run_id=spec.run_id,
        )  # fmt: skip

    try:
        async with asyncio.timeout(spec.timeout_s) as deadline:
            stage("gid")
            if spec.gid_index is None:
                client_gid, server_gid = await gids.pair(launcher, spec)
            else:
                client_gid = server_gid = spec.gid_index
            params["gid_index"] = {"client": client_gid, "server": server_gid}
            remaining = spec.timeout_s - (time.monotonic() - started)
            turn = _Turn(after, spec.timeout_s + AFTER_GRACE_S if after else 0.0, deadline)
            client_text = await _with_server(launcher, spec, ports, client_gid, server_gid, remaining, raw, stage, params,
                                             turn, on_client_ended or (lambda: None))
    except ProbeFailed as failure:
        return record(False, {"error": f"{failure.host}: {failure.reason}", "stage": failure.stage,
                              "failed_host": failure.host})
    except TimeoutError:
        return record(False, {"error": f"probe did not finish within {spec.timeout_s:g} s", "stage": "timeout",
                              "failed_host": ""})
    stage("done")
    return _parsed(spec, client_text, record)


def _parsed(spec: PerftestSpec, client_text: str, record: Callable[[bool, dict[str, Any]], ProbeRecord]) -> ProbeRecord:
    parsed = parse_perftest(client_text)
    if spec.kind == "lat" and parsed.lat_rows:
        row = parsed.lat_rows[0]
        return record(True, {
            "size_bytes": row.bytes, "iterations": row.iterations, "t_min_usec": row.t_min_usec,
            "t_max_usec": row.t_max_usec, "t_typical_usec": row.t_typical_usec, "t_avg_usec": row.t_avg_usec,
            "t_stdev_usec": row.t_stdev_usec, "p99_usec": row.p99_usec, "p999_usec": row.p999_usec,
        })  # fmt: skip
    if spec.kind == "bw" and parsed.bw_rows:
        bw = parsed.bw_rows[0]
        return record(True, {
            "size_bytes": bw.bytes, "iterations": bw.iterations, "bw_peak_gbps": bw.bw_peak_gbps,
            "bw_avg_gbps": bw.bw_avg_gbps, "msg_rate_mpps": bw.msg_rate_mpps,
        })  # fmt: skip
    return record(False, {"error": f"{spec.src}: the client printed no result row", "stage": "parse",
                          "failed_host": spec.src})


async def _with_server(
    launcher: Launcher,
    spec: PerftestSpec,
    ports: PortAllocator,
    client_gid: int | None,
    server_gid: int | None,
    budget_s: float,
    raw: list[str],
    stage: StageCallback,
    params: dict[str, Any],
    turn: _Turn,
    client_ended: Callable[[], None],
) -> str:
    """Start the server, run the client against it, stop the server whatever happens; the client's text."""
    last_reason = ""
    for _ in range(PORT_RETRIES):
        port = ports.acquire(spec.dst)
        params["port"] = port
        try:
            server = _Server(launcher, spec, server_gid, port, budget_s + turn.wait_s)
            stage("server")
            raw.append(f"# server {spec.dst}: {server.command.text}\n")
            try:
                listening = await server.start()
                if not listening and server.cannot_listen():
                    last_reason = f"perftest server cannot listen on port {port}: {_first(server.text())}"
                    continue
                if not listening and server.ended():
                    raise ProbeFailed("server", spec.dst, f"perftest server exited: {server.reason()}")
                stage("listening")
                gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                client = asyncio.ensure_future(_client(launcher, spec, client_gid, port, budget_s, server, raw, gate))
                try:
                    await turn.wait(spec)
                    stage("client")
                    gate.set_result(None)
                    client_text = await client
                finally:
                    client.cancel()
                client_ended()
                await server.finish(SERVER_GRACE_S)
            finally:
                await server.stop()
                raw.append(f"# server {spec.dst} output:\n{server.text()}")
        finally:
            ports.release(spec.dst, port)
        return client_text
    raise ProbeFailed("server", spec.dst, last_reason)


async def _client(
    launcher: Launcher, spec: PerftestSpec, gid: int | None, port: int, budget_s: float, server: _Server,
    raw: list[str], gate: asyncio.Future[None],
) -> str:
    """The client, staged at once and started when ``gate`` is done (``fleet.collectors.commands.gated``:
    its SSH session is opened while the NICs' previous probes still measure), then retried, started
    at once, while the server has not yet listened (its banner may be buffered).

    Only a refusal of a try started after the server's banner was heard is the server's answer: the
    banner and the refusal come back over two SSH sessions from two nodes, so a server that starts
    listening while the refusal is on its way (a slow node, whose server starts late) is often heard
    before the refusal is read. Judged by the server's state when the refusal is read, a healthy pair
    would fail."""
    args = [*perftest_argv(spec, spec.src_nic, gid, port), spec.peer_address or spec.dst]
    cmd = _timed(budget_s, spec.test, args)
    result: RunResult | None = None
    for attempt in range(CONNECT_RETRIES):
        ran = gated(cmd) if attempt == 0 else cmd
        listened = server.listening  # before the try: what the refusal can be an answer to
        result = await launcher.run(spec.src, ran, budget_s, gate if attempt == 0 else None)
        refused = any(text in result.stderr for text in _CANNOT_CONNECT)
        if result.ok or not refused or listened or server.ended() or attempt == CONNECT_RETRIES - 1:
            break
        await server.wait_listening(CONNECT_RETRY_DELAY_S)  # a back-off that its banner ends, not a wait for a result
    assert result is not None
    text = f"$ {cmd.text}\n{result.stdout}{result.stderr}"
    raw.append(f"# client {spec.src}:\n{text}")
    if not result.ok:
        if result.exit_status is None:
            raise ProbeFailed("client", spec.src, _reach_reason(result))
        raise ProbeFailed("client", spec.src, f"perftest client failed ({result.reason}): {_first(result.stderr)}")
    return text


class _Turn:
    """Waits, between a listening server and its client, for the probes its NICs are still in."""

    def __init__(self, after: Sequence[asyncio.Future[Any]], wait_s: float, deadline: asyncio.Timeout) -> None:
        self.after = after
        self.wait_s = wait_s
        """The longest the wait may take; 0 without probes to wait for."""
        self.deadline = deadline

    async def wait(self, spec: PerftestSpec) -> None:
        """Until everything ``after`` is done; the probe's own deadline is held meanwhile."""
        if not self.after or all(f.done() for f in self.after):
            return
        loop = asyncio.get_running_loop()
        when = self.deadline.when()
        left = None if when is None else when - loop.time()
        self.deadline.reschedule(None)
        _, pending = await asyncio.wait(self.after, timeout=self.wait_s)
        if pending:
            raise ProbeFailed("wait", spec.dst, f"the previous probes of {spec.src_nic} on {spec.src} and "
                              f"{spec.server_nic} on {spec.dst} did not end within {self.wait_s:g} s")
        self.deadline.reschedule(None if left is None else loop.time() + left)


class _Server:
    """The perftest server as an SSH stream: started, watched for its banner, always stopped."""

    def __init__(self, launcher: Launcher, spec: PerftestSpec, gid: int | None, port: int, budget_s: float) -> None:
        self.launcher = launcher
        self.spec = spec
        self.command = _timed(budget_s + SERVER_GRACE_S, spec.test, perftest_argv(spec, spec.server_nic, gid, port))
        self.budget_s = budget_s
        self.lines: list[str] = []
        self.listening = False
        self._heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[RunResult] | None = None

    def _on_line(self, line: str) -> None:
        self.lines.append(line)
        if not self.listening and _WAITING in line:
            self.listening = True
            self._heard.set_result(None)

    async def start(self) -> bool:
        """Start the server; True once its banner came, False when it ended or stayed silent."""
        self._task = asyncio.ensure_future(self.launcher.stream(
            self.spec.dst, self.command, self._on_line, first_line_timeout_s=self.budget_s + SERVER_GRACE_S,
            line_timeout_s=self.budget_s + SERVER_GRACE_S, stop=self._stop,
        ))  # fmt: skip
        await self.wait_listening(LISTEN_WAIT_S)
        return self.listening

    async def wait_listening(self, timeout_s: float) -> None:
        """Until its banner comes or it ends, at most ``timeout_s``."""
        assert self._task is not None
        either: set[asyncio.Future[Any]] = {self._heard, self._task}
        await asyncio.wait(either, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)

    def ended(self) -> bool:
        return self._task is not None and self._task.done()

    def result(self) -> RunResult | None:
        if self._task is None or not self._task.done() or self._task.cancelled():
            return None
        return self._task.result()

    def cannot_listen(self) -> bool:
        result = self.result()
        return result is not None and any(t in result.stderr + self.text() for t in _CANNOT_LISTEN)

    def reason(self) -> str:
        result = self.result()
        if result is None:
            return "no answer"
        if result.exit_status is None:
            return _reach_reason(result)
        return result.reason or "exit status 0 before any client"

    def text(self) -> str:
        result = self.result()
        stderr = result.stderr if result is not None else ""
        return "".join(line + "\n" for line in self.lines) + stderr

    async def finish(self, grace_s: float) -> None:
        """Let the server print its half after the client is done (bounded by ``grace_s``)."""
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=grace_s)

    async def stop(self) -> None:
        """Close the server's SSH channel and wait for the stream to end; safe to call twice.

        Runs from ``finally`` blocks, also while the probe is being cancelled:
        the wait is shielded so the channel is closed before cancellation goes on.
        """
        task = self._task
        if task is None or task.done():
            return
        self._stop.set()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.shield(asyncio.wait_for(asyncio.shield(task), SERVER_GRACE_S))
        if not task.done():
            task.cancel()


def _reach_reason(result: RunResult) -> str:
    return f"{result.state.value}: {result.reason}" if result.reason else result.state.value


def _first(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return "no output"


__all__ = [
    "BW_TESTS", "LAT_TESTS", "GidCache", "PerftestSpec", "ProbeFailed", "lookup_gid_index",
    "perftest_argv", "run_perftest",
]  # fmt: skip
