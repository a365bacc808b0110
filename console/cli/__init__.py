"""The `fleet` command line.

Subcommands live in their own modules and are imported only when invoked, so
`fleet --help` and quick scripted calls start fast (the console pulls in
Textual, the collectors asyncssh; neither is needed to print help).
"""

from __future__ import annotations

import importlib
import importlib.util

import click

# name -> "module:attribute" of a click.Command. Each feature owns its module.
SUBCOMMANDS: dict[str, str] = {
    "sim": "fleet.console.cli.sim:sim",
    "demo": "fleet.console.cli.demo:demo",
    "console": "fleet.console.cli.console_cmd:console",
    "collect": "fleet.console.cli.collect:collect",
    "export": "fleet.console.cli.export:export",
    "parse": "fleet.console.cli.parse:parse",
    "db": "fleet.console.cli.db:db",
    "lat": "fleet.console.cli.probes:lat",
    "bw": "fleet.console.cli.probes:bw",
    "linktest": "fleet.console.cli.probes:linktest",
    "allreduce": "fleet.console.cli.probes:allreduce",
    "alltoall": "fleet.console.cli.alltoall:alltoall",
    "ep-bench": "fleet.console.cli.alltoall:ep_bench",
    "diagnose": "fleet.console.cli.diagnose:diagnose",
    "ecmp": "fleet.console.cli.ecmp:ecmp",
    "audit": "fleet.console.cli.audit:audit",
    "baseline": "fleet.console.cli.baseline:baseline",
    "accept": "fleet.console.cli.accept:accept",
    "check": "fleet.console.cli.check:check",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args: object, lazy: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._available()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        target = self._available().get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def _available(self) -> dict[str, str]:
        """Only the subcommands whose module exists, so help never lists a dead name."""
        available = {}
        for name, target in self._lazy.items():
            module_name = target.split(":")[0]
            if importlib.util.find_spec(module_name) is not None:
                available[name] = target
        return available


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleet")
def main() -> None:
    """fleet: the RDMA GPU fleet console (links, congestion, optics, GPUs, probes, ECMP)."""
