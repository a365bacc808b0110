"""The SSH pool against real asyncssh servers on loopback."""

from __future__ import annotations

import asyncio
import random
import resource
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from fleet.collectors.commands import agent_command, command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.fabric.events import Event
from fleet.fabric.states import HostState

FakeHost = Any  # tests/collectors/conftest.py: FakeHost (conftest modules are not importable)
MakeHost = Callable[..., Coroutine[Any, Any, FakeHost]]
HOSTNAME = command("hostname")
FAST = PoolSettings(connect_timeout_s=2.0, slow_threshold_s=5.0, ssh_config=())


def inventory_host(host: FakeHost, key_path: Path, **kwargs: Any) -> InventoryHost:
    return InventoryHost(host.name, "node", host.address, host.port, "fleet",
                         identity_file=key_path, **kwargs)


def write_known_hosts(path: Path, *hosts: FakeHost) -> Path:
    path.write_text("".join(host.known_hosts_line() for host in hosts))
    return path


async def test_ok_and_connection_reused(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu001")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    try:
        first = await pool.run("gpu001", HOSTNAME, timeout_s=5)
        second = await pool.run("gpu001", HOSTNAME, timeout_s=5)
    finally:
        await pool.close()
    assert (first.state, first.stdout, first.exit_status) == (HostState.OK, "gpu001\n", 0)
    assert second.state is HostState.OK
    assert host.stats.tcp_connections == 1
    assert host.stats.commands == ["hostname", "hostname"]
    assert pool.state("gpu001").state is HostState.OK


async def test_refused_is_unreachable(client_key: tuple[Any, Path], tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago and is now closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    host = InventoryHost("gpu404", "node", "127.0.0.1", port, "fleet", identity_file=client_key[1])
    pool = SshPool([host], known_hosts=tmp_path / "known_hosts", settings=FAST)
    result = await pool.run("gpu404", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.UNREACHABLE
    assert result.reason == "connection refused"
    assert result.exit_status is None


async def test_auth_rejected(make_host: MakeHost, tmp_path: Path) -> None:
    host = await make_host("gpu002")
    wrong = asyncssh.generate_private_key("ssh-ed25519")
    wrong_path = tmp_path / "wrong_key"
    wrong.write_private_key(str(wrong_path))
    wrong_path.chmod(0o600)  # private, as OpenSSH requires: the server, not the mode, must reject it
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, wrong_path)], known_hosts=known, settings=FAST)
    result = await pool.run("gpu002", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.AUTH_FAILED
    assert "authentication rejected" in result.reason
    assert host.stats.commands == []


async def test_changed_host_key_is_never_connected(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu003")
    old_key = asyncssh.generate_private_key("ssh-ed25519")
    known = tmp_path / "known_hosts"
    known.write_text(host.known_hosts_line(old_key))
    events: list[Event] = []
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, tofu=True,
                   on_event=events.append, settings=FAST)
    result = await pool.run("gpu003", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.HOST_KEY_MISMATCH
    assert "CHANGED" in result.reason
    assert host.host_key.get_fingerprint() in result.reason
    assert host.stats.auth_attempts == 0, "credentials must never be offered to a changed host"
    assert host.stats.commands == []
    assert events == [], "tofu never overrides a changed key"
    assert known.read_text() == host.known_hosts_line(old_key)


async def test_unknown_host_without_tofu_is_refused(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu004")
    known = tmp_path / "known_hosts"
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    result = await pool.run("gpu004", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.HOST_KEY_MISMATCH
    assert result.reason.startswith("host unknown")
    assert "CHANGED" not in result.reason
    assert host.stats.auth_attempts == 0
    assert not known.exists()


async def test_tofu_records_key_and_reports_event(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu005")
    known = tmp_path / "ssh" / "known_hosts"
    events: list[Event] = []
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, tofu=True,
                   on_event=events.append, settings=FAST)
    result = await pool.run("gpu005", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.OK
    assert [event.kind for event in events] == ["tofu_host_key"]
    assert events[0].host == "gpu005"
    assert events[0].data["fingerprint"] == host.host_key.get_fingerprint()
    assert known.read_text() == host.known_hosts_line()
    assert known.stat().st_mode & 0o777 == 0o600

    strict = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    again = await strict.run("gpu005", HOSTNAME, timeout_s=5)
    await strict.close()
    assert again.state is HostState.OK, "the recorded line must verify without tofu"


async def test_hung_host_does_not_delay_others(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    hung = await make_host("gpu006", "hang")
    fast = [await make_host(f"gpu1{index:02d}") for index in range(5)]
    known = write_known_hosts(tmp_path / "known_hosts", hung, *fast)
    pool = SshPool([inventory_host(host, client_key[1]) for host in (hung, *fast)], known_hosts=known, settings=FAST)
    finished: list[str] = []

    async def answered(name: str) -> Any:
        result = await pool.run(name, HOSTNAME, timeout_s=3.0)
        finished.append(name)
        return result

    results = await asyncio.wait_for(asyncio.gather(*(answered(host.name) for host in (hung, *fast))), 30)
    await pool.close()
    assert results[0].state is HostState.HUNG
    assert results[0].reason == "no output within 3 s"
    assert all(result.state is HostState.OK for result in results[1:])
    assert finished[-1] == "gpu006"  # every other host answered while the hung one was still waited for


async def test_handshake_that_never_finishes_is_hung(client_key: tuple[Any, Path], tmp_path: Path) -> None:
    async def accept_and_ignore(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts TCP, never sends an SSH banner
        writer.close()

    server = await asyncio.start_server(accept_and_ignore, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    host = InventoryHost("gpu007", "node", "127.0.0.1", port, "fleet", identity_file=client_key[1])
    pool = SshPool([host], known_hosts=tmp_path / "kh",
                   settings=PoolSettings(connect_timeout_s=0.5, ssh_config=()))
    result = await pool.run("gpu007", HOSTNAME, timeout_s=5)
    await pool.close()
    server.close()
    assert result.state is HostState.HUNG
    assert "SSH set-up did not finish" in result.reason


async def test_slow_host(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu008", "slow", delay_s=0.3)
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known,
                   settings=PoolSettings(slow_threshold_s=0.2, ssh_config=()))
    result = await pool.run("gpu008", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.SLOW  # its answer came after the slow threshold (0.2 s)
    assert result.stdout == "gpu008\n"
    assert result.ok


async def test_command_failed_keeps_status_and_stderr(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu009", "fail")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    result = await pool.run("gpu009", command("cat", "/sys/class/infiniband"), timeout_s=5)
    await pool.close()
    assert result.state is HostState.COMMAND_FAILED
    assert result.exit_status == 1
    assert result.stderr == "cat: /sys/class/infiniband: No such file or directory\n"
    assert result.reason == "exit status 1: cat: /sys/class/infiniband: No such file or directory"


async def test_reconnect_after_restart_with_backoff(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu010")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    now = [1000.0]
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST,
                   clock=lambda: now[0], rng=random.Random(7))
    assert (await pool.run("gpu010", HOSTNAME, timeout_s=5)).state is HostState.OK

    await host.stop()
    down = await pool.run("gpu010", HOSTNAME, timeout_s=5)
    assert down.state is HostState.UNREACHABLE
    first_wait = pool.next_retry_s("gpu010")
    assert 0.5 <= first_wait <= 1.0

    await host.start()  # same address and port, back up
    connections = host.stats.tcp_connections
    backing_off = await pool.run("gpu010", HOSTNAME, timeout_s=5)
    assert backing_off.state is HostState.UNREACHABLE
    assert "next retry in" in backing_off.reason
    assert host.stats.tcp_connections == connections, "no connection attempt during the backoff"

    now[0] += first_wait + 0.01
    back = await pool.run("gpu010", HOSTNAME, timeout_s=5)
    await pool.close()
    assert back.state is HostState.OK
    assert pool.next_retry_s("gpu010") == 0


async def test_backoff_grows_exponentially_with_jitter(client_key: tuple[Any, Path], tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    now = [0.0]
    pool = SshPool([InventoryHost("gpu011", "node", "127.0.0.1", port, identity_file=client_key[1])],
                   known_hosts=tmp_path / "kh", clock=lambda: now[0], rng=random.Random(1),
                   settings=PoolSettings(backoff_initial_s=1.0, backoff_max_s=8.0, ssh_config=()))
    waits = []
    for _ in range(6):
        await pool.run("gpu011", HOSTNAME, timeout_s=5)
        waits.append(pool.next_retry_s("gpu011"))
        now[0] += waits[-1]
    await pool.close()
    for attempt, wait in enumerate(waits):
        ceiling = min(8.0, 2.0 ** attempt)
        assert ceiling / 2 <= wait <= ceiling
    assert len(set(waits)) == len(waits), "jitter: no two waits alike"


async def test_connection_setup_concurrency_is_bounded(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    hosts = [await make_host(f"gpu2{index:02d}", auth_delay_s=0.05) for index in range(6)]
    known = write_known_hosts(tmp_path / "known_hosts", *hosts)
    pool = SshPool([inventory_host(host, client_key[1]) for host in hosts], known_hosts=known,
                   settings=PoolSettings(max_connecting=2, ssh_config=()))
    in_flight = 0
    peak = 0
    original = pool._connect

    async def counting(slot: Any) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(slot)
        finally:
            in_flight -= 1

    pool._connect = counting  # type: ignore[method-assign]
    results = await asyncio.gather(*(pool.run(host.name, HOSTNAME, timeout_s=5) for host in hosts))
    await pool.close()
    assert all(result.state is HostState.OK for result in results)
    assert peak == 2
    assert sum(host.stats.max_auth_in_flight for host in hosts) == 6


async def test_stream_delivers_lines_until_stopped(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu012", "stream")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    lines: list[str] = []
    stop = asyncio.Event()

    def on_line(line: str) -> None:
        lines.append(line)
        if len(lines) == 3:
            stop.set()

    result = await pool.stream("gpu012", agent_command("agent", 1.0), on_line,
                               first_line_timeout_s=5, line_timeout_s=5, stop=stop)
    await pool.close()
    assert result.state is HostState.OK
    assert result.lines == 3
    assert lines == ['{"seq": 0}', '{"seq": 1}', '{"seq": 2}']
    assert host.stats.commands == ["python3 -u -c agent --interval 1"]


async def test_stream_that_goes_quiet_is_hung(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu013", "stream")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    lines: list[str] = []
    result = await pool.stream("gpu013", agent_command("agent", 1.0), lines.append,
                               first_line_timeout_s=5, line_timeout_s=0.3)
    await pool.close()
    assert result.state is HostState.HUNG
    assert result.reason == "no line after line 3 within 0.3 s"
    assert len(lines) == 3


async def test_ssh_config_is_honoured(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path, clean_home: Path) -> None:
    host = await make_host("gpu014")
    ssh_dir = clean_home / ".ssh"
    ssh_dir.mkdir()
    (ssh_dir / "config").write_text(
        f"Host gpu014-alias\n  HostName {host.address}\n  Port {host.port}\n  User fleet\n"
        f"  IdentityFile {client_key[1]}\n"
    )
    (ssh_dir / "known_hosts").write_text(host.known_hosts_line())
    pool = SshPool([InventoryHost("gpu014-alias", "node")], settings=PoolSettings())
    result = await pool.run("gpu014-alias", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.OK, result.reason
    assert result.stdout == "gpu014\n"


async def test_jump_host(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    bastion = await make_host("bastion")
    target = await make_host("gpu015")
    known = write_known_hosts(tmp_path / "known_hosts", bastion, target)
    jump = f"fleet@{bastion.address}:{bastion.port}"
    pool = SshPool([inventory_host(target, client_key[1], jump_host=jump)], known_hosts=known, settings=FAST)
    result = await pool.run("gpu015", HOSTNAME, timeout_s=5)
    await pool.close()
    assert result.state is HostState.OK, result.reason
    assert bastion.stats.forwards == [(target.address, target.port)]
    assert bastion.stats.commands == []


async def test_unknown_host_name_raises(tmp_path: Path) -> None:
    pool = SshPool([], known_hosts=tmp_path / "kh", settings=FAST)
    with pytest.raises(KeyError, match="not in the pool"):
        await pool.run("nope", HOSTNAME, timeout_s=1)


def test_open_file_limit_raised(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
        pool = SshPool([InventoryHost(f"gpu{index:04d}", "node") for index in range(1088)],
                       known_hosts=tmp_path / "kh", settings=PoolSettings(open_files_wanted=4096))
        wanted = 4 * 1088 + 256
        expected = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        assert pool.open_files_limit == resource.getrlimit(resource.RLIMIT_NOFILE)[0] == expected
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_stream_cut_by_the_host_is_unreachable(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu016", "stream")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    lines: list[str] = []
    stopping: list[asyncio.Future[None]] = []

    def on_line(line: str) -> None:
        lines.append(line)
        if len(lines) == 3:
            stopping.append(asyncio.ensure_future(host.stop()))

    result = await pool.stream("gpu016", agent_command("agent", 1.0), on_line,
                               first_line_timeout_s=5, line_timeout_s=5)
    await asyncio.gather(*stopping)
    await pool.close()
    assert result.state is HostState.UNREACHABLE
    assert result.reason.startswith("connection lost")
    assert result.lines == 3


async def test_restart_between_commands_reconnects_at_once(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    host = await make_host("gpu017")
    known = write_known_hosts(tmp_path / "known_hosts", host)
    pool = SshPool([inventory_host(host, client_key[1])], known_hosts=known, settings=FAST)
    assert (await pool.run("gpu017", HOSTNAME, timeout_s=5)).state is HostState.OK
    await host.stop()
    await host.start()
    again = await pool.run("gpu017", HOSTNAME, timeout_s=5)
    await pool.close()
    assert again.state is HostState.OK
    assert host.stats.tcp_connections == 2
