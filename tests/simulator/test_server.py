"""The simulated fleet over real SSH: asyncssh and OpenSSH clients, host keys, and the SSH-level faults."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest
from asyncssh.constants import MSG_IGNORE
from helpers.packets import received_packet_types
from sim_helpers import small_scenario

from fleet.collectors.inventory import load_inventory
from fleet.simulator.main import READY_LINE, serve

FAULTS = """
[[faults]]
kind = "node_unreachable"
target = "gpu006"

[[faults]]
kind = "node_hang"
target = "gpu007"

[[faults]]
kind = "slow_node"
target = "gpu008"
delay = 0.5
"""


@pytest.fixture
async def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """A running 8-node simulator; yields its state directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    state = tmp_path / "state"
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.create_task(serve(small_scenario(FAULTS), state, ready=lambda _line: ready.set(), stop=stop))
    await asyncio.wait_for(ready.wait(), 10)
    yield state
    stop.set()
    assert await asyncio.wait_for(task, 10) == 0


def endpoint(state: Path, name: str) -> tuple[str, int]:
    host = load_inventory(state / "inventory.toml").host(name)
    assert host.port is not None
    return host.address, host.port


async def connect(state: Path, name: str, known_hosts: str | None = None) -> asyncssh.SSHClientConnection:
    address, port = endpoint(state, name)
    return await asyncio.wait_for(
        asyncssh.connect(
            address,
            port,
            username="fleet",
            client_keys=[str(state / "id_ed25519")],
            known_hosts=known_hosts or str(state / "known_hosts"),
            agent_path=None,
            config=[],
        ),
        10,
    )


async def test_state_dir_and_inventory(fleet: Path) -> None:
    inventory = load_inventory(fleet / "inventory.toml")
    assert [h.name for h in inventory.nodes][:2] == ["gpu001", "gpu002"]
    assert len(inventory.nodes) == 8 and len(inventory.switches) == 18
    assert inventory.host("leaf09").os == "sonic" and inventory.host("spine01").role == "spine"
    assert inventory.host("head01").role == "head"
    assert len(inventory.cabling) == 64 and inventory.cabling[0].port == "swp1"
    assert (inventory.cabling[9].node, inventory.cabling[9].switch) == ("gpu002", "leaf02")
    assert (fleet / "id_ed25519").stat().st_mode & 0o777 == 0o600
    addresses = {h.address for h in inventory.hosts}
    assert len(addresses) == len(inventory.hosts)  # one loopback address per machine
    keys = {line.split()[2] for line in (fleet / "known_hosts").read_text().splitlines()}
    assert len(keys) == len(inventory.hosts)  # and one host key each


async def test_asyncssh_client_runs_commands(fleet: Path) -> None:
    async with await connect(fleet, "gpu001") as conn:
        result = await conn.run("ibstat mlx5_0 | head -n 1", check=False)
        assert (result.exit_status, result.stdout) == (0, "CA 'mlx5_0'\n")
        result = await conn.run("hostname; ibstat mlx5_0", check=False)
        assert result.exit_status == 0
        assert str(result.stdout).startswith("gpu001\nCA 'mlx5_0'\n")
        result = await conn.run("nosuch", check=False)
        assert (result.exit_status, result.stderr) == (127, "sh: 1: nosuch: not found\n")
    async with await connect(fleet, "head01") as conn:
        result = await conn.run("squeue -h -o '%i %u %N'", check=False)
        assert result.exit_status == 0 and "gpu[001-006]" in str(result.stdout)


async def test_sshd_sends_no_ignore_packets(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As OpenSSH's sshd: output comes as data packets alone, not each behind an empty SSH_MSG_IGNORE.

    The client counts what it receives; asyncssh's own server would send one IGNORE per packet.
    """
    received = received_packet_types(monkeypatch, asyncssh.SSHClientConnection)
    async with await connect(fleet, "gpu001") as conn:
        for _ in range(5):
            assert (await conn.run("hostname", check=False)).stdout == "gpu001\n"
    assert received and MSG_IGNORE not in received


async def test_exec_answers_alike_at_once_and_through_a_process(fleet: Path) -> None:
    """A stateless line is answered in the session's start callback; with ``timeout`` it runs in a task of its own
    (``test_direct_exec.py`` compares both with the process path)."""
    files = "/sys/class/infiniband/mlx5_0/node_guid /nope"
    async with await connect(fleet, "gpu001") as conn:
        quick = await conn.run(f"cat {files}; hostname; exit 3", check=False)
        process = await conn.run(f"timeout 5 cat {files}; hostname; exit 3", check=False)
    assert (quick.exit_status, quick.stdout, quick.stderr) == (process.exit_status, process.stdout, process.stderr)
    assert quick.exit_status == 3 and str(quick.stdout).endswith("\ngpu001\n")
    assert quick.stderr == "cat: /nope: No such file or directory\n"


async def test_interactive_shell(fleet: Path) -> None:
    async with await connect(fleet, "leaf01") as conn:
        process = await conn.create_process()
        process.stdin.write("hostname\nnv show router adaptive-routing\nexit\n")
        output = await asyncio.wait_for(process.stdout.read(), 10)
        await process.wait()
        assert output.startswith("leaf01\n") and "operational" in output


async def test_read_in_an_interactive_shell_takes_the_next_line_typed(fleet: Path) -> None:
    async with await connect(fleet, "gpu001") as conn:
        process = await conn.create_process()
        process.stdin.write("read -r x && echo read\nhello world\necho done\nexit\n")
        output = await asyncio.wait_for(process.stdout.read(), 10)
        errors = await asyncio.wait_for(process.stderr.read(), 10)
        await process.wait()
    assert (output, errors) == ("read\ndone\n", "")  # "hello world" went to read, not to the shell


async def test_wrong_known_hosts_is_refused(fleet: Path, tmp_path: Path) -> None:
    lines = (fleet / "known_hosts").read_text().splitlines()
    other_key = lines[1].split()[1:]  # gpu002's key
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"{lines[0].split()[0]} {' '.join(other_key)}\n")  # gpu001's address, gpu002's key
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await connect(fleet, "gpu001", str(wrong))


async def test_wrong_client_key_is_refused(fleet: Path, tmp_path: Path) -> None:
    address, port = endpoint(fleet, "gpu001")
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(
            address, port, username="fleet", client_keys=[asyncssh.generate_private_key("ssh-ed25519")],
            known_hosts=str(fleet / "known_hosts"), agent_path=None, config=[],
        )  # fmt: skip


async def test_node_unreachable_refuses(fleet: Path) -> None:
    with pytest.raises(ConnectionRefusedError):
        await connect(fleet, "gpu006")


async def test_node_hang_accepts_but_never_answers(fleet: Path) -> None:
    async with await connect(fleet, "gpu007") as conn:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(conn.run("hostname"), 0.5)


async def test_slow_node_answers_late(fleet: Path) -> None:
    async with await connect(fleet, "gpu008") as conn:
        answer = asyncio.ensure_future(conn.run("hostname"))
        # A timer of half the node's delay (0.5 s), set before the command is even sent, fires before
        # the answer comes: the event loop runs the simulator's delay and this timer in the order
        # they are due, however busy the machine.
        done, _ = await asyncio.wait({answer}, timeout=0.25)
        assert not done
        result = await asyncio.wait_for(answer, 5)
        assert result.stdout == "gpu008\n"


async def test_perftest_over_ssh_server_exits_after_client(fleet: Path) -> None:
    async with await connect(fleet, "gpu002") as server_conn, await connect(fleet, "gpu004") as client_conn:
        server = await server_conn.create_process("ib_write_lat -d mlx5_1 -p 18700")
        banner = await asyncio.wait_for(server.stdout.readuntil("connect... *\n"), 5)
        assert "Waiting for client" in banner
        client = await asyncio.wait_for(client_conn.run("ib_write_lat -d mlx5_1 -p 18700 gpu002"), 10)
        assert client.exit_status == 0 and "t_typical" in str(client.stdout)
        completed = await asyncio.wait_for(server.wait(), 5)
        assert completed.exit_status == 0 and "t_typical" in str(completed.stdout)


async def test_agent_stream_over_ssh_ends_when_the_channel_closes(fleet: Path) -> None:
    async with await connect(fleet, "gpu003") as conn:
        process = await conn.create_process("python3 -u -c 'agent' --interval 0.05")
        first = await asyncio.wait_for(process.stdout.readline(), 5)
        assert json.loads(first)["schema"] == "fleet-agent/2"
        assert '"schema":"fleet-agent/2"' in first  # compact separators, as the real agent prints
        process.stdin.write_eof()
        await asyncio.wait_for(process.wait(), 5)


async def test_agent_stream_sends_only_the_ethtool_counters_asked_for(fleet: Path) -> None:
    async with await connect(fleet, "gpu003") as conn:
        process = await conn.create_process(
            "python3 -u -c 'agent' --interval 0.05 --ethtool-keep rx_prio3_pause,tx_prio3_pause")
        line = json.loads(await asyncio.wait_for(process.stdout.readline(), 5))
        process.stdin.write_eof()
        await asyncio.wait_for(process.wait(), 5)
    for netdev in line["netdevs"].values():
        assert set(netdev["ethtool"]) == {"rx_prio3_pause", "tx_prio3_pause"}


@pytest.mark.skipif(shutil.which("ssh") is None, reason="the OpenSSH client (ssh) is not installed here")
async def test_openssh_client(fleet: Path, tmp_path: Path) -> None:
    address, port = endpoint(fleet, "gpu001")
    base = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
            "-i", str(fleet / "id_ed25519"), "-p", str(port)]  # fmt: skip
    good = await asyncio.create_subprocess_exec(
        *base, "-o", f"UserKnownHostsFile={fleet / 'known_hosts'}", address, "ibstat",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(good.communicate(), 20)
    assert good.returncode == 0, err
    from fleet.collectors.parsers.ibstat import parse_ibstat

    assert len(parse_ibstat(out.decode()).devices) == 8
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    refused = await asyncio.create_subprocess_exec(
        *base, "-o", f"UserKnownHostsFile={empty}", "-o", "StrictHostKeyChecking=yes", address, "ibstat",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(refused.communicate(), 20)
    assert refused.returncode == 255 and out == b""
    assert b"Host key verification failed" in err


def test_sigterm_exits_cleanly(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-c", "from fleet.console.cli import main; main()", "sim", "--scenario", "acceptance",
         "--nodes", "4", "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        expected = READY_LINE.format(nodes=4, switches=16, path=tmp_path / "state" / "inventory.toml")
        assert line.rstrip("\n") == expected
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_bad_scenario_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[fabric]\nnodes = 4\nspines = \"two\"\n")
    result = subprocess.run(
        [sys.executable, "-c", "from fleet.console.cli import main; main()", "sim", "--scenario", str(bad)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == f"fleet sim: {bad}:3: [fabric] key 'spines': must be an integer, got 'two'\n"


async def test_unreachable_for_a_while_then_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # Unreachable for the first 3 s of the run: time enough to be refused once the simulator is ready,
    # however busy the machine, and short enough to wait for its return.
    faults = '[[faults]]\nkind = "node_unreachable"\ntarget = "gpu002"\nat = 0\nuntil = 3\n'
    state, stop, ready = tmp_path / "state", asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(small_scenario(faults), state, ready=lambda _line: ready.set(), stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 10)
        with pytest.raises(ConnectionRefusedError):
            await connect(state, "gpu002")
        async def reconnected() -> asyncssh.SSHClientConnection:
            while True:  # the listener comes back on the same address and port after `until`
                try:
                    return await connect(state, "gpu002")
                except ConnectionRefusedError:
                    await asyncio.sleep(0.1)  # the fault's end is the simulator's, with no event to wait on

        conn = await asyncio.wait_for(reconnected(), 10)
        async with conn:
            assert (await conn.run("hostname")).stdout == "gpu002\n"
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 10) == 0


async def test_a_node_that_becomes_unreachable_drops_its_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    faults = '[[faults]]\nkind = "node_unreachable"\ntarget = "gpu003"\nat = 1.0\n'
    state, stop, ready = tmp_path / "state", asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(small_scenario(faults), state, ready=lambda _line: ready.set(), stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 10)
        conn = await connect(state, "gpu003")
        process = await conn.create_process("python3 -u -c 'agent' --interval 0.1")
        assert json.loads(await asyncio.wait_for(process.stdout.readline(), 5))["seq"] == 1
        # at 1 s the stream dies with the connection, as when a node drops off the network
        await asyncio.wait_for(conn.wait_closed(), 5)
        with pytest.raises(ConnectionRefusedError):
            await connect(state, "gpu003")
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 10) == 0


async def test_a_node_that_hangs_mid_stream_stops_printing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    faults = '[[faults]]\nkind = "node_hang"\ntarget = "gpu003"\nat = 0.5\n'
    state, stop, ready = tmp_path / "state", asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(serve(small_scenario(faults), state, ready=lambda _line: ready.set(), stop=stop))
    try:
        await asyncio.wait_for(ready.wait(), 10)
        async with await connect(state, "gpu003") as conn:
            process = await conn.create_process("python3 -u -c 'agent' --interval 0.1")
            lines = 0
            with pytest.raises(TimeoutError):
                while True:
                    await asyncio.wait_for(process.stdout.readline(), 1.0)
                    lines += 1
            assert 1 <= lines <= 8  # it printed until the hang, then nothing, and kept the channel open
            assert not process.channel.is_closing()
    finally:
        stop.set()
        assert await asyncio.wait_for(task, 10) == 0
