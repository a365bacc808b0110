"""Commands a simulated machine answers, printing exactly what the real tool prints.

Each stateless tool is a function ``(ToolContext, argv) -> ToolOutput`` in
``REGISTRY`` under the command name (``argv[0]`` is that name). The shell in
``fleet.simulator.shell`` splits ``a; b; c``, looks each command up here (or in its
own stateful handlers: perftest, all_reduce_perf, switch configuration, the
node agent) and answers ``sh: 1: X: not found`` with exit 127 otherwise.
Tool modules register themselves through ``register``; ``load_all`` imports
them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Protocol

from fleet.simulator.qos_state import NodeQos
from fleet.simulator.state import JobView, LldpNeighbor, NicView, NodeView, OpticsView, SwitchView


class LazyNode(Protocol):
    """A node at one instant whose parts are computed on first use (``fleet.simulator.model.NodeParts``).

    A renderer that reads a small part of a node (sysfs counters) asks for
    that part instead of the whole ``NodeView``; ``view()`` is built from the
    same parts, so both ways print the same numbers.
    """

    @property
    def name(self) -> str: ...

    @property
    def rails(self) -> range: ...

    @property
    def memo(self) -> dict[Hashable, object]:
        """Run-long store shared by the fleet's machines, for what depends only on the fleet's fixed shape."""
        ...

    def view(self) -> NodeView: ...

    def nic_head(self, rail: int) -> NicView:
        """Identity and link state of one NIC; its counters, hw_counters and ethtool are empty."""
        ...

    def rail_of(self, netdev: str) -> int | None:
        """The rail of the NIC named ``netdev`` by the OS, None when the node has none."""
        ...

    def qos(self) -> NodeQos:
        """The node's RoCE, PCIe and driver configuration (``fleet.simulator.qos_state``)."""
        ...

    def optics(self, rail: int) -> OpticsView:
        """The module readings of one NIC (``ethtool -m``)."""
        ...

    def lldp(self, rail: int) -> LldpNeighbor | None:
        """The LLDP neighbour of one NIC (None while its link is down), as its full view has it."""
        ...

    def counters(self, rail: int) -> dict[str, int]: ...

    def counter_names(self, rail: int) -> tuple[str, ...]:
        """The names ``counters(rail)`` has, in its order, without computing a value."""
        ...

    def hw_counter_names(self, rail: int) -> tuple[str, ...]:
        """The names ``hw_counters(rail)`` has, in its order, without computing a value."""
        ...

    def hw_counters(self, rail: int) -> dict[str, int]: ...

    def ethtool(self, rail: int) -> dict[str, int]: ...


class ToolContext:
    """What a command may look at. Fabric-wide views are callables: computed only on demand.

    ``node`` is the node's whole view; when the context is given ``parts``
    instead, the view is built from them on first access, and renderers that
    read only some parts use ``parts`` directly.
    """

    __slots__ = ("_node", "all_nodes", "all_switches", "hostname", "jobs", "now", "parts", "switch")

    def __init__(
        self,
        hostname: str,
        now: float,  # simulated unix time
        node: NodeView | None = None,
        switch: SwitchView | None = None,
        jobs: Callable[[], tuple[JobView, ...]] = lambda: (),
        all_nodes: Callable[[], tuple[NodeView, ...]] = lambda: (),
        all_switches: Callable[[], tuple[SwitchView, ...]] = lambda: (),
        parts: LazyNode | None = None,
    ) -> None:
        self.hostname = hostname
        self.now = now
        self.switch = switch
        self.jobs = jobs
        self.all_nodes = all_nodes
        self.all_switches = all_switches
        self.parts = parts
        self._node = node

    @property
    def node(self) -> NodeView | None:
        if self._node is None and self.parts is not None:
            self._node = self.parts.view()
        return self._node


@dataclass(frozen=True, slots=True)
class ToolOutput:
    stdout: str
    stderr: str = ""
    exit_status: int = 0


ToolFn = Callable[[ToolContext, list[str]], ToolOutput]

REGISTRY: dict[str, ToolFn] = {}

TOOL_MODULES: tuple[str, ...] = (
    "fleet.simulator.tools.ib",
    "fleet.simulator.tools.sysfs",
    "fleet.simulator.tools.ethtool",
    "fleet.simulator.tools.rdma",
    "fleet.simulator.tools.lldp",
    "fleet.simulator.tools.nvidia_smi",
    "fleet.simulator.tools.slurm",
    "fleet.simulator.tools.nvue",
    "fleet.simulator.tools.sonic",
    "fleet.simulator.tools.system",
    "fleet.simulator.tools.roce",
    "fleet.simulator.tools.sonic_qos",
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
