"""asyncssh's logging with :func:`fleet.collectors.ssh_logging.quiet_when_off`: free when off, unchanged when on."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import MappingProxyType

import asyncssh
import pytest
from asyncssh.logging import SSHLogger
from asyncssh.packet import SSHPacketLogger

from fleet.collectors.ssh_logging import quiet_when_off


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def captured() -> Iterator[_Capture]:
    handler = _Capture()
    logger = logging.getLogger("asyncssh")
    level = logger.level
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        asyncssh.set_debug_level(1)


class _Packets(SSHPacketLogger):
    """A packet handler as asyncssh's connections and channels are one."""

    _handler_names = MappingProxyType({94: "MSG_CHANNEL_DATA"})

    @property
    def logger(self) -> SSHLogger:
        return asyncssh.logging.logger


def test_nothing_is_formatted_while_logging_is_off(monkeypatch: pytest.MonkeyPatch, captured: _Capture) -> None:
    quiet_when_off()
    formatted: list[int] = []

    def plural(n: int, what: str) -> str:
        formatted.append(n)
        return f"{n} {what}s"

    monkeypatch.setattr("asyncssh.packet.plural", plural)
    logging.getLogger("asyncssh").setLevel(logging.DEBUG)
    _Packets().log_sent_packet(94, 1, b"payload")  # the packet debug level (3) is off
    asyncssh.set_debug_level(3)
    logging.getLogger("asyncssh").setLevel(logging.INFO)
    _Packets().log_sent_packet(94, 2, b"payload")  # on, but DEBUG is not enabled
    assert formatted == []
    assert captured.messages == []


def test_packets_and_messages_are_logged_as_before_when_asked(captured: _Capture) -> None:
    quiet_when_off()
    quiet_when_off()  # a second call changes nothing
    logging.getLogger("asyncssh").setLevel(logging.DEBUG)
    asyncssh.set_debug_level(3)
    logger = asyncssh.logging.logger
    _Packets().log_sent_packet(94, 7, b"payload")
    logger.info("Opening %s", [b"session"])
    assert any("Sent MSG_CHANNEL_DATA (94), 7 bytes" in m for m in captured.messages)
    assert any(m.endswith("Opening session") for m in captured.messages)


def test_info_messages_are_dropped_below_their_level(captured: _Capture) -> None:
    quiet_when_off()
    logging.getLogger("asyncssh").setLevel(logging.WARNING)
    asyncssh.logging.logger.info("Opening %s", [b"session"])
    asyncssh.logging.logger.warning("Host key %s", [b"changed"])
    assert captured.messages == ["Host key changed"]
