"""The simulated agent with ``--changed-only``: full lines first and every F-th, changed-only
lines between, and the collector's ``AgentStream`` rebuilds exactly the full lines' samples."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers.agent_lines import read_whole
from helpers.agent_reference import agent_line
from sim_helpers import small_model

from fleet.collectors.agent_reader import AgentStream, decode_agent_line, host_sample
from fleet.simulator.agent_stream import AgentOptions, _options
from fleet.simulator.session import Machine, Rendezvous, StreamIO
from fleet.simulator.shell import Shell


def test_options_parse_changed_only() -> None:
    assert _options(["--interval", "1", "--changed-only", "--full-every", "5"]) == AgentOptions(
        interval_s=1.0, changed_only=True, full_every=5)
    assert _options(["--interval=2"]).changed_only is False
    with pytest.raises(ValueError, match="positive"):
        _options(["--interval", "1", "--changed-only", "--full-every", "0"])


async def test_changed_only_stream_rebuilds_the_full_lines() -> None:
    model = small_model()
    ticks = iter(float(t) for t in range(40, 400))
    now = 40.0

    def clock() -> float:
        return now

    model.now = clock  # type: ignore[method-assign]
    lines: list[str] = []
    enough = asyncio.Event()
    full_at: dict[int, str] = {}

    def out(text: str) -> None:
        nonlocal now
        doc = json.loads(text)
        full_at[doc["seq"]] = json.dumps(agent_line(model.node_view("gpu002", now), model.unix(now), doc["seq"],
                                                    0.01, optics=(doc["seq"] - 1) % 2 == 0))
        lines.append(text)
        now = next(ticks)  # the node's counters move between lines
        if len(lines) >= 7:
            enough.set()

    io = StreamIO(out, out)
    shell = Shell(Machine("gpu002", model.topology.role_of("gpu002"), model, Rendezvous()))
    task = asyncio.create_task(shell.run(
        "python3 -u -c 'import agent' --interval 0.01 --optics-every 2 --changed-only --full-every 3", io))
    await asyncio.wait_for(enough.wait(), 10)
    io.stdin_eof.set()
    assert await asyncio.wait_for(task, 5) == 0
    docs = [json.loads(line) for line in lines[:7]]
    assert [d.get("changed_only", False) for d in docs] == [False, True, True, False, True, True, False]
    assert all(len(lines[i]) * 2 < len(full_at[i + 1]) for i in (1, 2, 4) if "optics_text" not in lines[i])
    stream = AgentStream("gpu002")
    for text in lines[:7]:
        seq = json.loads(text)["seq"]
        expected = host_sample(decode_agent_line(full_at[seq]), "gpu002")
        assert read_whole(stream, text).values == expected.values
