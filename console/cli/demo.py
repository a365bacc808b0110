"""`fleet demo`: the simulated fleet and the console on it, in one command."""

from __future__ import annotations

import importlib
import sys
import tempfile
import threading
from pathlib import Path

import click

from fleet.console.cli.exit_codes import ExitCode


@click.command()
@click.option("--scenario", default="incident", show_default=True, help="A built-in scenario name or a scenario file.")
@click.option("--nodes", type=click.IntRange(1, 4096), default=None, help="Override the scenario's node count.")
def demo(scenario: str, nodes: int | None) -> None:
    """Start `fleet sim` in a temporary state directory, open the console on it, stop the simulator on exit."""
    from fleet.console.cli.console_cmd import console
    from fleet.console.cli.sim_process import SimulatorFailed, scaled_line, start_sim

    # The console's modules load (seconds on a busy machine) while the simulator starts in its process.
    loading = threading.Thread(target=importlib.import_module, args=("fleet.console.app",), daemon=True)
    loading.start()

    with tempfile.TemporaryDirectory(prefix="fleet-demo-") as temp:
        state = Path(temp)
        click.echo(f"fleet demo: starting the simulated fleet ({scenario})...", err=True)
        try:
            sim = start_sim(scenario, state / "sim", nodes=nodes)
        except SimulatorFailed as error:
            click.echo(f"fleet demo: {error}", err=True)
            sys.exit(int(ExitCode.FAILED))
        if scaled := scaled_line(sim):
            click.echo(scaled, err=True)
        loading.join()
        try:
            console.main(
                args=["--inventory", str(sim.inventory), "--db", str(state / "demo.sqlite")],
                prog_name="fleet console",
                standalone_mode=False,
            )
        except click.ClickException as error:
            error.show()
            sys.exit(error.exit_code)
        except click.Abort:
            pass
        finally:
            sim.stop()
