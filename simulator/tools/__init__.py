"""Commands a simulated machine answers, printing exactly what the real tool prints.

Each stateless tool is a function ``(ToolContext, argv) -> ToolOutput`` in
``REGISTRY`` under the command name (``argv[0]`` is that name). The shell in
``simulator.shell`` splits ``a; b; c``, looks each command up here (or in its
own stateful handlers: perftest, all_reduce_perf, switch configuration, the
node agent) and answers ``sh: 1: X: not found`` with exit 127 otherwise.
Tool modules register themselves through ``register``; ``load_all`` imports
them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from simulator.state import JobView, NodeView, SwitchView


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a command may look at. Fabric-wide views are callables: computed only on demand."""

    hostname: str
    now: float  # simulated unix time
    node: NodeView | None = None
    switch: SwitchView | None = None
    jobs: Callable[[], tuple[JobView, ...]] = lambda: ()
    all_nodes: Callable[[], tuple[NodeView, ...]] = lambda: ()
    all_switches: Callable[[], tuple[SwitchView, ...]] = lambda: ()


@dataclass(frozen=True, slots=True)
class ToolOutput:
    stdout: str
    stderr: str = ""
    exit_status: int = 0


ToolFn = Callable[[ToolContext, list[str]], ToolOutput]

REGISTRY: dict[str, ToolFn] = {}

TOOL_MODULES: tuple[str, ...] = (
    "simulator.tools.ib",
    "simulator.tools.sysfs",
    "simulator.tools.ethtool",
    "simulator.tools.rdma",
    "simulator.tools.lldp",
    "simulator.tools.nvidia_smi",
    "simulator.tools.slurm",
    "simulator.tools.nvue",
    "simulator.tools.sonic",
    "simulator.tools.system",
)


def register(*names: str) -> Callable[[ToolFn], ToolFn]:
    """Decorator: answer the commands ``names`` with the decorated function."""

    def decorate(fn: ToolFn) -> ToolFn:
        for name in names:
            REGISTRY[name] = fn
        return fn

    return decorate


@dataclass
class _Loaded:
    done: bool = False
    missing: list[str] = field(default_factory=list)


_loaded = _Loaded()


def load_all() -> dict[str, ToolFn]:
    """Import every tool module once so that each registers its commands."""
    if not _loaded.done:
        for module in TOOL_MODULES:
            importlib.import_module(module)
        _loaded.done = True
    return REGISTRY
