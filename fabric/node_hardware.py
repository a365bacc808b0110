"""What a node has, as its host record keeps it, and the node states that follow from it.

A node without RDMA devices or without an NVIDIA driver is a normal thing to meet: a login or CPU
node, a node mid-reinstall. Those are states of the node ("no RDMA devices", "no NVIDIA driver"),
shown as such, never as a collection error. The collector reads the facts now and then
(``fleet.collectors.node_poller``) and keeps them in ``HostRecord.info`` under the keys below, as
text like every other fact; a key that is absent means "not read yet", never "none".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

RDMA_DEVICES = "rdma_devices"
"""Space-separated RDMA device names, or ``NONE``."""
NVIDIA_DRIVER = "nvidia_driver"
"""The loaded ``nvidia`` module's version, or ``NONE``."""
CPUS = "cpus"
"""Online CPUs, a decimal number."""
MEMORY_BYTES = "memory_bytes"
"""Memory the kernel manages (``MemTotal``), bytes."""
NETDEVS = "netdevs"
"""Network interfaces but the loopback, ``name state[ speed]`` joined by ``, `` (``eth0 up 100 Gb/s``)."""
NONE = "none"

NO_RDMA = "no RDMA devices"
NO_NVIDIA_DRIVER = "no NVIDIA driver"


@dataclass(frozen=True, slots=True)
class NodeHardware:
    """The hardware facts of a node's host record; None where not read yet."""

    rdma_devices: tuple[str, ...] | None
    nvidia_driver: str | None
    """"" when the node has no NVIDIA driver loaded."""
    cpus: int | None
    memory_bytes: int | None
    netdevs: str | None

    @property
    def states(self) -> tuple[str, ...]:
        """``NO_RDMA`` and ``NO_NVIDIA_DRIVER`` where they hold: () for a full GPU node, or facts not read yet."""
        states = []
        if self.rdma_devices == ():
            states.append(NO_RDMA)
        if self.nvidia_driver == "":
            states.append(NO_NVIDIA_DRIVER)
        return tuple(states)

    def summary(self) -> str:
        """One line for a person: the states, then CPUs, memory and interfaces ("" when nothing is known)."""
        parts = list(self.states)
        if self.rdma_devices:
            parts.append(f"RDMA {' '.join(self.rdma_devices)}")
        if self.nvidia_driver:
            parts.append(f"NVIDIA driver {self.nvidia_driver}")
        if self.cpus is not None:
            parts.append(f"{self.cpus} CPU" + ("s" if self.cpus != 1 else ""))
        if self.memory_bytes is not None:
            parts.append(f"{self.memory_bytes / 2**30:.1f} GiB memory")
        if self.netdevs:
            parts.append(self.netdevs)
        return " · ".join(parts)


def hardware_info(rdma_devices: tuple[str, ...], nvidia_driver: str | None, cpus: int | None,
                  memory_bytes: int | None, netdevs: str) -> dict[str, str]:
    """The ``HostRecord.info`` entries for these facts (a fact not read is left out)."""
    driver = NONE if nvidia_driver is None else nvidia_driver or "loaded"  # a module without a version file
    info = {RDMA_DEVICES: " ".join(rdma_devices) or NONE, NVIDIA_DRIVER: driver, NETDEVS: netdevs}
    if cpus is not None:
        info[CPUS] = str(cpus)
    if memory_bytes is not None:
        info[MEMORY_BYTES] = str(memory_bytes)
    return info


def node_hardware(info: Mapping[str, str]) -> NodeHardware:
    """The facts kept in a host record's ``info`` (any value that does not read is taken as unknown)."""
    rdma = info.get(RDMA_DEVICES)
    driver = info.get(NVIDIA_DRIVER)
    return NodeHardware(
        rdma_devices=None if rdma is None else () if rdma == NONE else tuple(rdma.split()),
        nvidia_driver=None if driver is None else "" if driver == NONE else driver,
        cpus=_number(info.get(CPUS)),
        memory_bytes=_number(info.get(MEMORY_BYTES)),
        netdevs=info.get(NETDEVS),
    )


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
