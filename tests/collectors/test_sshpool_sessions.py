"""What SshPool.run and SshPool.stream make of raw bytes, packet boundaries and endings.

The server here (``byte_ssh.ByteServer``) writes bytes exactly as given, one SSH
data packet per write, so a character can be split across packets the way a
real sshd splits a pipe. The expected values are what asyncssh's process API
(the pool's first implementation) returned for the same bytes.
"""

from __future__ import annotations

import asyncio

import asyncssh
import pytest
from byte_ssh import ByteServer, Handler, named, writes

from fleet.collectors.commands import CommandError, command, gated, sequence
from fleet.collectors.sshpool import STDERR_KEEP_BYTES, RunResult, SshPool
from fleet.fabric.states import HostState

SPLIT = (b"caf\xc3", b"\xa9 \xe2\x82", b"\xac\n", b"x\n\n", b"bad \xff byte\r\n", b"no newline \xf0\x9f", b"\x98\x80")
"""UTF-8 characters cut between packets, an empty line, an invalid byte, a CR, a last line without newline."""


async def test_run_decodes_characters_split_across_packets(byte_server: ByteServer, pool: SshPool) -> None:
    byte_server.handlers["split"] = writes(*SPLIT, stderr=(b"warn \xe2", b"\x82\xac\n"))
    result = await pool.run("gpu100", named("split"), timeout_s=5)
    assert result.state is HostState.OK
    assert result.stdout == "café €\nx\n\nbad \ufffd byte\r\nno newline 😀"
    assert result.stderr == "warn €\n"
    assert result.exit_status == 0


async def test_stream_lines_split_across_packets(byte_server: ByteServer, pool: SshPool) -> None:
    byte_server.handlers["split"] = writes(*SPLIT, b"a\nb\nc", b"d\n")
    lines: list[str] = []
    result = await pool.stream("gpu100", named("split"), lines.append, first_line_timeout_s=5, line_timeout_s=5)
    assert lines == ["café €", "x", "", "bad \ufffd byte\r", "no newline 😀a", "b", "cd"]
    assert (result.state, result.reason, result.lines, result.exit_status) == (HostState.OK, "stream ended", 7, 0)


async def test_stream_last_line_without_newline_is_delivered(byte_server: ByteServer, pool: SshPool) -> None:
    byte_server.handlers["tail"] = writes(b"one\ntwo \xe2\x82", b"\xac")
    lines: list[str] = []
    result = await pool.stream("gpu100", named("tail"), lines.append, first_line_timeout_s=5, line_timeout_s=5)
    assert lines == ["one", "two €"]
    assert result.lines == 2


async def test_run_closes_stdin_at_once(byte_server: ByteServer, pool: SshPool) -> None:
    async def wait_for_eof(process: asyncssh.SSHServerProcess[bytes]) -> None:
        await byte_server.read_stdin_to_eof("cat", process)
        process.stdout.write(b"stdin closed\n")
        process.exit(0)

    byte_server.handlers["cat"] = wait_for_eof
    result = await pool.run("gpu100", named("cat"), timeout_s=5)
    assert (result.state, result.stdout) == (HostState.OK, "stdin closed\n")


async def test_run_keeps_the_stderr_tail_of_a_failure(byte_server: ByteServer, pool: SshPool) -> None:
    noise = "".join(f"line {index} → ärger\n" for index in range(20000)).encode()
    pieces = tuple(noise[start:start + 1000] for start in range(0, len(noise), 1000))  # cuts through characters
    byte_server.handlers["noisy"] = writes(b"partial\n", stderr=pieces, status=3)
    result = await pool.run("gpu100", named("noisy"), timeout_s=10)
    assert result.state is HostState.COMMAND_FAILED
    assert result.exit_status == 3
    assert result.stdout == "partial\n"
    assert result.stderr == noise.decode()[-STDERR_KEEP_BYTES:]
    assert result.reason == f"exit status 3: {result.stderr.splitlines()[0]}"  # the tail's first, cut line


@pytest.mark.parametrize("how", ["run", "stream"])
async def test_killed_by_signal(byte_server: ByteServer, pool: SshPool, how: str) -> None:
    async def killed(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"started\n")
        process.exit_with_signal("KILL")

    byte_server.handlers["victim"] = killed
    if how == "run":
        result = await pool.run("gpu100", named("victim"), timeout_s=5)
        assert (result.state, result.reason, result.exit_status) == (HostState.COMMAND_FAILED, "killed by signal KILL", -1)
        assert result.stdout == "started\n"
    else:
        lines: list[str] = []
        result = await pool.stream("gpu100", named("victim"), lines.append, first_line_timeout_s=5, line_timeout_s=5)
        assert (result.state, result.reason, result.exit_status) == (
            HostState.COMMAND_FAILED, "stream ended with exit status -1", -1)
        assert lines == ["started"]


async def test_run_hung_counts_whole_characters_so_far(byte_server: ByteServer, pool: SshPool) -> None:
    release = asyncio.Event()

    async def stalls(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"ab\xe2\x82")  # a character's first two bytes, then silence
        await release.wait()

    byte_server.handlers["stall"] = stalls
    try:
        result = await pool.run("gpu100", named("stall"), timeout_s=0.3)
    finally:
        release.set()
    assert (result.state, result.stdout) == (HostState.HUNG, "ab")
    assert result.reason == "not finished (2 characters of output so far) within 0.3 s"


async def test_stream_stop_from_on_line_delivers_no_later_line(byte_server: ByteServer, pool: SshPool) -> None:
    async def burst(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"1\n2\n3\n4\n5\n")  # one packet
        await byte_server.read_stdin_to_eof("burst", process)
        process.exit(0)

    byte_server.handlers["burst"] = burst
    stop = asyncio.Event()
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        if line == "2":
            stop.set()

    result = await pool.stream("gpu100", named("burst"), on_line, first_line_timeout_s=5, line_timeout_s=5, stop=stop)
    assert (result.state, result.reason, result.lines) == (HostState.OK, "stream stopped", 2)
    assert lines == ["1", "2"]
    await asyncio.wait_for(byte_server.stdin_closed["burst"].wait(), timeout=5)


async def test_stream_on_line_error_is_raised_and_channel_closed(byte_server: ByteServer, pool: SshPool) -> None:
    async def forever(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"boom\n")
        await process.stdin.read()  # ends when the client closes the channel

    byte_server.handlers["forever"] = forever

    def on_line(line: str) -> None:
        raise ValueError(f"cannot parse {line!r}")

    with pytest.raises(ValueError, match="cannot parse 'boom'"):
        await pool.stream("gpu100", named("forever"), on_line, first_line_timeout_s=5, line_timeout_s=5)
    await asyncio.wait_for(byte_server.finished["forever"].wait(), timeout=5)
    byte_server.handlers["hostname"] = writes(b"gpu100\n")
    after = await pool.run("gpu100", named("hostname"), timeout_s=5)
    assert (after.state, after.stdout) == (HostState.OK, "gpu100\n"), "the caller's error leaves the connection usable"


async def test_stream_cancelled_closes_the_channel(byte_server: ByteServer, pool: SshPool) -> None:
    async def forever(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"hello\n")
        await process.stdin.read()

    byte_server.handlers["agent"] = forever
    first = asyncio.Event()
    task = asyncio.ensure_future(pool.stream("gpu100", named("agent"), lambda line: first.set(),
                                             first_line_timeout_s=5, line_timeout_s=5))
    await asyncio.wait_for(first.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(byte_server.finished["agent"].wait(), timeout=5)


async def test_stream_no_first_line_is_hung(byte_server: ByteServer, pool: SshPool) -> None:
    async def silent(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"no newline yet")  # bytes are not a line
        await process.stdin.read()

    byte_server.handlers["silent"] = silent
    lines: list[str] = []
    result = await pool.stream("gpu100", named("silent"), lines.append, first_line_timeout_s=0.3, line_timeout_s=5)
    assert (result.state, result.reason, result.lines) == (HostState.HUNG, "no first line within 0.3 s", 0)
    assert lines == []
    await asyncio.wait_for(byte_server.finished["silent"].wait(), timeout=5)


async def test_stream_deadline_moves_with_each_line(byte_server: ByteServer, pool: SshPool) -> None:
    async def steady(process: asyncssh.SSHServerProcess[bytes]) -> None:
        for seq in range(12):
            process.stdout.write(f"{seq}\n".encode())
            await asyncio.sleep(0.1)  # the agent's interval being simulated
        process.stdout.write(b"half a line")
        await process.stdin.read()

    byte_server.handlers["steady"] = steady
    lines: list[str] = []
    result = await asyncio.wait_for(  # judged by the line timeout, not the first-line one (600 s)
        pool.stream("gpu100", named("steady"), lines.append, first_line_timeout_s=600, line_timeout_s=1.0), 60)
    assert lines == [str(seq) for seq in range(12)], "1.2 s of lines 0.1 s apart never trip a 1 s line timeout"
    assert (result.state, result.reason) == (HostState.HUNG, "no line after line 12 within 1 s")


async def test_stream_that_ends_output_but_never_exits_is_hung(byte_server: ByteServer, pool: SshPool) -> None:
    async def lingers(process: asyncssh.SSHServerProcess[bytes]) -> None:
        process.stdout.write(b"last\n")
        process.stderr.write(b"flushing\n")
        process.stdout.write_eof()
        await process.stdin.read()

    byte_server.handlers["lingers"] = lingers
    lines: list[str] = []
    result = await asyncio.wait_for(  # the end waits the line timeout (0.3 s), not the first-line one
        pool.stream("gpu100", named("lingers"), lines.append, first_line_timeout_s=600, line_timeout_s=0.3), 60)
    assert lines == ["last"]
    assert (result.state, result.reason, result.stderr) == (
        HostState.HUNG, "stream did not start or end within 600 s", "flushing\n")


async def test_stream_line_over_the_cap_ends_the_stream_and_keeps_the_connection(
        byte_server: ByteServer, pool: SshPool) -> None:
    cap = pool.settings.max_line_bytes
    text = "€" * (cap // 3 + 1000)  # three bytes each: over the cap, cut inside characters
    data = text.encode()
    pieces = tuple(data[start:start + 30000] for start in range(0, len(data), 30000))
    byte_server.handlers["huge"] = writes(b"first\n", *pieces, b"\nnext\n")
    lines: list[str] = []
    result = await pool.stream("gpu100", named("huge"), lines.append, first_line_timeout_s=10, line_timeout_s=10)
    assert (result.state, result.reason) == (HostState.UNPARSABLE, f"echo: a line over {cap} bytes")
    assert lines == ["first"], "nothing of the long line, nor after it, is delivered"
    byte_server.handlers["after"] = writes(b"fine\n")
    after = await pool.run("gpu100", named("after"), timeout_s=5)
    assert (after.state, after.stdout) == (HostState.OK, "fine\n"), "the connection serves the next command"


@pytest.mark.parametrize(("pieces", "over"), [
    ((b"x" * 30000 + b"\n",) * 300, "output over {output} bytes"),  # 9 MB in short lines
    ((b"y" * 30000,) * 40 + (b"\n",), "a line over {line} bytes"),  # 1.2 MB without a newline
    ((b"ok\n" + b"z" * 1_100_000 + b"\n",), "a line over {line} bytes"),  # one packet holds the long line
])
async def test_run_output_over_a_cap_is_unparsable_and_keeps_the_connection(
        byte_server: ByteServer, pool: SshPool, pieces: tuple[bytes, ...], over: str) -> None:
    byte_server.handlers["flood"] = writes(*pieces)
    result = await pool.run("gpu100", named("flood"), timeout_s=10)
    reason = over.format(output=pool.settings.max_output_bytes, line=pool.settings.max_line_bytes)
    assert (result.state, result.reason, result.stdout) == (HostState.UNPARSABLE, f"echo: {reason}", "")
    byte_server.handlers["after"] = writes(b"fine\n")
    after = await pool.run("gpu100", named("after"), timeout_s=5)
    assert (after.state, after.stdout) == (HostState.OK, "fine\n"), "the connection serves the next command"


async def test_run_cap_can_be_raised_for_one_command(byte_server: ByteServer, pool: SshPool) -> None:
    data = (b"q" * 1000 + b"\n") * 9000  # 9 MB: over the default, under the command's own cap
    byte_server.handlers["jobs"] = writes(*(data[start:start + 30000] for start in range(0, len(data), 30000)))
    result = await pool.run("gpu100", named("jobs"), timeout_s=10, max_output_bytes=16 << 20)
    assert result.state is HostState.OK
    assert len(result.stdout) == len(data)


# --- a gated command (collectors.commands.gated): staged at once, started by its gate ---------------


def test_a_gated_command_waits_for_a_line_and_runs_only_on_its_own() -> None:
    assert gated(command("echo", "a b")).text == "read -r _ && echo 'a b'"
    with pytest.raises(CommandError):
        gated(sequence(command("true"), command("true")))
    with pytest.raises(CommandError):
        gated(gated(command("true")))
    with pytest.raises(CommandError):
        sequence(gated(command("true")), command("true"))


def _reads_stdin(seen: list[bytes], started: asyncio.Event) -> Handler:
    async def handler(process: asyncssh.SSHServerProcess[bytes]) -> None:
        started.set()
        seen.append(await process.stdin.read())  # up to the end of stdin
        process.stdout.write(b"ran\n")
        process.exit(0)

    return handler


async def _staged(byte_server: ByteServer, pool: SshPool,
                  name: str) -> tuple[list[bytes], asyncio.Future[None], asyncio.Future[RunResult]]:
    """A gated ``name`` staged on the server: what its stdin got, its gate, the pool's run."""
    seen: list[bytes] = []
    started = asyncio.Event()
    byte_server.handlers[name] = _reads_stdin(seen, started)
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    run = asyncio.ensure_future(pool.run("gpu100", gated(named(name)), 5.0, gate))
    await asyncio.wait_for(started.wait(), 5)
    return seen, gate, run


async def test_the_gate_sends_the_line_and_the_command_answers(byte_server: ByteServer, pool: SshPool) -> None:
    seen, gate, run = await _staged(byte_server, pool, "staged")
    await asyncio.sleep(0.1)
    assert not seen and not run.done(), "nothing reaches the command before its gate"
    gate.set_result(None)
    result = await asyncio.wait_for(run, 5)
    assert result.state is HostState.OK and result.stdout == "ran\n"
    assert seen == [b"\n"]


async def test_cancelled_before_its_gate_the_channel_closes_without_a_line(byte_server: ByteServer,
                                                                          pool: SshPool) -> None:
    seen, gate, run = await _staged(byte_server, pool, "never")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await asyncio.wait_for(byte_server.finished["never"].wait(), 5)
    assert seen in ([], [b""]) and not gate.done(), "the command saw its stdin end without a line"


async def test_a_gate_and_a_gated_command_come_together(pool: SshPool) -> None:
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(ValueError):
        await pool.run("gpu100", named("x"), 5.0, gate)
    with pytest.raises(ValueError):
        await pool.run("gpu100", gated(named("x")), 5.0)


async def test_a_staged_command_that_ends_before_its_gate_is_a_failed_command(byte_server: ByteServer,
                                                                              pool: SshPool) -> None:
    """A login shell without ``read`` (or a command that fails at once) ends before the turn: that is
    the command's failure, with its status and error, not a lost connection."""
    byte_server.handlers["early"] = writes(stderr=(b"sh: 1: read: not found\n",), status=127)
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    run = asyncio.ensure_future(pool.run("gpu100", gated(named("early")), 5.0, gate))
    await asyncio.wait_for(byte_server.finished["early"].wait(), 5)
    await asyncio.sleep(0.1)
    gate.set_result(None)
    result = await asyncio.wait_for(run, 5)
    assert result.state is HostState.COMMAND_FAILED and result.exit_status == 127
    assert "read: not found" in result.stderr
