"""`fleet sim`: run the simulated GPU fleet (SSH servers on loopback) for the console and for rehearsals."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from fleet.console.cli.exit_codes import ExitCode


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/fleet/sim`` (``~/.local/state`` when the variable is unset)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fleet" / "sim"


@click.command()
@click.option("--scenario", "scenario_name", default="healthy", show_default=True,
              help="A built-in scenario name or a scenario TOML file.")
@click.option("--nodes", type=click.IntRange(1, 4096), default=None, help="Override [fabric] nodes.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where inventory.toml, known_hosts, id_ed25519 and cabling.csv go.")
@click.option("--list-scenarios", is_flag=True, help="List the built-in scenarios and exit.")
def sim(scenario_name: str, nodes: int | None, state_dir: Path | None, list_scenarios: bool) -> None:
    """Run the simulated fleet until Ctrl-C; prints one ready line when every machine listens."""
    from fleet.collectors.ssh_logging import quiet_when_off
    from fleet.console.cli.common import collect_less_often
    from fleet.simulator.main import run
    from fleet.simulator.scenario import ScenarioError, builtin_scenarios, load_scenario

    if list_scenarios:
        builtin = builtin_scenarios()
        width = max(map(len, builtin), default=0) + 2
        for name, path in builtin.items():
            try:
                description = load_scenario(str(path)).description
            except ScenarioError as error:
                description = f"(invalid: {error})"
            click.echo(f"{name:{width}s}{description}")
        return
    try:
        scenario = load_scenario(scenario_name, nodes=nodes)
    except ScenarioError as error:
        click.echo(f"fleet sim: {error}", err=True)
        sys.exit(int(ExitCode.USAGE))
    if scenario.scaled:
        click.echo(f"fleet sim: {scenario.name} {scenario.scaled}", err=True)
    quiet_when_off()  # the simulated sshds send and receive every packet of the fleet
    collect_less_often()
    sys.exit(run(scenario, state_dir or default_state_dir()))
