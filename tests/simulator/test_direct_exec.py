"""Exec requests the simulator runs from the session itself (perftest, all_reduce_perf), without a process.

They must behave as on the process path: the same bytes and exit status,
a client that closes the channel stops the command, stdin the client sends
is taken and dropped, and a bug in the command is exit 1 with an error line.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncssh
import pytest
from sim_helpers import small_model

from fleet.simulator import perftest
from fleet.simulator.server import FleetServer
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell

pytestmark = pytest.mark.timeout(30)

Connect = Any
"""An async callable: host name -> an asyncssh client connection to that simulated machine."""


@pytest.fixture
async def fleet() -> AsyncIterator[tuple[FleetServer, Connect]]:
    server = FleetServer(small_model())
    await server.start()
    connections: list[asyncssh.SSHClientConnection] = []

    async def connect(host: str) -> asyncssh.SSHClientConnection:
        listener = server.listeners[host]
        connection = await asyncssh.connect(
            listener.address, listener.port, username="fleet", client_keys=[server.client_key],
            known_hosts=None, agent_path=None, config=[],
        )  # fmt: skip
        connections.append(connection)
        return connection

    yield server, connect
    for connection in connections:
        connection.close()
    await server.close()


def test_only_lines_that_just_write_run_from_the_session() -> None:
    shell = Shell(Machine("gpu001", "node", small_model(), Rendezvous()))
    direct = ("ib_write_lat -d mlx5_0 -p 18515", "timeout -k 2 31 ib_write_lat -p 1 gpu002",
              "sudo -n timeout 5 all_reduce_perf -b 8", "timeout 5 cat /nope; hostname", "ls |")
    for line in direct:
        assert shell.output_only(line), line
    for line in ("python3 -u -c agent --interval 1", "timeout 9 python3 -c agent --interval 1",
                 "hostname; sudo python3 -c x --interval 1"):
        assert not shell.output_only(line), line  # reads stdin, paces its output
    leaf = Shell(Machine("leaf01", "leaf", small_model(), Rendezvous()))
    assert not leaf.output_only("nv config apply -y")


async def test_the_three_paths_answer_alike(fleet: tuple[FleetServer, Connect]) -> None:
    """At once (stateless), from the session (``timeout``), and as a process (``python3``): same bytes and status."""
    _, connect = fleet
    connection = await connect("gpu001")
    tail = "cat /sys/class/infiniband/mlx5_0/node_guid /nope; hostname; exit 3"
    lines = (tail, f"timeout 5 true; {tail}", f"python3 --version >/dev/null; {tail}")
    results = [await asyncio.wait_for(connection.run(line, check=False), 10) for line in lines]
    answers = {(r.exit_status, r.stdout, r.stderr) for r in results}
    assert len(answers) == 1
    status, stdout, stderr = answers.pop()
    assert status == 3 and str(stdout).endswith("\ngpu001\n")
    assert stderr == "cat: /nope: No such file or directory\n"


async def test_closing_the_channel_stops_a_waiting_perftest_server(fleet: tuple[FleetServer, Connect]) -> None:
    server, connect = fleet
    connection = await connect("gpu002")
    waiting = await connection.create_process("timeout 20 ib_write_lat -d mlx5_0 -p 18801")
    await asyncio.wait_for(waiting.stdout.readuntil("connect... *\n"), 5)
    assert ("gpu002", 18801) in server.rendezvous.servers
    waiting.close()
    for _ in range(200):
        if ("gpu002", 18801) not in server.rendezvous.servers:
            break
        await asyncio.sleep(0.01)
    assert ("gpu002", 18801) not in server.rendezvous.servers  # stopped: the port is free again
    again = await connection.create_process("ib_write_lat -d mlx5_0 -p 18801")
    assert "Waiting for client" in await asyncio.wait_for(again.stdout.readuntil("connect... *\n"), 5)
    client = await (await connect("gpu005")).run("ib_write_lat -d mlx5_0 -p 18801 gpu002", check=False)
    assert client.exit_status == 0 and "t_typical" in str(client.stdout)
    assert (await asyncio.wait_for(again.wait(), 5)).exit_status == 0


async def test_stdin_is_taken_and_dropped(fleet: tuple[FleetServer, Connect]) -> None:
    """More stdin than the channel's window: a command that never reads it must not stall the client."""
    _, connect = fleet
    waiting = await (await connect("gpu003")).create_process("ib_write_lat -d mlx5_0 -p 18802")
    await asyncio.wait_for(waiting.stdout.readuntil("connect... *\n"), 5)
    waiting.stdin.write("x" * (4 << 20))
    await asyncio.wait_for(waiting.stdin.drain(), 10)
    waiting.stdin.write_eof()
    client = await (await connect("gpu004")).run("ib_write_lat -d mlx5_0 -p 18802 gpu003", check=False)
    assert client.exit_status == 0
    server = await asyncio.wait_for(waiting.wait(), 5)
    assert server.exit_status == 0 and "t_typical" in str(server.stdout)


async def test_a_bug_in_the_command_is_exit_1(fleet: tuple[FleetServer, Connect], monkeypatch: pytest.MonkeyPatch) -> None:
    _, connect = fleet

    async def broken(*_args: object) -> int:
        raise RuntimeError("a bug in the simulator")

    monkeypatch.setattr(perftest, "_serve", broken)
    result = await asyncio.wait_for((await connect("gpu001")).run("ib_write_lat -d mlx5_0", check=False), 5)
    assert (result.exit_status, result.stdout, result.stderr) == (1, "", "simulator: internal error\n")


async def test_the_packets_of_one_turn_leave_in_one_write(fleet: tuple[FleetServer, Connect]) -> None:
    """An exec's answer (output, exit status, EOF, close) is one socket write, not one per packet."""
    server, connect = fleet
    connection = await connect("gpu001")
    assert (await connection.run("hostname")).stdout == "gpu001\n"
    (server_side,) = server.listeners["gpu001"].connections
    transport = server_side._transport
    assert transport is not None
    writes: list[bytes] = []
    packets: list[int] = []
    write, send_packet = transport.write, server_side.send_packet

    def counting_write(data: Any) -> None:
        writes.append(bytes(data))
        write(data)

    def counting_send_packet(pkttype: int, *args: bytes, **kwargs: Any) -> None:
        packets.append(pkttype)
        send_packet(pkttype, *args, **kwargs)

    transport.write = counting_write  # type: ignore[method-assign]
    server_side.send_packet = counting_send_packet  # type: ignore[method-assign]
    result = await connection.run("hostname; cat /nope; exit 4", check=False)
    assert (result.exit_status, result.stdout, result.stderr) == (4, "gpu001\n", "cat: /nope: No such file or directory\n")
    assert len(packets) >= 6  # open confirmation, exec reply, stdout, stderr, exit status, EOF, close
    assert len(writes) <= 3, (packets, len(writes))  # the open, the exec request, its whole answer
