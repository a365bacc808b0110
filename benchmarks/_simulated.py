"""A simulated fleet in its own process (``fleet sim``), as a console on another machine would face it.

The scenarios are the benchmarks' own: :func:`busy_fleet` (4 leaf groups, 32 spines, 4 jobs: 1,024
nodes come with 64 switches) for start-up and collection, :func:`idle_fleet` (4 leaf groups, 8
spines, no jobs) for the link test, whose pairs must have their links to themselves.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from benchmarks._options import fleet_path
from benchmarks.report import BenchmarkFailed
from fleet.console.cli.sim_process import SimProcess, SimulatorFailed, start_sim

_BUSY = """\
description = "Benchmark fleet: {nodes} nodes in 4 leaf groups, 4 jobs."

[fabric]
nodes = {nodes}
nodes_per_leaf = {per_leaf}
spines = 32
link_layer = "roce"
link_gbps = 400
seed = 1
{jobs}"""

_IDLE = """\
description = "Link test benchmark: {nodes} idle nodes, 4 leaf groups."

[fabric]
nodes = {nodes}
nodes_per_leaf = {per_leaf}
spines = 8
link_layer = "roce"
link_gbps = 400
seed = 1
"""


def busy_fleet(nodes: int) -> str:
    """Scenario TOML: ``nodes`` RoCE nodes in 4 leaf groups, a quarter of them per job (4 jobs)."""
    jobs = ""
    quarter = max(1, nodes // 4)
    for k in range(min(4, nodes)):
        first, last = k * quarter + 1, nodes if k == 3 else (k + 1) * quarter
        if first <= last:
            jobs += (f'\n[[jobs]]\nid = {9000 + k}\ntenant = "t{k}"\n'
                     f'nodes = "gpu[{first:03d}-{last:03d}]"\nload = 0.6\n')
    return _BUSY.format(nodes=nodes, per_leaf=-(-nodes // 4), jobs=jobs)


def idle_fleet(nodes: int) -> str:
    """Scenario TOML: ``nodes`` idle RoCE nodes in 4 leaf groups, 8 spines."""
    return _IDLE.format(nodes=nodes, per_leaf=max(1, -(-nodes // 4)))


class Simulated(NamedTuple):
    """A simulator that is ready, and how long it took from its start to its ready line."""

    sim: SimProcess
    start_to_ready_s: float


@contextlib.contextmanager
def simulator(scenario: str, workdir: Path, *, timeout_s: float = 300.0,
              tree: Path | None = None) -> Iterator[Simulated]:
    """``fleet sim`` on ``scenario`` (TOML text), ready, stopped on exit.

    ``tree``: run the simulator of that source tree instead (a checkout, e.g. a ``git worktree add``
    of an earlier commit): the child is started there with the tree's ``fleet`` first on
    ``PYTHONPATH`` (:func:`fleet_path`)."""
    path = workdir / "bench.toml"
    path.write_text(scenario, encoding="utf-8")
    saved_path, saved_cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    if tree is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(fleet_path(tree.resolve())), saved_path) if p)
        os.chdir(tree)
    started = time.monotonic()
    try:
        sim = start_sim(str(path), workdir / "sim", timeout_s=timeout_s)
    except SimulatorFailed as error:
        raise BenchmarkFailed(f"the simulator did not start: {error}") from None
    finally:
        if tree is not None:
            os.chdir(saved_cwd)
            if saved_path is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved_path
    ready_s = time.monotonic() - started
    try:
        yield Simulated(sim, ready_s)
    finally:
        sim.stop()
