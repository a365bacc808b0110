"""Counting the SSH packets a connection receives, for tests of what goes over the wire."""

from __future__ import annotations

from typing import Any

import asyncssh
import pytest


def received_packet_types(monkeypatch: pytest.MonkeyPatch, side: type[asyncssh.SSHConnection]) -> list[int]:
    """The type of every packet that connections of class ``side`` receive from now on, in order
    (asyncssh logs each one received; the count hooks in there and logs it as before)."""
    received: list[int] = []
    log_received = side.log_received_packet

    def count(self: asyncssh.SSHConnection, pkttype: int, *args: Any) -> None:
        received.append(pkttype)
        log_received(self, pkttype, *args)

    monkeypatch.setattr(side, "log_received_packet", count)
    return received
