"""How long a simulated perftest run lasts: its iterations plus perftest's cycle-counter calibration per row."""

from __future__ import annotations

import asyncio

import pytest
from sim_helpers import small_model
from virtual_time import VirtualTime

from fleet.simulator import perftest
from fleet.simulator.perftest import CPU_MHZ_CALIBRATION_S, MAX_RUN_S, parse_perftest, run_seconds
from fleet.simulator.session import Machine, Rendezvous, StreamIO
from fleet.simulator.shell import Shell, run_collect

pytestmark = pytest.mark.timeout(20)


def test_the_calibration_is_perftests_own_busy_wait() -> None:
    # get_clock.c: MEASUREMENTS = 200 waits, the i-th until USECSTART + i * USECSTEP = 100 + 10 i usec have passed
    busy_wait_usec = sum(100 + 10 * i for i in range(200))
    assert busy_wait_usec / 1e6 == pytest.approx(CPU_MHZ_CALIBRATION_S)


def test_each_reported_row_adds_one_calibration() -> None:
    lat = parse_perftest(["ib_write_lat", "-d", "mlx5_0", "gpu002"])
    assert run_seconds(0.003, lat, 1) == pytest.approx(0.003 + 0.219)
    every_size = parse_perftest(["ib_write_lat", "-a", "gpu002"])
    assert len(every_size.sizes()) == 23
    assert run_seconds(0.05, every_size, 23) == pytest.approx(0.05 + 23 * 0.219)
    timed = parse_perftest(["ib_write_bw", "-D", "2", "gpu002"])
    assert run_seconds(123.0, timed, 1) == pytest.approx(2.0 + 0.219)  # -D: the duration, not the iterations
    assert run_seconds(60.0, lat, 1) == MAX_RUN_S


def test_without_calibration_only_the_iterations_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perftest, "CPU_MHZ_CALIBRATION_S", 0.0)
    lat = parse_perftest(["ib_send_lat", "gpu002"])
    assert run_seconds(0.003, lat, 1) == pytest.approx(0.003)


async def _run_pair(monkeypatch: pytest.MonkeyPatch, model_t: float, asked_before_s: float | None = None,
                    port: int = 18610) -> tuple[str, str, float]:
    """One ib_write_lat pair on a fresh small fleet at model time ``model_t``, its client asked for
    ``asked_before_s`` before it runs (None: as it runs): client text, server text, and when the
    client's run ends, in seconds after it started running."""
    clock = VirtualTime()
    monkeypatch.setattr(perftest, "asyncio", clock)
    model = small_model()
    model.now = lambda: model_t  # type: ignore[method-assign]
    rendezvous = Rendezvous()
    shells = {h: Shell(Machine(h, model.topology.role_of(h), model, rendezvous)) for h in ("gpu001", "gpu007")}
    server = asyncio.create_task(run_collect(shells["gpu007"], f"ib_write_lat -d mlx5_0 -x 3 -p {port}"))
    while ("gpu007", port) not in rendezvous.servers:
        await asyncio.sleep(0)
    out: list[str] = []
    err: list[str] = []
    asked_at = None if asked_before_s is None else clock.now - asked_before_s
    io = StreamIO(out.append, err.append, asked_at=asked_at)
    words = ["ib_write_lat", "-d", "mlx5_0", "-x", "3", "-p", str(port), "gpu007"]
    status = await asyncio.wait_for(shells["gpu001"].run_words(words, io), 5)
    server_out, _, server_status = await asyncio.wait_for(server, 5)
    assert (status, "".join(err), server_status) == (0, "", 0)
    return "".join(out), server_out, clock.now


async def test_a_run_lasts_its_iterations_and_one_calibration_and_prints_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client, server, run_s = await _run_pair(monkeypatch, 40.0)
    monkeypatch.setattr(perftest, "CPU_MHZ_CALIBRATION_S", 0.0)
    client_fast, server_fast, fast_s = await _run_pair(monkeypatch, 40.0)
    assert fast_s > 0  # the iterations themselves take time
    assert run_s == pytest.approx(fast_s + CPU_MHZ_CALIBRATION_S)  # one row (2 bytes): one calibration
    assert (client_fast, server_fast) == (client, server)  # the wait changes the time a run takes, not its text
    assert "t_typical" in client


async def test_a_run_asked_for_earlier_counts_from_when_it_was_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe runner's request is read a loop turn (or a busy burst) before its command runs: the
    simulated run counts from the reading, as on a real node the runner starts the client at once."""
    _, _, at_once_s = await _run_pair(monkeypatch, 40.0, asked_before_s=None, port=18611)
    _, _, asked_now_s = await _run_pair(monkeypatch, 40.0, asked_before_s=0.0, port=18611)
    client, _, asked_before_s = await _run_pair(monkeypatch, 40.0, asked_before_s=0.15, port=18611)
    assert asked_now_s == at_once_s
    assert asked_before_s == pytest.approx(at_once_s - 0.15)  # the 0.15 s already past were part of the run
    assert "t_typical" in client
