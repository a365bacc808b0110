"""The simulator's probe runner writes what the real one writes, byte for byte, for the same requests.

The real runner (collectors/probe_runner.py) runs here as a child process on
this machine's programs; the simulated one answers over SSH from a simulated
node. Their lines are compared as bytes, per command (commands run side by
side, so lines of different commands may interleave differently).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys

import pytest
from simfleet import Fleet

from fleet.collectors.commands import runner_command
from fleet.collectors.probe_sessions import runner_source

pytestmark = pytest.mark.timeout(30)

REQUESTS = [
    '{"id":1,"argv":["echo","hello","w\u00f6rld","$(reboot)"]}',
    '{"id":2,"argv":["cat","/nonexistent/file"]}',
    '{"id":3,"argv":["no-such-tool","-x"]}',
    '{"id":4,"argv":["true"]}',
    '{"id":5,"argv":["false"]}',
    '{"id":6,"argv":[]}',
    '{"id":7,"argv":"echo"}',
    '{"id":8,"stop":1}',
    "{",
    "[1, 2]",
    '{"argv":["echo"]}',
    '{"id":"9","argv":["echo"]}',
    '{"id":true,"argv":["echo"]}',
]
"""One request per line, as the console would send them, and some it never would."""

_PID = re.compile(rb'"pid":\d+')


def _by_command(lines: list[bytes]) -> dict[object, list[bytes]]:
    """Each command's lines, pids masked and output chunks of one stream joined: a real runner passes
    on what each read of a pipe gave (``cat`` writes its error in two), which no other runner repeats."""
    grouped: dict[object, list[bytes]] = {}
    for line in lines:
        message = json.loads(line)
        assert (json.dumps(message, separators=(",", ":")) + "\n").encode() == line  # the runner's own format
        kept = grouped.setdefault(message.get("id", "hello"), [])
        previous = json.loads(kept[-1]) if kept else {}
        stream = next((key for key in ("out", "err") if key in message), None)
        if stream is not None and stream in previous and previous["id"] == message["id"]:
            message[stream] = previous[stream] + message[stream]
            kept.pop()
        kept.append(_PID.sub(b'"pid":N', (json.dumps(message, separators=(",", ":")) + "\n").encode()))
    return grouped


def _complete(lines: list[bytes]) -> bool:
    ends = [json.loads(line) for line in lines]
    ended = {m["id"] for m in ends if "exit" in m or "signal" in m or "error" in m}
    return {1, 2, 3, 4, 5, 6, 7} <= ended and sum(1 for m in ends if m.get("id", 0) is None) == 5


def _real() -> list[bytes]:
    """The real runner's lines for :data:`REQUESTS`, its stdin kept open until every command has
    ended, as the simulated runner's session is: at the end of its stdin a runner stops what still
    runs (SIGTERM), so a ``false`` still running then would end by a signal instead of its status."""
    process = subprocess.Popen([sys.executable, "-u", "-c", runner_source(), "--probe-runner"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(r + "\n" for r in REQUESTS).encode())
    process.stdin.flush()
    lines: list[bytes] = []
    while not _complete(lines):
        line = process.stdout.readline()  # bounded by the test's timeout
        if not line:
            break
        lines.append(line)
    rest, errors = process.communicate(timeout=20)  # closes stdin: the runner ends
    assert process.returncode == 0, errors
    return lines + rest.splitlines(keepends=True)


async def test_the_simulated_runner_writes_what_the_real_one_writes(fleet: Fleet) -> None:
    lines: list[bytes] = []
    writes: list[object] = []
    stop = asyncio.Event()
    stream = asyncio.ensure_future(fleet.pool.stream(
        "gpu001", runner_command(runner_source()), lambda line: lines.append(line.encode() + b"\n"),
        first_line_timeout_s=10, line_timeout_s=10, stop=stop, on_open=writes.append,
    ))  # fmt: skip
    try:
        assert await fleet.wait_until(lambda: bool(lines))
        write = writes[0]
        assert callable(write)
        for request in REQUESTS:
            write((request + "\n").encode())
        assert await fleet.wait_until(lambda: _complete(lines))
    finally:
        stop.set()
        await asyncio.wait_for(stream, 5)
    real = _real()
    assert _complete(real)
    assert _by_command(lines) == _by_command(real)
    assert json.loads(lines[0])["runner"] == json.loads(real[0])["runner"] == 1  # each says hello first
