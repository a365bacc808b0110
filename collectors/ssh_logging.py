"""asyncssh's logging, made to cost nothing while it is off.

asyncssh formats every packet's name and size for its packet log
(``SSHPacketLogger._log_packet``) before its logger checks whether the packet
debug level is on, and turns every log call's arguments into text
(``SSHLogger.log``) before the standard library checks whether the level is
enabled. Off by default, both are pure waste: in a 128-node link test (8,128
probes, ~210,000 packets each way) they take ~6% of the console's CPU and as
much of the simulator's, on the path of every probe's start.
:func:`quiet_when_off` checks first and then calls asyncssh's own code, so
``asyncssh.set_debug_level(3)`` with a DEBUG handler logs exactly as before.
"""

from __future__ import annotations

import logging
from typing import Any

from asyncssh.logging import SSHLogger
from asyncssh.packet import SSHPacketLogger

_PACKET_DEBUG_LEVEL = 3
"""asyncssh logs packets from ``set_debug_level(3)`` on (``SSHLogger.packet``)."""


def quiet_when_off() -> None:
    """Make asyncssh skip formatting log text nobody will see (idempotent; process-wide)."""
    if getattr(SSHPacketLogger._log_packet, "checks_first", False):
        return
    log_packet = SSHPacketLogger._log_packet
    log = SSHLogger.log

    def _log_packet(self: SSHPacketLogger, msg: str, pkttype: int, pktid: int | None, packet: Any,
                    note: str) -> None:
        logger = self.logger
        if logger._debug_level >= _PACKET_DEBUG_LEVEL and logger.isEnabledFor(logging.DEBUG):
            log_packet(self, msg, pkttype, pktid, packet, note)

    def _log(self: SSHLogger, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        if self.isEnabledFor(level):
            log(self, level, msg, *args, **kwargs)

    _log_packet.checks_first = True  # type: ignore[attr-defined]
    SSHPacketLogger._log_packet = _log_packet  # type: ignore[method-assign]
    SSHLogger.log = _log  # type: ignore[method-assign]
