"""One interface for every switch OS: what to run each poll, and what it means.

A driver is a small stateful object per switch (it learns the port list on
its first poll). ``poll_command`` is run once per interval through the SSH
pool; ``read_poll`` turns its output into samples (``sw_*`` metrics, one
series per port) and the LLDP neighbours seen on each port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fleet.collectors.commands import Command, command
from fleet.fabric.records import PortRecord
from fleet.fabric.samples import HostSample

MAX_CLOCK_SKEW_S = 30.0
"""A switch clock further than this from the collector's is wrong (NTP lost, never set): its
polls are stamped on arrival instead, as an agent line from a node with such a clock is."""


def clock_part() -> tuple[str, Command]:
    """The first section of every poll: the switch's own time, taken just before its counters.

    Counters turn into rates over the time between two polls. Stamped when the answer
    arrives, that time also holds how long each answer waited in the collector (and a
    busy switch CLI's own delay): ~50 ms of difference on a 1 s interval is a 5% swing
    in a rate, enough to drop a saturated uplink under a 90% threshold for one sample.
    """
    return ("clock", command("date", "+%s.%N"))


def poll_time(sections: dict[str, str], arrived: float) -> tuple[float, str]:
    """The poll's time: the switch's clock section, else ``arrived`` with the reason why not (none
    for an output without the section: one captured or sent by something else)."""
    text = sections.get("clock")
    if text is None:
        return arrived, ""
    try:
        clock = float(text.strip())
    except ValueError:
        return arrived, f"clock {text.strip()[:40]!r} is not a time: stamped on arrival"
    if not abs(clock - arrived) <= MAX_CLOCK_SKEW_S:  # also NaN
        return arrived, f"clock {clock - arrived:+.0f} s off the collector's: stamped on arrival"
    return clock, ""


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
