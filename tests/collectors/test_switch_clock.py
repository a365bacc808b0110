"""A switch poll is stamped with the switch's own clock, so its rates do not hold the collector's delays."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet

from fleet.collectors.inventory import load_inventory
from fleet.collectors.sections import split_sections
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.collectors.switches.base import MAX_CLOCK_SKEW_S, poll_time
from fleet.collectors.switches.nvue import NvueDriver
from fleet.collectors.switches.sonic import SonicDriver
from fleet.simulator.scenario import load_scenario

ARRIVED = 1_764_435_600.0


@pytest.mark.parametrize(
    ("clock", "ts", "problem"),
    [
        ("1764435599.731204113\n", 1_764_435_599.731204113, ""),
        (None, ARRIVED, ""),  # an output without the section (captured, or sent by something else)
        ("", ARRIVED, "is not a time"),  # date missing: its error went to stderr
        ("Sat Nov 29 17:00:00 UTC 2025\n", ARRIVED, "is not a time"),
        ("nan\n", ARRIVED, "off the collector's"),
        (f"{ARRIVED + MAX_CLOCK_SKEW_S + 1}\n", ARRIVED, "off the collector's"),  # a clock NTP lost
        (f"{ARRIVED - 3600}\n", ARRIVED, "-3600 s off"),
    ],
)
def test_the_switch_clock_stamps_a_poll_unless_it_cannot_be_trusted(clock: str | None, ts: float,
                                                                     problem: str) -> None:
    sections = {"interfaces": "..."} if clock is None else {"clock": clock, "interfaces": "..."}
    got, reason = poll_time(sections, ARRIVED)
    assert math.isclose(got, ts, abs_tol=1e-6)
    assert (problem in reason) if problem else reason == ""


@pytest.mark.parametrize("driver", [NvueDriver("leaf01"), SonicDriver("leaf09")])
def test_every_poll_reads_the_clock_before_the_counters(driver: NvueDriver | SonicDriver) -> None:
    text = driver.poll_command().text
    assert "date +%s.%N" in text
    assert text.index("date +%s.%N") < text.index("show")


@pytest.mark.slow
async def test_polls_over_ssh_carry_the_simulated_switches_time(tmp_path: Path) -> None:
    """One Cumulus and one SONiC switch of the incident scenario, polled late on purpose: the
    samples keep the switch's time, and a clock far off is refused in words."""
    async with running_fleet(load_scenario("incident"), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=PoolSettings(ssh_config=()))
        try:
            for driver in (NvueDriver("leaf01"), SonicDriver("leaf09")):
                for _ in range(2):  # NVUE learns its ports on the first poll
                    before = time.time()
                    result = await pool.run(driver.name, driver.poll_command(), 30.0)
                    after = time.time()
                    assert result.ok, result.reason
                polled = driver.read_poll(result.stdout, after + 5.0)  # as if it waited 5 s in a busy loop
                clock = float(split_sections(result.stdout)["clock"])
                assert polled.sample.ts == clock and before - 1.0 <= clock <= after + 1.0
                assert polled.sample.values and not polled.problems, polled.problems
                skewed = driver.read_poll(result.stdout, clock + 3600.0)
                assert skewed.sample.ts == clock + 3600.0
                assert any("off the collector's: stamped on arrival" in p for p in skewed.problems)
        finally:
            await pool.close()
