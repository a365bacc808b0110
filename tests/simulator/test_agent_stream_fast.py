"""The simulated agent's lines, built from the node's parts (``AgentLines``), are byte for byte
the lines of the straightforward build: ``agent_line`` over the node's whole view, ``changed_line``
against the line before, compact ``json.dumps`` (as ``run_python`` printed them before the fast path).

Each scenario's faults start and end inside the stream, so lines see link state, rate, QP tables,
GPUs and optics change, full and changed-only, optics lines and not, every counter and a kept few.
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from itertools import pairwise
from typing import Any

import pytest
from helpers.agent_reference import agent_line
from sim_helpers import small_model
from virtual_time import VirtualTime

from fleet.collectors.agent import changed_line, slot_paths
from fleet.collectors.agent_reader import ETHTOOL_COUNTERS
from fleet.simulator import agent_stream
from fleet.simulator.agent_stream import (
    AgentLines,
    AgentOptions,
    ModuleReadings,
    optics_readings,
)
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous, StreamIO
from fleet.simulator.shell import Shell
from fleet.simulator.tools.ethtool import render_module

FAULTS = {
    "link_down_and_qps": (
        '[[faults]]\nkind = "link_down"\ntarget = "gpu002:mlx5_1"\nat = 8\nuntil = 20\n'
        '[[faults]]\nkind = "qp_exhaustion"\ntarget = "gpu002:mlx5_3"\nqps = 50\nat = 12\nuntil = 24\n'
    ),
    "flap_and_rate": (
        '[[faults]]\nkind = "link_flap"\ntarget = "gpu002:mlx5_1"\nperiod = 4\nat = 6\n'
        '[[faults]]\nkind = "degraded_rate"\ntarget = "gpu004:mlx5_0"\ngbps = 200\nat = 10\nuntil = 22\n'
    ),
    "gpus": (
        '[[faults]]\nkind = "gpu_xid"\ntarget = "gpu002:gpu3"\nxid = 79\nat = 9\n'
        '[[faults]]\nkind = "gpu_xid"\ntarget = "gpu004:gpu1"\nxid = 74\nat = 11\n'
        '[[faults]]\nkind = "gpu_thermal"\ntarget = "gpu002:gpu5"\nat = 14\nuntil = 25\n'
    ),
    "storm_dark_optics_miswire": (
        '[[faults]]\nkind = "pfc_storm"\ntarget = "gpu004:mlx5_6"\nat = 8\n'
        '[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu002:mlx5_2"\ndb = 16\nat = 10\n'
        '[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu004:mlx5_5"\ndb = 4\nat = 10\n'
        '[[faults]]\nkind = "miswire"\ntarget = ["gpu002:mlx5_4", "gpu004:mlx5_4"]\nat = 16\n'
    ),
}
OPTIONS = {
    "changed_readings_kept": AgentOptions(optics_every=3, ethtool_keep=ETHTOOL_COUNTERS, optics_readings=True,
                                          changed_only=True, full_every=7),
    "changed_whole": AgentOptions(optics_every=4, changed_only=True, full_every=9),
    "full_lines": AgentOptions(interval_s=2.0, optics_every=5, ethtool_keep=frozenset({"rx_bits_phy", "nope"})),
}
HOSTS = ("gpu002", "gpu004")
TIMES = [5.0 + 0.75 * k for k in range(30)]  # 5 s .. 26.75 s: across the faults' starts and ends


def reference_lines(model: FleetModel, host: str, options: AgentOptions) -> list[str]:
    """The stream as ``run_python`` printed it before the fast path."""
    out = []
    previous: dict[str, Any] | None = None
    slots: dict[tuple[Any, ...], int] = {}
    for seq, t in enumerate(TIMES, 1):
        line = agent_line(model.node_view(host, t), model.unix(t), seq, options.interval_s,
                          optics=(seq - 1) % options.optics_every == 0, ethtool_keep=options.ethtool_keep,
                          readings_only=options.optics_readings)
        sent: dict[str, Any] | None = None
        if options.changed_only:
            if previous is not None and (seq - 1) % options.full_every:
                sent = changed_line(previous, line, slots)
            if sent is None:
                slots = slot_paths(line)
            previous = line
        out.append(json.dumps(sent if sent is not None else line, separators=(",", ":")) + "\n")
    return out


def fast_lines(model: FleetModel, host: str, options: AgentOptions) -> list[str]:
    lines = AgentLines(model, host, options)
    return [lines.line(model.node_parts(host, t), model.unix(t), seq) for seq, t in enumerate(TIMES, 1)]


@pytest.mark.parametrize("link_layer", ["roce", "ib"])
@pytest.mark.parametrize("options", sorted(OPTIONS))
@pytest.mark.parametrize("faults", sorted(FAULTS))
def test_fast_lines_are_the_reference_lines(faults: str, options: str, link_layer: str) -> None:
    model = small_model(FAULTS[faults], link_layer=link_layer)
    for host in HOSTS:
        reference = reference_lines(model, host, OPTIONS[options])
        fast = fast_lines(model, host, OPTIONS[options])
        for seq, (want, got) in enumerate(zip(reference, fast, strict=True), 1):
            assert got == want, (faults, options, link_layer, host, seq)


def test_the_streams_see_what_the_faults_change() -> None:
    """The comparison above is not between quiet streams: links go down, values move, lines differ."""
    model = small_model(FAULTS["link_down_and_qps"])
    docs = [json.loads(text) for text in fast_lines(model, "gpu002", OPTIONS["changed_readings_kept"])]
    changed = [doc for doc in docs if doc.get("changed_only")]
    assert changed and len(changed) < len(docs)
    states = [next(port["state"] for port in doc["ports"] if port["device"] == "mlx5_1")
              for doc in docs if not doc.get("changed_only")]
    assert "DOWN" in states and "ACTIVE" in states  # a port state that changes goes whole
    qp_slots: set[int] = set()
    moved_qps = False
    for doc in docs:
        if not doc.get("changed_only"):
            qp_slots = {slot for path, slot in slot_paths(doc).items() if path[0] == "qp_count"}
        elif "packed" in doc:
            moved = base64.b64decode(doc["packed"])
            moved_qps = moved_qps or bool(qp_slots.intersection(struct.unpack(f"<{len(moved) // 12}I",
                                                                              moved[:len(moved) // 3])))
    assert qp_slots and moved_qps
    assert any("optics_text" in entry for doc in changed for entry in doc.get("netdevs", {}).values())


@pytest.mark.parametrize("db", [0.0, 4.0, 16.0])
def test_ModuleReadings_a_module_is_the_filtered_render(db: float) -> None:
    faults = f'[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu002:mlx5_2"\ndb = {db}\nat = 0\n'
    model = small_model(faults if db else "")
    modules = [ModuleReadings() for _ in range(8)]
    for t in (30.0, 31.0, 90.0):  # readings drift with time: rows re-formatted, others kept
        parts = model.node_parts("gpu002", t)
        for rail in parts.rails:
            optics = parts.nic(rail).optics
            assert optics is not None
            assert modules[rail].text(optics) == optics_readings(render_module(optics))


async def _line_times(monkeypatch: pytest.MonkeyPatch, drain_s: float, lines: int = 9) -> list[float]:
    """When an agent streaming every 0.1 s writes its first ``lines`` lines to a client that takes
    ``drain_s`` to take each, on the stream's virtual clock (``virtual_time``)."""
    clock = VirtualTime()
    monkeypatch.setattr(agent_stream, "asyncio", clock)
    model = small_model()
    at: list[float] = []
    enough = asyncio.Event()

    def out(_: str) -> None:
        at.append(clock.now)
        if len(at) == lines:
            enough.set()

    async def slow_drain() -> None:
        await clock.sleep(drain_s)

    io = StreamIO(out, out, drain=slow_drain)
    shell = Shell(Machine("gpu002", "node", model, Rendezvous()))
    task = asyncio.create_task(shell.run("python3 -u -c 'import agent' --interval 0.1 --changed-only", io))
    await asyncio.wait_for(enough.wait(), 10)
    io.stdin_eof.set()
    assert await asyncio.wait_for(task, 5) == 0
    return at[:lines]


async def test_lines_come_on_fixed_ticks_as_the_real_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that takes 0.07 s to drain each line does not stretch the 0.1 s interval to 0.17 s."""
    at = await _line_times(monkeypatch, drain_s=0.07)
    assert [round(b - a, 9) for a, b in pairwise(at)] == [0.1] * (len(at) - 1)


async def test_a_stream_that_falls_behind_skips_the_ticks_it_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that takes 0.25 s per line gets a line every third tick, not lines piled up to catch up."""
    at = await _line_times(monkeypatch, drain_s=0.25, lines=5)
    assert [round(b - a, 9) for a, b in pairwise(at)] == [0.3] * (len(at) - 1)
