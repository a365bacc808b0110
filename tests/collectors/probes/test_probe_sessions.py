"""ProbeSessions against the simulated fleet: the same results as the pool's SSH sessions, one runner per node.

Every command here crosses real SSH to the simulator's runner; what is
started, stopped or left behind is read off the simulated nodes (a waiting
perftest server is in the fleet's rendezvous until it ends).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from simfleet import Fleet, fabric_text, start_fleet

from fleet.collectors import probe_sessions
from fleet.collectors.commands import Command, command, gated, sequence
from fleet.collectors.probe_sessions import ProbeSessions
from fleet.fabric.states import HostState

pytestmark = pytest.mark.timeout(30)


def _server(port: int) -> Command:
    """A perftest server: it prints its banner and waits for a client that never comes."""
    return command("timeout", 20, "ib_write_lat", "-d", "mlx5_0", "-p", port)


@pytest.mark.parametrize("cmd", [
    command("echo", "a b", "ü;$(reboot)"),
    command("cat", "/nonexistent"),
    command("show_gids", "mlx5_1", 1),
    command("timeout", 5, "ib_write_lat", "-d", "mlx5_9", "gpu002"),
])  # fmt: skip
async def test_results_are_the_pools(fleet: Fleet, cmd: Command) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        ours = await sessions.run("gpu001", cmd, 10)
        theirs = await fleet.pool.run("gpu001", cmd, 10)
        assert (ours.state, ours.stdout, ours.stderr, ours.exit_status, ours.reason) == (
            theirs.state, theirs.stdout, theirs.stderr, theirs.exit_status, theirs.reason)
        assert fleet.runner_sessions("gpu001") == 1
    finally:
        await sessions.close()


async def test_one_runner_per_node_for_every_command(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        results = await asyncio.gather(*(sessions.run(host, command("hostname"), 10)
                                         for host in ("gpu001", "gpu002") for _ in range(5)))
        assert [r.stdout for r in results] == ["gpu001\n"] * 5 + ["gpu002\n"] * 5
        assert fleet.runner_sessions("gpu001") == 1 and fleet.runner_sessions("gpu002") == 1
    finally:
        await sessions.close()
    assert await fleet.wait_until(lambda: fleet.runner_sessions("gpu001", "gpu002") == 0)


async def test_a_program_the_node_lacks_exits_127(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        result = await sessions.run("gpu001", command("sinfo"), 10)
    finally:
        await sessions.close()
    assert result.state == HostState.COMMAND_FAILED and result.exit_status == 127
    assert result.reason == "exit status 127: runner: cannot run sinfo: No such file or directory"


async def test_a_sequence_goes_through_an_ssh_session(fleet: Fleet) -> None:
    """No shell in the runner: what needs one (a sequence, a glob) keeps its SSH session."""
    sessions = ProbeSessions(fleet.pool)
    try:
        result = await sessions.run("gpu001", sequence(command("echo", "a"), command("echo", "b")), 10)
        assert result.stdout == "a\nb\n"
        assert fleet.runner_sessions("gpu001") == 0
    finally:
        await sessions.close()


async def test_a_stream_is_stopped_on_the_node(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    lines: list[str] = []
    stop = asyncio.Event()
    try:
        task = asyncio.ensure_future(sessions.stream("gpu002", _server(18700), lines.append, first_line_timeout_s=5,
                                                     line_timeout_s=5, stop=stop))
        assert await fleet.wait_until(lambda: ("gpu002", 18700) in fleet.perftest_servers())
        assert await fleet.wait_until(lambda: any("Waiting for client" in line for line in lines))
        stop.set()
        result = await asyncio.wait_for(task, 5)
        assert result.state == HostState.OK and result.reason == "stream stopped" and result.lines == len(lines)
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
    finally:
        await sessions.close()


async def test_what_on_line_raises_is_raised_and_the_command_stopped(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)

    def refuse(line: str) -> None:
        if "Waiting" in line:
            raise ValueError("not this one")

    try:
        with pytest.raises(ValueError, match="not this one"):
            await sessions.stream("gpu002", _server(18709), refuse, first_line_timeout_s=5, line_timeout_s=5)
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
        assert (await sessions.run("gpu002", command("hostname"), 5)).stdout == "gpu002\n"  # the runner goes on
    finally:
        await sessions.close()


async def test_a_silent_stream_is_hung_and_stopped(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        result = await sessions.stream("gpu002", _server(18701), lambda _line: None, first_line_timeout_s=5,
                                       line_timeout_s=0.3)
        assert result.state == HostState.HUNG and result.reason == "no line after line 4 within 0.3 s"
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
        theirs = await fleet.pool.stream("gpu002", _server(18701), lambda _line: None, first_line_timeout_s=5,
                                         line_timeout_s=0.3)
        assert (theirs.state, theirs.reason, theirs.lines) == (result.state, result.reason, result.lines)
    finally:
        await sessions.close()


async def test_a_run_past_its_timeout_is_hung_and_stopped(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        result = await asyncio.wait_for(sessions.run("gpu002", _server(18702), 0.5), 30)  # not a 10 s wait
        assert result.state == HostState.HUNG and "within 0.5 s" in result.reason  # cut at its own timeout
        assert "Waiting for client to connect" in result.stdout
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
    finally:
        await sessions.close()


async def test_a_cancelled_run_is_stopped_on_the_node(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        task = asyncio.ensure_future(sessions.run("gpu002", _server(18703), 10))
        assert await fleet.wait_until(lambda: ("gpu002", 18703) in fleet.perftest_servers())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
    finally:
        await sessions.close()


async def test_a_gated_command_starts_with_its_gate_and_never_without(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    loop = asyncio.get_running_loop()
    try:
        gate: asyncio.Future[None] = loop.create_future()
        never = asyncio.ensure_future(sessions.run("gpu002", gated(_server(18704)), 10, gate))
        await asyncio.sleep(0.3)
        assert fleet.perftest_servers() == []
        never.cancel()
        with pytest.raises(asyncio.CancelledError):
            await never
        gate = loop.create_future()
        task = asyncio.ensure_future(sessions.run("gpu002", gated(_server(18705)), 10, gate))
        await asyncio.sleep(0.3)
        assert fleet.perftest_servers() == []
        gate.set_result(None)
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [("gpu002", 18705)])
        task.cancel()
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
        with pytest.raises(ValueError):
            await sessions.run("gpu002", _server(18706), 10, gate)
    finally:
        await sessions.close()


async def test_closing_ends_what_the_runners_still_run(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    task = asyncio.ensure_future(sessions.run("gpu003", _server(18707), 15))
    assert await fleet.wait_until(lambda: ("gpu003", 18707) in fleet.perftest_servers())
    await sessions.close()
    assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
    result = await asyncio.wait_for(task, 5)
    assert result.state == HostState.UNREACHABLE and result.reason.startswith("probe runner ended")


async def test_a_lost_connection_fails_the_commands_and_the_next_starts_a_new_runner(fleet: Fleet) -> None:
    sessions = ProbeSessions(fleet.pool)
    try:
        task = asyncio.ensure_future(sessions.run("gpu003", _server(18708), 15))
        assert await fleet.wait_until(lambda: ("gpu003", 18708) in fleet.perftest_servers())
        for connection in list(fleet.server.listeners["gpu003"].connections):
            connection.abort()  # the node's sshd drops us: the runner sees the end of its stdin
        result = await asyncio.wait_for(task, 5)
        assert result.state == HostState.UNREACHABLE
        assert result.reason.startswith("probe runner ended: connection lost")
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
        await asyncio.sleep(fleet.pool.next_retry_s("gpu003"))  # the pool backs off before reconnecting
        again = await sessions.run("gpu003", command("hostname"), 10)
        assert again.ok and again.stdout == "gpu003\n"
    finally:
        await sessions.close()


async def test_where_the_runner_cannot_run_ssh_sessions_take_over(fleet: Fleet) -> None:
    """The Slurm head has no python3 here: its runner exits 127 and its commands go through SSH sessions."""
    head = fleet.inventory.head
    assert head is not None
    assert head.name in ProbeSessions(fleet.pool).exec_hosts  # the inventory keeps it to commands
    sessions = ProbeSessions(fleet.pool, exec_hosts=())
    try:
        result = await sessions.run(head.name, command("hostname"), 10)
        assert result.ok and result.stdout == f"{head.name}\n"
        assert sessions.exec_hosts == {head.name}
    finally:
        await sessions.close()


@pytest.mark.parametrize(("fault", "state", "reason"), [
    ("node_unreachable", HostState.UNREACHABLE, "refused"),
    ("node_hang", HostState.HUNG, "probe runner did not start within 0.5 s"),
])  # fmt: skip
async def test_a_node_that_cannot_be_reached_or_hangs_fails_within_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, state: HostState, reason: str
) -> None:
    monkeypatch.setattr(probe_sessions, "RUNNER_START_TIMEOUT_S", 0.5)
    fleet = await start_fleet(tmp_path, fabric_text(faults=f'[[faults]]\nkind = "{fault}"\ntarget = "gpu002"\nat = 0\n'))
    sessions = ProbeSessions(fleet.pool)
    try:
        result = await asyncio.wait_for(sessions.run("gpu002", command("hostname"), 1.0), 30)
        assert result.state == state and reason in result.reason  # the runner's start timeout, not a retry
    finally:
        await sessions.close()
        await fleet.pool.close()
        await fleet.server.close()
