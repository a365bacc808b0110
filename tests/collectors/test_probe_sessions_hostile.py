"""ProbeSessions against runners that misbehave: garbage, silence, refusals, death, no python3.

The "runner" here is a loopback SSH server that writes exactly the bytes a test
gives it (test_sshpool_sessions' ByteServer): what a broken or hostile node
could send. Nothing of it may raise in the console or stall another command.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import asyncssh
import pytest
from byte_ssh import ByteServer, Handler, named, writes

from fleet.collectors import probe_sessions
from fleet.collectors.probe_sessions import ProbeSessions
from fleet.collectors.sshpool import SshPool
from fleet.fabric.states import HostState

pytestmark = pytest.mark.timeout(30)

HELLO = b'{"runner":1,"pid":4321}\n'


def runner(answer: Sequence[bytes], *, before: Sequence[bytes] = (), hello: bytes = HELLO) -> Handler:
    """A runner that writes ``before`` and ``hello``, then answers each start with ``answer``
    (``{id}`` in it replaced by the request's id) until its stdin ends."""

    async def handler(process: asyncssh.SSHServerProcess[bytes]) -> None:
        for data in (*before, hello):
            process.stdout.write(data)
        while line := await process.stdin.readline():
            request = json.loads(line)
            if "argv" in request:
                for data in answer:
                    process.stdout.write(data.replace(b"{id}", str(request["id"]).encode()))
        process.exit(0)

    return handler


def _sessions(pool: SshPool) -> ProbeSessions:
    return ProbeSessions(pool, exec_hosts=())  # this test host is in command mode: ask for the runner anyway


async def test_garbage_around_the_messages_is_dropped(byte_server: ByteServer, pool: SshPool) -> None:
    junk = [b"not json\n", b"[1, 2]\n", b'"text"\n', b'{"id":"{id}","out":"x"}\n', b'{"id":99,"out":"x"}\n',
            b'{"id":{id},"out":5}\n', b'{"id":{id},"exit":"0"}\n', b'{"id":{id},"exit":true}\n', b"\xff\xfe\n",
            b'{"id":{id},"signal":7}\n', b'{"id":null,"runner":2}\n', b"{" * 10_000 + b"\n"]
    byte_server.handlers["--probe-runner"] = runner(
        [*junk, b'{"id":{id},"out":"he"}\n{"id":{id},"err":"warn\\n"}\n', b'{"id":{id},"out":"llo\\n"}\n',
         b'{"id":{id},"exit":0}\n'], before=junk)
    sessions = _sessions(pool)
    try:
        result = await sessions.run("gpu100", named("x"), 5)
    finally:
        await sessions.close()
    assert (result.state, result.stdout, result.stderr, result.exit_status) == (HostState.OK, "hello\n", "warn\n", 0)


async def test_a_runner_that_never_says_hello_is_hung_not_waited_for(
    byte_server: ByteServer, pool: SshPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe_sessions, "RUNNER_START_TIMEOUT_S", 0.3)
    byte_server.handlers["--probe-runner"] = runner([], hello=b'{"runner":"maybe"}\n')
    sessions = _sessions(pool)
    try:
        result = await sessions.run("gpu100", named("x"), 5)
    finally:
        await sessions.close()
    assert (result.state, result.reason) == (HostState.HUNG, "probe runner did not start within 0.3 s")


async def test_no_python3_means_ssh_sessions(byte_server: ByteServer, pool: SshPool) -> None:
    byte_server.handlers["--probe-runner"] = writes(stderr=(b"bash: python3: command not found\n",), status=127)
    byte_server.handlers["x"] = writes(b"by ssh\n")
    sessions = _sessions(pool)
    try:
        first = await sessions.run("gpu100", named("x"), 5)
        second = await sessions.run("gpu100", named("x"), 5)
    finally:
        await sessions.close()
    assert first.stdout == second.stdout == "by ssh\n" and first.ok
    assert sessions.exec_hosts == {"gpu100"}


async def test_a_refused_request_is_a_failed_command(byte_server: ByteServer, pool: SshPool) -> None:
    byte_server.handlers["--probe-runner"] = runner([b'{"id":{id},"error":"bad request: no"}\n'])
    sessions = _sessions(pool)
    try:
        result = await sessions.run("gpu100", named("x"), 5)
    finally:
        await sessions.close()
    assert result.state == HostState.COMMAND_FAILED and result.reason == "probe runner: bad request: no"


async def test_a_runner_that_dies_fails_its_commands_at_once(byte_server: ByteServer, pool: SshPool) -> None:
    async def dies(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(HELLO)
        await process.stdin.readline()
        process.stdout.write(b'{"id":1,"out":"partial')
        process.exit(1)

    byte_server.handlers["--probe-runner"] = dies
    sessions = _sessions(pool)
    try:
        result = await asyncio.wait_for(sessions.run("gpu100", named("x"), 10), 3)
    finally:
        await sessions.close()
    assert result.state == HostState.COMMAND_FAILED and result.exit_status is None
    assert result.reason == "probe runner ended: stream ended with exit status 1"


async def test_ten_megabytes_of_output_arrive_whole(byte_server: ByteServer, pool: SshPool) -> None:
    chunk = "x" * 65535 + "\n"
    byte_server.handlers["--probe-runner"] = runner(
        [*(b'{"id":{id},"out":"' + chunk.replace("\n", "\\n").encode() + b'"}\n' for _ in range(160)),
         b'{"id":{id},"exit":0}\n'])
    sessions = _sessions(pool)
    try:
        result = await sessions.run("gpu100", named("x"), 20)
    finally:
        await sessions.close()
    assert result.ok and result.stdout == chunk * 160
