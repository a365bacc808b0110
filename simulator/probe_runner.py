"""fleet's probe runner on a simulated node: ``python3 -u -c <runner> --probe-runner``.

The console starts one per node for its probes (``collectors/probe_runner.py``,
docs/probe-runner.md) and sends it one JSON line per command to start or stop.
This answers as the real runner does, line for line and byte for byte in
format: the hello, each command's output as ``out``/``err`` messages, its
``exit`` status or the ``signal`` that stopped it, ``error`` for a request it
cannot read, exit status 127 for a program the node does not have. Each
command runs as its own line of the node's shell, alongside the others; a
stop cancels it (a waiting perftest server leaves the fleet's rendezvous),
and the end of the runner's stdin (the session closed, the connection gone)
stops them all. A node that hangs takes requests and never answers them; a
slow one answers each after its delay.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Awaitable, Callable
from json.encoder import encode_basestring_ascii
from typing import Any

from fleet.simulator.session import Machine, StreamIO

RunWords = Callable[[list[str], StreamIO], Awaitable[int]]
"""Runs one command given as words, as a line of its own (``Shell.run_words``)."""


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
"""What the real runner's ``json.dumps(message, separators=(",", ":"))`` writes, with one encoder for all."""


def _output(ident: int, stream: str, text: str) -> str:
    """``_ENCODE({"id": ident, stream: text})`` without the encoder's walk: a run's output is most of what
    a runner says. The text is escaped by the function ``json.dumps`` uses for it (ASCII only)."""
    return f'{{"id":{ident},"{stream}":{encode_basestring_ascii(text)}}}'


class _Say:
    """The runner's messages of one turn of the event loop, written to its stdout together.

    A command's last output and its exit status come in the same turn (a
    perftest client prints its report and exits), as do the ends of several
    commands; a real runner's pipe hands them to sshd together as well. Written
    one by one, each would be an SSH packet of its own, to encrypt here and to
    decrypt and dispatch on the console (a link test on 128 nodes ends 16,256).
    """

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._lines: list[str] = []

    def __call__(self, message: dict[str, Any]) -> None:
        self.line(_ENCODE(message))

    def output(self, ident: int, stream: str, text: str) -> None:
        self.line(_output(ident, stream, text))

    def line(self, line: str) -> None:
        if not self._lines:
            asyncio.get_running_loop().call_soon(self._flush)
        self._lines.append(line + "\n")

    def _flush(self) -> None:
        text = "".join(self._lines)
        self._lines.clear()
        self._write(text)


def runner_pid(host: str) -> int:
    """A pid for the runner's hello: fixed per host, in the range a busy node hands out."""
    return 2000 + zlib.crc32(host.encode()) % 60000


async def serve(machine: Machine, run_words: RunWords, is_program: Callable[[str], bool], io: StreamIO) -> int:
    """Read requests until the end of stdin; every command still running is then stopped."""
    say = _Say(io.stdout)
    say({"runner": 1, "pid": runner_pid(machine.host)})
    jobs: dict[int, asyncio.Task[None]] = {}

    def request(line: str) -> None:
        if line.strip():
            _request(machine, line, jobs, run_words, is_program, say)

    try:
        io.stdin.take_lines(request)
        await io.stdin_eof.wait()
    finally:
        for task in jobs.values():
            task.cancel()
    return 0


def _request(machine: Machine, line: str, jobs: dict[int, asyncio.Task[None]], run_words: RunWords,
             is_program: Callable[[str], bool], say: _Say) -> None:
    try:
        request = json.loads(line + "\n")  # as the real runner reads it: with its newline (in errors' columns)
        ident = request["id"]
        if not isinstance(ident, int) or isinstance(ident, bool):
            raise ValueError("id must be an integer")
    except (ValueError, KeyError, TypeError) as exc:
        say({"id": None, "error": f"bad request: {exc}"})
        return
    if request.get("stop"):
        task = jobs.get(ident)
        if task is not None:
            task.cancel()
        return
    argv = request.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(word, str) for word in argv):
        say({"id": ident, "error": "bad request: argv must be a non-empty list of strings"})
        return
    if ident in jobs:
        say({"id": ident, "error": f"bad request: id {ident} is running"})
        return
    if not is_program(argv[0]):
        say({"id": ident, "err": f"runner: cannot run {argv[0]}: No such file or directory\n"})
        say({"id": ident, "exit": 127})
        return
    asked_at = asyncio.get_running_loop().time()
    task = asyncio.ensure_future(_job(machine, ident, argv, run_words, say, asked_at))
    jobs[ident] = task
    task.add_done_callback(lambda _t: jobs.pop(ident, None))


async def _job(machine: Machine, ident: int, argv: list[str], run_words: RunWords, say: _Say,
               asked_at: float) -> None:
    model = machine.model
    behaviour = model.behaviour(machine.host, model.now())
    out = StreamIO(lambda text: say.output(ident, "out", text), lambda text: say.output(ident, "err", text),
                   asked_at=None if behaviour.delay_s else asked_at)  # a slow node's own delay comes first
    try:
        if behaviour.hung:
            await asyncio.Event().wait()  # taken, never answered: until the console stops it
        if behaviour.delay_s:
            await asyncio.sleep(behaviour.delay_s)
        status = await run_words(argv, out)
    except asyncio.CancelledError:
        out.closed.set()
        out.stdin_eof.set()
        say({"id": ident, "signal": "TERM"})
        raise
    say({"id": ident, "exit": status})


__all__ = ["runner_pid", "serve"]
