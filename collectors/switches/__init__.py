"""Switch drivers, one per switch OS, behind ``fleet.collectors.switches.base.SwitchDriver``."""

from __future__ import annotations

from fleet.collectors.switches.base import SwitchDriver
from fleet.collectors.switches.nvue import NvueDriver
from fleet.collectors.switches.sonic import SonicDriver

DRIVERS: dict[str, type[NvueDriver] | type[SonicDriver]] = {"cumulus": NvueDriver, "sonic": SonicDriver}


def driver_for(name: str, os: str) -> SwitchDriver:
    """The driver of switch ``name`` running ``os`` (``cumulus`` | ``sonic``)."""
    return DRIVERS[os](name)
