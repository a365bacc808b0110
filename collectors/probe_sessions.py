"""The probes' commands through one probe runner per node, or through SSH sessions where it cannot run.

Why: a link test on 128 nodes starts 16,256 perftest sides. Each through its
own SSH session costs a channel open, an exec request, output, exit status,
EOF and two closes at both ends, and on a real node sshd's fork, PAM and the
login shell; in a link test the channels are about half of the console's
CPU. The probe runner (``collectors/probe_runner.py``) is
started once per node on the node's python3 and keeps its session: a start is
one line, a stop another, and the output comes back as lines tagged with the
command's id (docs/probe-runner.md).

``ProbeSessions`` has ``SshPool``'s ``run`` and ``stream`` (the ``Launcher``
protocol the probes take), with the same results: a probe runs the same way
whichever carries it. A command with no ``argv`` (a sequence, a glob) and
every command on a node where the runner cannot start (no python3, a python3
older than 3.6) go through the pool's SSH sessions; a node that cannot be
reached fails as it would there. Nothing from a node reaches a shell: the
runner starts ``argv`` without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import orjson

from fleet.collectors.commands import Command, runner_command
from fleet.collectors.node_script import node_script_source
from fleet.collectors.sshpool import STDERR_KEEP_BYTES, RunResult, SshPool, failure_reason
from fleet.fabric.states import HostState

RUNNER_START_TIMEOUT_S = 10.0
"""How long a runner may take to say it is ready after its session was requested."""
_FOREVER_S = 1e9
"""The runner's own stream has no line timeout: it is silent while no probe runs."""


class Launcher(Protocol):
    """What starts a probe's commands: ``SshPool`` or ``ProbeSessions``."""

    async def run(self, host: str, command: Command, timeout_s: float,
                  gate: asyncio.Future[None] | None = None) -> RunResult: ...

    async def stream(self, host: str, command: Command, on_line: Callable[[str], None], *,
                     first_line_timeout_s: float, line_timeout_s: float,
                     stop: asyncio.Event | None = None) -> RunResult: ...


def runner_source() -> str:
    """The runner as sent with ``python3 -u -c``."""
    return node_script_source("probe_runner.py")


class ProbeSessions:
    """One probe runner per node, started on first use and kept until ``close``."""

    def __init__(self, pool: SshPool, *, exec_hosts: Iterable[str] | None = None) -> None:
        self.pool = pool
        self.exec_hosts = set(exec_hosts if exec_hosts is not None else (
            host for host in pool.hosts if pool.inventory_host(host).mode != "agent"))
        """Hosts whose commands go through SSH sessions: by default those the inventory keeps
        to commands (no fleet Python runs there), and those where the runner could not run."""
        self._runners: dict[str, _Runner] = {}
        self._known = frozenset(pool.hosts)
        self._ids = itertools.count(1)

    async def run(self, host: str, command: Command, timeout_s: float,
                  gate: asyncio.Future[None] | None = None) -> RunResult:
        """As ``SshPool.run``; a gated command is started when ``gate`` is done (one line to the runner)."""
        if command.gated != (gate is not None):
            raise ValueError("a gated command needs a gate, and a gate a gated command")
        runner = await self._runner(host, command, timeout_s)
        if runner is None:
            return await self.pool.run(host, command, timeout_s, gate)
        if isinstance(runner, RunResult):
            return runner
        if gate is not None:
            await asyncio.shield(gate)  # cancelled before its turn: nothing was started
        job = runner.start(next(self._ids), command.argv, None)
        try:
            async with asyncio.timeout(timeout_s):
                await job.done
        except TimeoutError:
            out = "".join(job.stdout)
            what = "no output" if not out else f"not finished ({len(out)} characters of output so far)"
            return RunResult(host, HostState.HUNG, stdout=out, stderr=job.stderr_text(), reason=f"{what} within "
                             f"{timeout_s:g} s", seconds=time.monotonic() - job.started)
        finally:
            runner.stop(job)  # when cancelled: the process goes with the probe (a no-op once it ended)
        return job.result(host, self.pool.settings.slow_threshold_s)

    async def stream(self, host: str, command: Command, on_line: Callable[[str], None], *,
                     first_line_timeout_s: float, line_timeout_s: float,
                     stop: asyncio.Event | None = None) -> RunResult:
        """As ``SshPool.stream``: OK when ``stop`` was set (the process is stopped) or it exited 0."""
        runner = await self._runner(host, command, first_line_timeout_s)
        if runner is None:
            return await self.pool.stream(host, command, on_line, first_line_timeout_s=first_line_timeout_s,
                                          line_timeout_s=line_timeout_s, stop=stop)
        if isinstance(runner, RunResult):
            return runner
        stop = stop or asyncio.Event()
        job = runner.start(next(self._ids), command.argv, on_line)
        stop_wait = asyncio.ensure_future(stop.wait())
        loop = asyncio.get_running_loop()
        try:
            while not job.done.done():
                limit = first_line_timeout_s if job.lines == 0 else line_timeout_s
                left = job.last_at + limit - loop.time()
                if left <= 0:
                    what = "no first line" if job.lines == 0 else f"no line after line {job.lines}"
                    return RunResult(host, HostState.HUNG, stderr=job.stderr_text(), lines=job.lines,
                                     reason=f"{what} within {limit:g} s", seconds=time.monotonic() - job.started)
                done, _ = await asyncio.wait((job.done, stop_wait), timeout=left,
                                             return_when=asyncio.FIRST_COMPLETED)
                if stop_wait in done:
                    return RunResult(host, HostState.OK, reason="stream stopped", lines=job.lines,
                                     seconds=time.monotonic() - job.started)
        finally:
            stop_wait.cancel()
            runner.stop(job)
        job.flush()
        if job.error is not None:
            raise job.error  # ``on_line``'s own failure, as SshPool.stream raises it
        return job.result(host, 0.0, streamed=True)

    def prepare(self, hosts: Iterable[str]) -> None:
        """Start the runners of ``hosts`` now, without waiting for them: a link test does it alongside
        its local checks, so that its first round does not start 128 runners as well."""
        for host in hosts:
            if host in self._known and host not in self.exec_hosts and host not in self._runners:
                self._runners[host] = _Runner(self.pool, host, self._gone)

    async def close(self, timeout_s: float = 5.0) -> None:
        """End every runner's session: each stops what it still runs and exits."""
        runners = list(self._runners.values())
        self._runners.clear()
        for runner in runners:
            runner.close()
        if runners:
            await asyncio.wait([runner.task for runner in runners], timeout=timeout_s)

    async def _runner(self, host: str, command: Command, timeout_s: float) -> _Runner | RunResult | None:
        """The host's runner once ready; a RunResult when the host cannot be reached; None: use SSH."""
        if not command.argv or host in self.exec_hosts or host not in self._known:
            return None  # (a host the pool does not know: its KeyError, as the pool's)
        self.prepare((host,))
        runner = self._runners[host]
        if not runner.ready.done():
            await asyncio.wait((runner.ready,), timeout=timeout_s)
            if not runner.ready.done():
                return RunResult(host, HostState.HUNG, reason=f"probe runner not ready within {timeout_s:g} s")
        if runner.ready.result():
            return runner
        if runner.not_ready is None:  # it ran and failed: no python3, one too old
            self.exec_hosts.add(host)
            return None
        return runner.not_ready

    def _gone(self, runner: _Runner) -> None:
        if self._runners.get(runner.host) is runner:
            del self._runners[runner.host]


class _Runner:
    """One node's runner: its session, and the jobs it runs by id."""

    def __init__(self, pool: SshPool, host: str, gone: Callable[[_Runner], None]) -> None:
        self.host = host
        self.jobs: dict[int, _Job] = {}
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[bool] = loop.create_future()
        """True once it said hello; False when its session ended first (``not_ready`` says why)."""
        self.ended: RunResult | None = None
        self.not_ready: RunResult | None = None
        """Why it never became ready, when its session ended first: the pool's own result (unreachable,
        auth_failed, host_key_mismatch) or hung; None when it ran and failed (no python3 there)."""
        self._write: Callable[[bytes], None] | None = None
        self._stop = asyncio.Event()
        self._gone = gone
        self._late = False
        self._start_timer = loop.call_later(RUNNER_START_TIMEOUT_S, self._no_hello)
        self.task = asyncio.ensure_future(self._serve(pool))

    def _no_hello(self) -> None:
        """Not ready in time, even though it may have printed something: it is ended, not waited for."""
        if not self.ready.done():
            self._late = True
            self._stop.set()

    async def _serve(self, pool: SshPool) -> None:
        result = RunResult(self.host, HostState.UNREACHABLE, reason="probe runner cancelled")
        try:
            result = await pool.stream(self.host, runner_command(runner_source()), self._on_line,
                                       first_line_timeout_s=RUNNER_START_TIMEOUT_S, line_timeout_s=_FOREVER_S,
                                       stop=self._stop, on_open=self._opened)
        finally:
            self._start_timer.cancel()
            self._write = None
            self.ended = result
            if not self.ready.done():
                self.not_ready = self._why_not_ready(result)
                self.ready.set_result(False)
            lost = _lost(result)
            for job in self.jobs.values():
                job.end(lost)
            self.jobs.clear()
            self._gone(self)

    def _why_not_ready(self, result: RunResult) -> RunResult | None:
        if self._late or result.state == HostState.HUNG:
            return RunResult(self.host, HostState.HUNG, reason=f"probe runner did not start within "
                                                               f"{RUNNER_START_TIMEOUT_S:g} s")
        if result.exit_status is not None:
            return None
        return result

    def _opened(self, write: Callable[[bytes], None]) -> None:
        self._write = write

    def _on_line(self, line: str) -> None:
        """One message of the runner; what is not one (a node printing garbage) is dropped."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if not isinstance(message, dict):
            return
        ident = message.get("id")
        if ident is None:
            if message.get("runner") == 1 and not self.ready.done():
                self.ready.set_result(True)
            return
        job = self.jobs.get(ident) if isinstance(ident, int) else None
        if job is None:
            return
        if isinstance(text := message.get("out"), str):
            job.out(text)
        elif isinstance(text := message.get("err"), str):
            job.err(text)
        elif isinstance(status := message.get("exit"), int) and not isinstance(status, bool):
            del self.jobs[ident]
            job.exited(status, "")
        elif isinstance(name := message.get("signal"), str):
            del self.jobs[ident]
            job.exited(-1, name)
        elif isinstance(error := message.get("error"), str):
            del self.jobs[ident]
            job.end(RunResult(self.host, HostState.COMMAND_FAILED, reason=f"probe runner: {error[:200]}"))

    def start(self, ident: int, argv: tuple[str, ...], on_line: Callable[[str], None] | None) -> _Job:
        job = _Job(on_line)
        if self._write is None:  # its session ended after it said hello (``_serve`` set ``ended`` then)
            assert self.ended is not None
            job.end(_lost(self.ended))
            return job
        self.jobs[ident] = job
        job.ident = ident
        self._send({"id": ident, "argv": argv})
        return job

    def stop(self, job: _Job) -> None:
        """Stop the job's process (its output from now on is dropped); nothing once it has ended."""
        if self.jobs.pop(job.ident, None) is not None:
            self._send({"id": job.ident, "stop": 1})

    def close(self) -> None:
        self._stop.set()

    def _send(self, message: dict[str, Any]) -> None:
        if self._write is not None:
            with contextlib.suppress(Exception):  # the channel closed under us: _serve ends the jobs
                self._write(orjson.dumps(message) + b"\n")


def _lost(ended: RunResult) -> RunResult:
    reason = f"probe runner ended: {ended.reason}" if ended.reason else "probe runner ended"
    state = ended.state if ended.state.is_failure else HostState.UNREACHABLE
    return RunResult(ended.host, state, reason=reason)


class _Job:
    """One command the runner started: its output so far and how it ended."""

    __slots__ = ("done", "error", "failure", "ident", "last_at", "lines", "on_line", "partial", "signal", "started",
                 "status", "stderr", "stdout")

    def __init__(self, on_line: Callable[[str], None] | None) -> None:
        loop = asyncio.get_running_loop()
        self.ident = 0
        self.on_line = on_line
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.partial = ""
        self.lines = 0
        self.last_at = loop.time()
        self.started = time.monotonic()
        self.status: int | None = None
        self.signal = ""
        self.failure: RunResult | None = None
        self.error: Exception | None = None
        self.done: asyncio.Future[None] = loop.create_future()

    def out(self, text: str) -> None:
        if self.on_line is None:
            self.stdout.append(text)
            return
        if "\n" not in text:
            self.partial += text
            return
        *whole, self.partial = (self.partial + text).split("\n")
        self.last_at = asyncio.get_running_loop().time()
        for line in whole:
            self._deliver(line)

    def _deliver(self, line: str) -> None:
        """One line to ``on_line``; what it raises ends this command (and is raised by ``stream``), not the runner."""
        if self.error is not None or self.on_line is None:
            return
        self.lines += 1
        try:
            self.on_line(line)
        except Exception as exc:
            self.error = exc
            if not self.done.done():
                self.done.set_result(None)

    def err(self, text: str) -> None:
        self.stderr.append(text)
        if len(self.stderr) > 64:
            self.stderr = [self.stderr_text()]

    def flush(self) -> None:
        """The last line had no newline: it is still a line."""
        if self.partial:
            line, self.partial = self.partial, ""
            self._deliver(line)

    def stderr_text(self) -> str:
        return "".join(self.stderr)[-STDERR_KEEP_BYTES:]

    def exited(self, status: int, signal: str) -> None:
        self.status, self.signal = status, signal
        if not self.done.done():
            self.done.set_result(None)

    def end(self, failure: RunResult) -> None:
        self.failure = failure
        if not self.done.done():
            self.done.set_result(None)

    def result(self, host: str, slow_s: float, *, streamed: bool = False) -> RunResult:
        """As the pool reports the same ending (``streamed``: as ``SshPool.stream``)."""
        seconds = time.monotonic() - self.started
        out = "" if streamed else "".join(self.stdout)
        err = self.stderr_text()
        lines = self.lines if streamed else 0
        if self.failure is not None:
            return RunResult(host, self.failure.state, stdout=out, stderr=err, reason=self.failure.reason,
                             seconds=seconds, lines=lines)
        status = self.status
        if status != 0:
            reason = failure_reason(status, self.signal, err)
            if streamed and status is not None and status >= 0:
                reason = f"stream ended with {reason}"
            return RunResult(host, HostState.COMMAND_FAILED, stdout=out, stderr=err, exit_status=status,
                             reason=reason, seconds=seconds, lines=lines)
        if streamed:
            return RunResult(host, HostState.OK, stderr=err, exit_status=0, reason="stream ended", seconds=seconds,
                             lines=lines)
        if slow_s and seconds > slow_s:
            return RunResult(host, HostState.SLOW, stdout=out, stderr=err, exit_status=0, seconds=seconds,
                             reason=f"answered in {seconds:.2f} s (slow above {slow_s:g} s)")
        return RunResult(host, HostState.OK, stdout=out, stderr=err, exit_status=0, seconds=seconds)


__all__ = ["RUNNER_START_TIMEOUT_S", "Launcher", "ProbeSessions", "runner_source"]
