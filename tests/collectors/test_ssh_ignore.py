"""fleet's SSH client sends no empty SSH_MSG_IGNORE before its packets, except over a CBC cipher."""

from __future__ import annotations

import asyncssh
import pytest
from asyncssh.constants import MSG_CHANNEL_OPEN, MSG_IGNORE
from helpers.packets import received_packet_types

from fleet.collectors.ssh_ignore import only_for_cbc


class _Server(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False  # no authentication: a loopback test server


async def _received_by_server(monkeypatch: pytest.MonkeyPatch, encryption: list[str]) -> list[int]:
    """Packet types a server receives from a client that runs two commands over ``encryption``."""
    received = received_packet_types(monkeypatch, asyncssh.SSHServerConnection)

    async def answer(process: asyncssh.SSHServerProcess[str]) -> None:
        process.stdout.write("ok\n")
        process.exit(0)

    server = await asyncssh.listen("127.0.0.1", 0, server_host_keys=[asyncssh.generate_private_key("ssh-ed25519")],
                                   server_factory=_Server, process_factory=answer, encryption_algs=encryption)
    port = server.sockets[0].getsockname()[1]
    try:
        async with asyncssh.connect("127.0.0.1", port, known_hosts=None, username="fleet", client_keys=None,
                                    agent_path=None, encryption_algs=encryption) as conn:
            for _ in range(2):
                assert (await conn.run("hostname", check=False)).stdout == "ok\n"
    finally:
        server.close()
        await server.wait_closed()
    return received


async def test_no_ignore_packets_over_an_aead_cipher(monkeypatch: pytest.MonkeyPatch) -> None:
    only_for_cbc()
    received = await _received_by_server(monkeypatch, ["aes128-gcm@openssh.com"])
    assert received.count(MSG_CHANNEL_OPEN) == 2
    assert MSG_IGNORE not in received


async def test_ignore_packets_still_guard_a_cbc_cipher(monkeypatch: pytest.MonkeyPatch) -> None:
    only_for_cbc()
    only_for_cbc()  # a second call changes nothing
    received = await _received_by_server(monkeypatch, ["aes128-cbc"])
    assert received.count(MSG_CHANNEL_OPEN) == 2
    assert received.count(MSG_IGNORE) >= received.count(MSG_CHANNEL_OPEN)
