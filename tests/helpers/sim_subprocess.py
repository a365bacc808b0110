"""``fleet sim`` as its own process on a scenario given as TOML text, and the CLI run against it:
what the headless commands' tests share (the in-process fleet is ``helpers.simfleet``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from fleet.console.cli import main
from fleet.console.cli.sim_process import SimProcess, start_sim


@contextlib.contextmanager
def sim_process(folder: Path, scenario: str, *, timeout_s: float = 30) -> Iterator[SimProcess]:
    """The simulator on ``scenario`` (TOML text written into ``folder``), ready; stopped on exit."""
    path = folder / "scenario.toml"
    path.write_text(scenario, encoding="utf-8")
    process = start_sim(str(path), folder / "state", timeout_s=timeout_s)
    try:
        yield process
    finally:
        process.stop()


def fleet_cli(sim: SimProcess, db: Path, *args: str) -> tuple[int, str, str]:
    """``fleet ARGS --inventory <the simulator's> --db DB``: exit code, stdout, stderr."""
    result = CliRunner().invoke(main, [*args, "--inventory", str(sim.inventory), "--db", str(db)])
    return result.exit_code, result.stdout, result.stderr
