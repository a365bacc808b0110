"""Our own loop's lateness is measured, and never held against a host as hung or slow.

The fault simulated here is the collector's event loop being busy (``time.sleep`` on the loop: a
thousand other hosts' lines, a commit holding the GIL, a starved CPU): the server, on the same
loop, is held up with it, exactly as data waiting in a socket buffer would be.
"""

from __future__ import annotations

import asyncio
import time

import asyncssh
from byte_ssh import ByteServer, named

from fleet.collectors.loop_lag import LoopLag
from fleet.collectors.sshpool import SshPool
from fleet.fabric.states import HostState

BUSY_S = 1.0
"""How long the loop is kept busy: twice the timeouts below."""


async def _ticks(lag: LoopLag, count: int) -> None:
    """Let the lag timer run ``count`` times (the loop free in between)."""
    for _ in range(count):
        await asyncio.sleep(lag.period_s)


async def test_a_busy_loop_is_measured_an_idle_one_is_not() -> None:
    lag = LoopLag(period_s=0.01, tolerance_s=0.005)
    lag.start()
    try:
        await _ticks(lag, 3)
        idle = lag.total_s
        time.sleep(BUSY_S)  # the loop is busy: no timer can run
        await _ticks(lag, 2)
        assert lag.total_s - idle >= BUSY_S - lag.period_s - lag.tolerance_s
        assert lag.since(idle) == lag.total_s - idle and lag.since(lag.total_s + 1) == 0.0
    finally:
        lag.stop()
    assert not lag.running


async def test_lateness_counts_before_the_timer_has_had_its_turn() -> None:
    """A line read at the end of a long pass of the loop is judged in that pass: the wait so far
    is already ours, though the timer runs only after it."""
    lag = LoopLag(period_s=0.01, tolerance_s=0.005)
    lag.start()
    try:
        await _ticks(lag, 3)
        before = lag.total_s
        time.sleep(BUSY_S)  # no await: the timer cannot have run
        during = lag.total_s
        assert during - before >= BUSY_S - lag.period_s - lag.tolerance_s
        await _ticks(lag, 2)
        assert lag.total_s >= during  # the timer's count takes over where the overdue time left off
        lag.stop()
        stopped = lag.total_s
        time.sleep(0.05)
        assert lag.total_s == stopped  # stopped: it no longer grows
    finally:
        lag.stop()


async def test_a_stream_is_not_hung_while_our_own_loop_was_busy(byte_server: ByteServer, pool: SshPool) -> None:
    async def steady(process: asyncssh.SSHServerProcess[bytes]) -> None:
        for seq in range(4):
            process.stdout.write(f"{seq}\n".encode())
            await asyncio.sleep(0.05)  # the agent's interval being simulated
        await process.stdin.read()

    byte_server.handlers["steady"] = steady
    lines: list[str] = []
    stop = asyncio.Event()

    def on_line(line: str) -> None:
        lines.append(line)
        if line == "1":
            time.sleep(BUSY_S)  # our loop busy for twice the line timeout, between two lines
        if line == "3":
            stop.set()

    result = await pool.stream("gpu100", named("steady"), on_line, first_line_timeout_s=5, line_timeout_s=0.5,
                               stop=stop)
    assert (result.state, result.reason) == (HostState.OK, "stream stopped")
    assert lines == ["0", "1", "2", "3"]
    assert pool.lag.total_s >= BUSY_S - 0.1


async def test_a_command_is_not_hung_while_our_own_loop_was_busy(byte_server: ByteServer, pool: SshPool) -> None:
    async def answers(process: asyncssh.SSHServerProcess[bytes]) -> None:
        await asyncio.sleep(0.05)  # its answer comes while our loop is busy
        process.stdout.write(b"done\n")
        process.exit(0)

    byte_server.handlers["answers"] = answers
    assert (await pool.connect("gpu100")).ok

    async def busy_soon() -> None:
        await asyncio.sleep(0.01)
        time.sleep(BUSY_S)

    busy = asyncio.ensure_future(busy_soon())
    result = await pool.run("gpu100", named("answers"), timeout_s=0.5)
    await busy
    assert (result.state, result.stdout) == (HostState.OK, "done\n"), result.reason


async def test_a_silent_host_is_still_hung(byte_server: ByteServer, pool: SshPool) -> None:
    """The lateness only moves a deadline: a host that never answers is hung all the same."""
    async def silent(process: asyncssh.SSHServerProcess[bytes]) -> None:
        await process.stdin.read()

    byte_server.handlers["silent"] = silent
    result = await pool.run("gpu100", named("silent"), timeout_s=0.3)
    assert (result.state, result.reason) == (HostState.HUNG, "no output within 0.3 s")
