"""The real agent (``collectors/agent.py``) on a simulated node sends what the simulated agent stream sends.

The node's ``/sys`` is the simulator's tree (``build_tree`` of its view at one instant) written to
disk, and ``ethtool`` and ``rdma`` on PATH print what the simulated node's tools print at that
instant; the agent runs as a subprocess with ``--sysfs`` pointed at the tree. The simulated stream
(``AgentLines``) must send the same ports, netdev counters and QP counts, link flaps included: the
netdev's ``carrier_changes`` above all, which the collector reads from either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.simfleet import small_scenario

from fleet.collectors.agent_reader import (
    ETHTOOL_COUNTERS,
    agent_source,
    decode_agent_line,
    host_sample,
)
from fleet.simulator.agent_stream import AgentLines, AgentOptions
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell
from fleet.simulator.tools.sysfs import build_tree

FLAP = '[[faults]]\nkind = "link_flap"\ntarget = "gpu002:mlx5_1"\nperiod = 20\nat = 10\n'
"""Down windows from 10, 30, 50 s, each a few seconds long."""
START = 1_764_430_000.0


def simulated_model(link_layer: str) -> FleetModel:
    scenario = small_scenario(FLAP)
    return FleetModel(replace(scenario, fabric=replace(scenario.fabric, link_layer=link_layer)), start_unix=START)


def run_line(shell: Shell, line: str) -> str:
    answer = shell.run_now(line)
    assert answer is not None, line
    chunks, status = answer
    assert status == 0, (line, chunks)
    return "".join(text for stream, text in chunks if stream == 1)


def tool(path: Path, outputs: dict[tuple[str, ...], str]) -> None:
    """A program that prints ``outputs[argv[1:]]``, or fails as the real tool does on an unknown netdev."""
    path.write_text(
        f"#!{sys.executable}\nimport sys\nout = {outputs!r}.get(tuple(sys.argv[1:]))\n"
        "if out is None:\n    sys.stderr.write('netlink error: no device matches name\\n'); sys.exit(1)\n"
        "sys.stdout.write(out)\n"
    )
    path.chmod(0o755)


def real_agent(model: FleetModel, host: str, t: float, root: Path, *args: str) -> dict[str, Any]:
    """One line of the real agent on ``host`` as the simulator has it at ``t``."""
    model.now = lambda: t  # type: ignore[method-assign]
    view = model.node_view(host, t)
    sysfs = root / "sys"
    for path, text in build_tree(view).files.items():
        if path.startswith("/sys/"):
            target = sysfs / path.removeprefix("/sys/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    shell = Shell(Machine(host, "node", model, Rendezvous()))
    bin_dir = root / "bin"
    bin_dir.mkdir()
    tool(bin_dir / "ethtool", {("-S", nic.netdev): run_line(shell, f"ethtool -S {nic.netdev}") for nic in view.nics})
    tool(bin_dir / "rdma", {("-j", "res", "show"): run_line(shell, "rdma -j res show")})
    done = subprocess.run(
        [sys.executable, "-u", "-c", agent_source(), "--sysfs", str(sysfs), "--optics-every", "0", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env={"PATH": str(bin_dir)},
    )
    assert done.returncode == 0, done.stderr
    line: dict[str, Any] = json.loads(done.stdout)
    return line


def simulated(model: FleetModel, host: str, t: float, keep: frozenset[str] | None) -> dict[str, Any]:
    lines = AgentLines(model, host, AgentOptions(ethtool_keep=keep))
    line: dict[str, Any] = json.loads(lines.line(model.node_parts(host, t), model.unix(t), 1))
    return line


def counters(line: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {netdev: entry["ethtool"] for netdev, entry in line["netdevs"].items()}


@pytest.mark.parametrize("link_layer", ["roce", "ib"])
@pytest.mark.parametrize("keep", [None, ETHTOOL_COUNTERS], ids=["every_counter", "kept"])
def test_the_real_agent_sends_what_the_simulated_stream_sends(tmp_path: Path, link_layer: str,
                                                               keep: frozenset[str] | None) -> None:
    model = simulated_model(link_layer)
    args = () if keep is None else ("--ethtool-keep", ",".join(sorted(keep)))
    for at, t in enumerate((12.0, 17.0)):  # gpu002's mlx5_1 down in its first flap, then up again
        real = real_agent(model, "gpu002", t, tmp_path / f"{at}", *args)
        sim = simulated(model, "gpu002", t, keep)
        assert counters(real) == counters(sim)
        assert [list(ethtool) for ethtool in counters(real).values()] == \
            [list(ethtool) for ethtool in counters(sim).values()]  # same order: the same slots
        assert real["qp_count"] == sim["qp_count"]
        for real_port, sim_port in zip(real["ports"], sim["ports"], strict=True):
            # The simulated stream leaves out hw_counters/lifespan (the counters' refresh interval, ms, which
            # the simulator's sysfs has and fleet does not keep); the rest is the same, in the same order.
            hw = {name: value for name, value in real_port["hw_counters"].items() if name != "lifespan"}
            assert list((real_port | {"hw_counters": hw}).items()) == list(sim_port.items())


def test_the_real_agent_on_the_simulator_reports_every_flap(tmp_path: Path) -> None:
    """A link_flap fault raises the netdev's carrier_changes by 2 a flap; the collector stores it under the
    RDMA device and port, where the link-flap rule reads it."""
    model = simulated_model("roce")
    netdev = model.netdev(1)
    keep = ("--ethtool-keep", ",".join(sorted(ETHTOOL_COUNTERS)))
    lines = [real_agent(model, "gpu002", t, tmp_path / f"{t:g}", *keep) for t in (5.0, 17.0, 37.0, 57.0)]
    changes = [line["netdevs"][netdev]["ethtool"]["carrier_changes"] for line in lines]
    assert changes == [1, 3, 5, 7]
    samples = [host_sample(decode_agent_line(json.dumps(line)), "gpu002") for line in lines]
    assert [s.values[("carrier_changes", "mlx5_1", "1")] for s in samples] == [1.0, 3.0, 5.0, 7.0]
    assert samples[-1].values[("carrier_changes", "mlx5_0", "1")] == 1.0  # the node's other links never flapped
