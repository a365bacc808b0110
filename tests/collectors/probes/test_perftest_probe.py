"""perftest probes against the simulated fleet: results parsed and stored, the server always cleaned up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from simfleet import Fleet, fabric_text, start_fleet

from fleet.collectors.commands import Command, command
from fleet.collectors.probe_sessions import Launcher, ProbeSessions
from fleet.collectors.probes import perftest_probe
from fleet.collectors.probes.perftest_probe import GidCache, PerftestSpec, run_perftest
from fleet.collectors.probes.ports import PortAllocator
from fleet.collectors.sshpool import RunResult
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

pytestmark = pytest.mark.timeout(30)


def _launcher(fleet: Fleet, kind: str) -> Launcher:
    """The pool's SSH sessions, or a probe runner per node: a probe must come out the same either way."""
    return fleet.pool if kind == "ssh" else ProbeSessions(fleet.pool)


async def _close(launcher: Launcher) -> None:
    if isinstance(launcher, ProbeSessions):
        await launcher.close()


@pytest.fixture(params=["ssh", "runner"])
async def launcher(fleet: Fleet, request: pytest.FixtureRequest) -> AsyncIterator[Launcher]:
    chosen = _launcher(fleet, request.param)
    yield chosen
    await _close(chosen)


async def test_latency_is_parsed_and_stored(fleet: Fleet, launcher: Launcher, tmp_path: Path) -> None:
    spec = PerftestSpec("gpu001", "gpu003", test="ib_send_lat", src_nic="mlx5_2")
    record = await run_perftest(launcher, spec)
    assert record.ok, record.result
    assert record.kind == "lat" and record.src_nic == "mlx5_2" and record.dst_nic == "mlx5_2"
    result = record.result
    assert 0 < result["t_min_usec"] <= result["t_typical_usec"] <= result["p99_usec"] <= result["p999_usec"]
    assert result["size_bytes"] == 2 and result["iterations"] == 1000
    assert record.params["gid_index"] == {"client": 3, "server": 3}  # the RoCE v2 entry with IPv4
    assert "-x 3" in record.raw and "-d mlx5_2" in record.raw
    assert "# server gpu003" in record.raw and "# client gpu001" in record.raw
    assert "Waiting for client to connect" in record.raw  # the server's side is kept too
    assert fleet.perftest_servers() == []

    db = tmp_path / "fleet.db"
    with StoreWriter(db) as writer:
        writer.put_probe(record)
        assert writer.flush()
    with StoreReader(db) as reader:
        stored = reader.probes(kind="lat")
    assert len(stored) == 1
    assert stored[0].result["p99_usec"] == pytest.approx(result["p99_usec"])
    assert stored[0].raw == record.raw


async def test_bandwidth_is_parsed_in_gbps(fleet: Fleet, launcher: Launcher) -> None:
    spec = PerftestSpec("gpu002", "gpu004", test="ib_write_bw", src_nic="mlx5_0", size_bytes=1 << 20, iterations=200)
    record = await run_perftest(launcher, spec)
    assert record.ok, record.result
    assert record.kind == "bw"
    assert 300 < record.result["bw_avg_gbps"] <= 400  # a 400 Gb/s link, nothing else on it
    assert record.result["bw_peak_gbps"] >= record.result["bw_avg_gbps"]
    assert "--report_gbits" in record.raw
    assert fleet.perftest_servers() == []


async def test_server_is_killed_when_the_client_fails(fleet: Fleet, launcher: Launcher) -> None:
    spec = PerftestSpec("gpu001", "gpu002", src_nic="mlx5_9", dst_nic="mlx5_0", gid_index=3)
    seen: list[list[tuple[str, int]]] = []
    record = await run_perftest(launcher, spec, on_stage=lambda s: seen.append(fleet.perftest_servers()))
    assert [("gpu002", record.params["port"])] in seen  # the server really was waiting
    assert not record.ok
    assert record.result["stage"] == "client" and record.result["failed_host"] == "gpu001"
    assert "Couldn't find device mlx5_9" in record.result["error"]
    assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])


@pytest.mark.parametrize("kind", ["ssh", "runner"])
async def test_server_is_killed_on_timeout(tmp_path: Path, kind: str) -> None:
    faults = '[[faults]]\nkind = "node_hang"\ntarget = "gpu001"\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    launcher = _launcher(fleet, kind)
    try:
        seen: list[list[tuple[str, int]]] = []
        spec = PerftestSpec("gpu001", "gpu002", gid_index=3, timeout_s=1.5)  # the client's node never answers
        record = await asyncio.wait_for(
            run_perftest(launcher, spec, on_stage=lambda s: seen.append(fleet.perftest_servers())), 30)
        assert [("gpu002", record.params["port"])] in seen
        assert not record.ok and record.result["stage"] == "timeout"
        assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])
    finally:
        await _close(launcher)
        await fleet.pool.close()
        await fleet.server.close()


async def test_a_long_run_is_cut_at_the_timeout(fleet: Fleet, launcher: Launcher) -> None:
    spec = PerftestSpec("gpu001", "gpu002", iterations=50_000_000, timeout_s=1.5)  # runs ~10 s in the model
    record = await asyncio.wait_for(run_perftest(launcher, spec), 30)
    assert not record.ok and record.result["stage"] == "timeout"
    assert "within 1.5 s" in record.result["error"]  # cut at its timeout, not run to its end


async def test_server_is_killed_on_cancel(fleet: Fleet, launcher: Launcher) -> None:
    listening = asyncio.Event()
    seen: list[list[tuple[str, int]]] = []

    def stage(name: str) -> None:
        if name == "listening":
            seen.append(fleet.perftest_servers())
            listening.set()

    task = asyncio.ensure_future(run_perftest(launcher, PerftestSpec("gpu003", "gpu004"), on_stage=stage))
    await asyncio.wait_for(listening.wait(), 5)
    task.cancel()  # what Ctrl-C does to the probe's task
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen and len(seen[0]) == 1 and seen[0][0][0] == "gpu004"
    assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])


async def test_the_client_waits_for_the_probes_after_and_that_wait_is_not_timed(fleet: Fleet, launcher: Launcher) -> None:
    previous = asyncio.get_running_loop().create_future()  # the probe its NICs are still in
    stages: list[str] = []
    spec = PerftestSpec("gpu001", "gpu002", timeout_s=1.5)
    task = asyncio.ensure_future(run_perftest(launcher, spec, on_stage=stages.append, after=[previous]))
    assert await fleet.wait_until(lambda: "listening" in stages)
    port = [p for node, p in fleet.perftest_servers() if node == "gpu002"]
    await asyncio.sleep(2.0)  # longer than the probe's timeout_s: the wait is not the probe's own time
    assert "client" not in stages and fleet.perftest_servers() == [("gpu002", port[0])]
    previous.set_result(None)
    record = await asyncio.wait_for(task, 5)
    assert record.ok, record.result
    assert stages == ["gid", "server", "listening", "client", "done"]
    assert f"timeout -k 2 {int(1.5 + perftest_probe.AFTER_GRACE_S + perftest_probe.SERVER_GRACE_S + 1.999)} " in (
        record.raw)  # the server's own timeout allows for the wait
    assert fleet.perftest_servers() == []


async def test_server_is_killed_on_cancel_while_waiting_for_the_probes_after(fleet: Fleet, launcher: Launcher) -> None:
    stages: list[str] = []
    never = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(run_perftest(launcher, PerftestSpec("gpu003", "gpu004"), on_stage=stages.append,
                                              after=[never]))
    assert await fleet.wait_until(lambda: "listening" in stages)
    assert [node for node, _ in fleet.perftest_servers()] == ["gpu004"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "client" not in stages
    assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])


async def test_probes_after_that_never_end_fail_the_probe_and_stop_its_server(
    fleet: Fleet, launcher: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perftest_probe, "AFTER_GRACE_S", 0.0)  # wait at most timeout_s
    never = asyncio.get_running_loop().create_future()
    record = await asyncio.wait_for(
        run_perftest(launcher, PerftestSpec("gpu001", "gpu003", timeout_s=1.0), after=[never]), 30)
    assert not never.done()  # it gave up waiting on them, which still run
    assert not record.ok and record.result["stage"] == "wait" and record.result["failed_host"] == "gpu003"
    assert "did not end within 1 s" in record.result["error"]
    assert await fleet.wait_until(lambda: fleet.perftest_servers() == [])


async def test_parallel_probes_use_distinct_ports(fleet: Fleet, launcher: Launcher) -> None:
    ports = PortAllocator(offset=0)
    gids = GidCache()
    specs = [PerftestSpec("gpu001", "gpu002", src_nic=f"mlx5_{rail}") for rail in range(4)]
    records = await asyncio.gather(*(run_perftest(launcher, s, ports=ports, gids=gids) for s in specs))
    assert all(r.ok for r in records), [r.result for r in records]
    assert len({r.params["port"] for r in records}) == 4
    assert ports.held("gpu002") == frozenset()


async def test_a_busy_port_is_skipped(fleet: Fleet, launcher: Launcher) -> None:
    stop = asyncio.Event()
    squatter = asyncio.ensure_future(fleet.pool.stream(
        "gpu002", command("ib_send_lat", "-d", "mlx5_0", "-p", 18600), lambda _line: None,
        first_line_timeout_s=10, line_timeout_s=10, stop=stop,
    ))  # someone else's server, waiting on port 18600 for a client that never comes
    assert await fleet.wait_until(lambda: ("gpu002", 18600) in fleet.perftest_servers())
    record = await run_perftest(launcher, PerftestSpec("gpu001", "gpu002"), ports=PortAllocator(offset=0))
    assert record.ok, record.result
    assert record.params["port"] == 18601
    assert "Couldn't listen to port 18600" in record.raw
    assert fleet.perftest_servers() == [("gpu002", 18600)]  # the other server is left alone
    stop.set()
    await asyncio.wait_for(squatter, 5)


@pytest.mark.parametrize("kind", ["ssh", "runner"])
async def test_unreachable_node_fails_fast(tmp_path: Path, kind: str) -> None:
    faults = '[[faults]]\nkind = "node_unreachable"\ntarget = "gpu002"\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    launcher = _launcher(fleet, kind)
    try:
        record = await asyncio.wait_for(run_perftest(launcher, PerftestSpec("gpu001", "gpu002")), 30)
        assert not record.ok
        assert record.result["failed_host"] == "gpu002"
        assert "unreachable" in record.result["error"] and "refused" in record.result["error"]
    finally:
        await _close(launcher)
        await fleet.pool.close()
        await fleet.server.close()


@pytest.mark.parametrize("kind", ["ssh", "runner"])
async def test_infiniband_needs_no_gid_index(tmp_path: Path, kind: str) -> None:
    fleet = await start_fleet(tmp_path, fabric_text(link_layer="ib"))
    launcher = _launcher(fleet, kind)
    try:
        record = await run_perftest(launcher, PerftestSpec("gpu001", "gpu004", test="ib_write_lat"))
        assert record.ok, record.result
        assert record.params["gid_index"] == {"client": None, "server": None}
        assert " -x " not in record.raw
    finally:
        await _close(launcher)
        await fleet.pool.close()
        await fleet.server.close()


class _BufferedNode:
    """A pool whose perftest server prints nothing until it exits, as a real one over a pipe does.

    The client is refused until ``ready_after`` tries (the server still setting up), then runs.
    """

    def __init__(self, ready_after: int) -> None:
        self.ready_after = ready_after
        self.client_tries = 0
        self.server_stopped = False

    async def run(self, host: str, cmd: Command, timeout_s: float,
                  gate: asyncio.Future[None] | None = None) -> RunResult:
        if gate is not None:  # the staged client starts when the probe opens its gate, as SshPool's does
            await gate
        if cmd.tools == ("cat", "show_gids"):
            return RunResult(host, HostState.OK, stdout="InfiniBand\n", exit_status=0)
        self.client_tries += 1
        if self.client_tries <= self.ready_after:
            return RunResult(host, HostState.COMMAND_FAILED, stderr=" Couldn't connect to gpu002:18600\n",
                             exit_status=1, reason="exit status 1")
        return RunResult(host, HostState.OK, stdout=_LAT_CAPTURE.read_text(encoding="utf-8"), exit_status=0)

    async def stream(self, host: str, cmd: Command, on_line: Callable[[str], None], *, first_line_timeout_s: float,
                     line_timeout_s: float, stop: asyncio.Event | None = None) -> RunResult:
        assert stop is not None
        await stop.wait()
        self.server_stopped = True
        return RunResult(host, HostState.OK, exit_status=0)


_LAT_CAPTURE = Path(__file__).parents[2] / "fixtures/perftest/k8s-sriov-ib_write_lat-client-rdmacm-cpufreq.txt"
"""A real ib_write_lat client capture (tests/fixtures/SOURCES.md)."""


async def test_a_silent_server_is_tried_until_it_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perftest_probe, "LISTEN_WAIT_S", 0.05)
    monkeypatch.setattr(perftest_probe, "CONNECT_RETRY_DELAY_S", 0.01)
    monkeypatch.setattr(perftest_probe, "SERVER_GRACE_S", 0.05)  # this fake server ends only when stopped
    node = _BufferedNode(ready_after=2)
    record = await run_perftest(node, PerftestSpec("gpu001", "gpu002"))
    assert record.ok, record.result
    assert node.client_tries == 3 and node.server_stopped
    assert record.result["t_typical_usec"] > 0


async def test_a_server_that_never_listens_fails_after_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perftest_probe, "LISTEN_WAIT_S", 0.05)
    monkeypatch.setattr(perftest_probe, "CONNECT_RETRY_DELAY_S", 0.01)
    node = _BufferedNode(ready_after=100)
    record = await run_perftest(node, PerftestSpec("gpu001", "gpu002"))
    assert not record.ok and "Couldn't connect" in record.result["error"]
    assert node.client_tries == perftest_probe.CONNECT_RETRIES and node.server_stopped


class _LateServer:
    """The simulated fleet through ``launcher``, with a server node slow to start its perftest server: it
    starts once the client's first try was refused, and that refusal is read back only after the server's
    banner. Banner and refusal come over two SSH sessions from two nodes; on a real network either can
    come back first."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        self.refusals = 0
        self._refused = asyncio.Event()
        self._heard = asyncio.Event()

    async def run(self, host: str, cmd: Command, timeout_s: float,
                  gate: asyncio.Future[None] | None = None) -> RunResult:
        result = await self.launcher.run(host, cmd, timeout_s, gate)
        if "Couldn't connect" in result.stderr:
            self.refusals += 1
            self._refused.set()
            await asyncio.wait_for(self._heard.wait(), 10.0)
        return result

    async def stream(self, host: str, cmd: Command, on_line: Callable[[str], None], *, first_line_timeout_s: float,
                     line_timeout_s: float, stop: asyncio.Event | None = None) -> RunResult:
        await self._refused.wait()

        def heard(line: str) -> None:
            on_line(line)
            if "Waiting for client to connect" in line:
                self._heard.set()

        return await self.launcher.stream(host, cmd, heard, first_line_timeout_s=first_line_timeout_s,
                                          line_timeout_s=line_timeout_s, stop=stop)


async def test_a_refusal_from_before_the_server_listened_is_tried_again(
    fleet: Fleet, launcher: Launcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server listens by the time its client's refusal is read: the refusal answered a try from before
    it listened, so the pair is tried again and measured, not reported as failed."""
    monkeypatch.setattr(perftest_probe, "LISTEN_WAIT_S", 0.05)  # the client's first try comes before the server
    late = _LateServer(launcher)
    record = await run_perftest(late, PerftestSpec("gpu001", "gpu003"))
    assert record.ok, record.result
    assert late.refusals == 1 and record.result["t_typical_usec"] > 0
    assert fleet.perftest_servers() == []
