"""How long a simulated perftest run lasts: its iterations plus perftest's cycle-counter calibration per row."""

from __future__ import annotations

import asyncio
import time

import pytest
from sim_helpers import small_model

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


async def _run_pair(model_t: float) -> tuple[str, str, float]:
    """One ib_write_lat pair on a fresh small fleet at model time ``model_t``: client text, server text, wall s."""
    model = small_model()
    model.now = lambda: model_t  # type: ignore[method-assign]
    rendezvous = Rendezvous()
    shells = {h: Shell(Machine(h, model.topology.role_of(h), model, rendezvous)) for h in ("gpu001", "gpu007")}
    server = asyncio.create_task(run_collect(shells["gpu007"], "ib_write_lat -d mlx5_0 -x 3 -p 18610"))
    while ("gpu007", 18610) not in rendezvous.servers:
        await asyncio.sleep(0)
    started = time.monotonic()
    out, err, status = await asyncio.wait_for(run_collect(shells["gpu001"], "ib_write_lat -d mlx5_0 -x 3 -p 18610 gpu007"), 5)
    wall_s = time.monotonic() - started
    server_out, _, server_status = await asyncio.wait_for(server, 5)
    assert (status, err, server_status) == (0, "", 0)
    return out, server_out, wall_s


async def test_a_run_lasts_at_least_the_calibration_and_prints_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    client, server, wall_s = await _run_pair(40.0)
    assert wall_s >= CPU_MHZ_CALIBRATION_S
    monkeypatch.setattr(perftest, "CPU_MHZ_CALIBRATION_S", 0.0)
    client_fast, server_fast, fast_s = await _run_pair(40.0)
    assert fast_s < CPU_MHZ_CALIBRATION_S
    assert (client_fast, server_fast) == (client, server)  # the wait changes the time a run takes, not its text


async def test_a_run_asked_for_earlier_counts_from_when_it_was_asked() -> None:
    """A probe runner's request is read a loop turn (or a busy burst) before its command runs: the
    simulated run counts from the reading, as on a real node the runner starts the client at once."""
    model = small_model()
    rendezvous = Rendezvous()
    shells = {h: Shell(Machine(h, model.topology.role_of(h), model, rendezvous)) for h in ("gpu001", "gpu007")}
    server = asyncio.create_task(run_collect(shells["gpu007"], "ib_write_lat -d mlx5_0 -x 3 -p 18611"))
    while ("gpu007", 18611) not in rendezvous.servers:
        await asyncio.sleep(0)
    out: list[str] = []
    loop = asyncio.get_running_loop()
    io = StreamIO(out.append, out.append, asked_at=loop.time() - 0.15)
    started = time.monotonic()
    status = await shells["gpu001"].run_words(["ib_write_lat", "-d", "mlx5_0", "-x", "3", "-p", "18611", "gpu007"], io)
    wall_s = time.monotonic() - started
    assert status == 0 and "t_typical" in "".join(out)
    assert wall_s < CPU_MHZ_CALIBRATION_S - 0.1  # the 0.15 s already past were part of the run
    await asyncio.wait_for(server, 5)
