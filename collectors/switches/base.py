"""One interface for every switch OS: what to run each poll, and what it means.

A driver is a small stateful object per switch (it learns the port list on
its first poll). ``poll_command`` is run once per interval through the SSH
pool; ``read_poll`` turns its output into samples (``sw_*`` metrics, one
series per port) and the LLDP neighbours seen on each port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from collectors.commands import Command
from fabric.records import PortRecord
from fabric.samples import HostSample


@dataclass(frozen=True, slots=True)
class SwitchPoll:
    sample: HostSample
    ports: tuple[PortRecord, ...]
    """Every port with its LLDP neighbour (peer empty when none)."""
    speeds_gbps: dict[str, float]
    problems: tuple[str, ...] = ()


class SwitchDriver(Protocol):
    name: str
    os: str

    def poll_command(self) -> Command: ...

    def read_poll(self, text: str, ts: float) -> SwitchPoll: ...


def speed_gbps(text: str) -> float | None:
    """``400G`` / ``100G`` / ``1G`` / ``800000`` (Mb/s, SONiC) -> Gb/s."""
    text = text.strip().upper()
    if not text:
        return None
    try:
        if text.endswith("G"):
            return float(text[:-1])
        if text.endswith("M"):
            return float(text[:-1]) / 1000
        return float(text) / 1000
    except ValueError:
        return None
