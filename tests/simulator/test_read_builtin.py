"""The simulated shell's stdin: ``read`` (what gates a pre-staged perftest client, ``read -r _ && ...``)
and the lines the probe runner takes."""

from __future__ import annotations

import asyncio

from sim_helpers import small_model

from fleet.collectors.agent_reader import agent_source
from fleet.collectors.commands import agent_command, runner_command
from fleet.collectors.probe_sessions import runner_source
from fleet.simulator.server import FleetServer
from fleet.simulator.session import Stdin, StreamIO


async def _run(line: str, feed: list[str | None]) -> tuple[str, int]:
    """Run ``line`` on gpu001 while ``feed`` arrives on stdin (None: end of stdin)."""
    shell = FleetServer(small_model()).shell("gpu001")
    out: list[str] = []
    io = StreamIO(out.append, out.append)
    task = asyncio.ensure_future(shell.run(line, io))
    for data in feed:
        await asyncio.sleep(0.01)
        assert not task.done(), "read returned before its line came"
        if data is None:
            io.stdin_eof.set()
        else:
            io.stdin.feed(data)
    status = await asyncio.wait_for(task, 5)
    return "".join(out), status


async def test_a_line_on_stdin_opens_the_gate() -> None:
    assert await _run("read -r _ && echo go", ["g", "o\n"]) == ("go\n", 0)


async def test_end_of_stdin_without_a_line_keeps_it_shut() -> None:
    assert await _run("read -r _ && echo go", ["partial", None]) == ("", 1)


async def test_read_is_not_answered_at_once() -> None:
    shell = FleetServer(small_model()).shell("gpu001")
    assert shell.run_now("read -r _ && echo go") is None
    assert shell.output_only("read -r _ && timeout 5 ib_write_lat -d mlx5_0 gpu002")


def test_lines_taken_as_they_come_whole_and_in_order() -> None:
    """The probe runner's stdin: each whole line handed on from the data callback, what came first first."""
    stdin = Stdin()
    taken: list[str] = []
    stdin.feed("early\npart")
    stdin.take_lines(taken.append)
    assert taken == ["early"]
    stdin.feed("ial\n\nlast")
    assert taken == ["early", "partial", ""]
    stdin.feed("\n")
    assert taken == ["early", "partial", "", "last"] and stdin.pending == ""


def test_the_probe_runner_runs_on_the_sessions_fast_path() -> None:
    """No asyncssh process streams for it: it reads stdin from the session's own callback."""
    shell = FleetServer(small_model()).shell("gpu001")
    assert shell.output_only(runner_command(runner_source()).text)
    assert not shell.output_only(agent_command(agent_source(), 1.0).text)  # the agent paces its output
