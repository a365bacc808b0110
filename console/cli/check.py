"""`fleet check [--nodes HOSTLIST] [--switches HOSTLIST] [--profile FILE] [--json]`: is every NIC, GPU node and
switch configured for lossless RoCE and GPUDirect RDMA, and do both ends of each link agree?

Reads the configuration over SSH (progress on stderr), judges it against the
profile (``docs/roce-profile.example.toml``; NVIDIA's recommendations when no
``--profile``), prints one row per check (pass/warn/fail counts and the odd
ones out) and stores the run in the history (an event of kind
``config_check``: the diagnosis, the console's Config screen and baselines
read it). ``fleet check fix`` changes machines: see ``console/cli/check_fix.py``.

Exit status (docs/exit-codes.md): 0 every check passes on every host; 1 a
check fails or a host could not be read; 2 a bad option, profile or
inventory, a name the inventory does not hold; 3 no host answered, or the
run could not be stored.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import click
import hostlist

from fleet.collectors.config_read import read_fleet
from fleet.collectors.inventory import Inventory
from fleet.collectors.sshpool import SshPool
from fleet.console.cli.common import (
    db_option,
    db_path_or_default,
    fail,
    inventory_option,
    json_option,
    open_inventory,
    open_writer,
    print_json,
    run_async,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.fabric.config_checks import SPECS, ConfigReport, report_event, run_checks
from fleet.fabric.roce_config import FleetConfig, configuration_summary
from fleet.fabric.roce_profile import (
    DEFAULT_PROFILE,
    ProfileError,
    RoceProfile,
    parse_profile,
    profile_json,
)

ODD_SHOWN = 6
"""Odd ones named per row in the table (all of them are in --json)."""


def load_profile(path: Path | None) -> RoceProfile:
    """The profile at ``path`` (NVIDIA's defaults when None); one line and exit 2 on a mistake."""
    if path is None:
        return DEFAULT_PROFILE
    try:
        return parse_profile(path.read_text(encoding="utf-8"), source=str(path))
    except OSError as error:
        fail(f"cannot read profile {path}: {error.strerror or error}", ExitCode.USAGE)
    except (ProfileError, UnicodeDecodeError) as error:
        fail(str(error), ExitCode.USAGE)


def _expand(expression: str) -> list[str]:
    try:
        return list(hostlist.expand_hostlist(expression))
    except hostlist.BadHostlist as error:
        fail(f"not a host list: {expression!r} ({error})", ExitCode.USAGE)


def select_hosts(inventory: Inventory, nodes_expr: str | None,
                 switches_expr: str | None) -> tuple[list[str], list[str]]:
    """The nodes and switches to read: every one by default; with ``--nodes`` only, the switches their cables
    reach in the plan (every switch when the inventory has no plan)."""
    all_nodes = [h.name for h in inventory.nodes]
    all_switches = [h.name for h in inventory.switches]
    nodes = _expand(nodes_expr) if nodes_expr else all_nodes
    unknown = [n for n in nodes if n not in all_nodes]
    if unknown:
        fail(f"{unknown[0]} is not a node of the inventory {inventory.path}", ExitCode.USAGE)
    if switches_expr is not None:
        switches = _expand(switches_expr) if switches_expr else []
        unknown = [s for s in switches if s not in all_switches]
        if unknown:
            fail(f"{unknown[0]} is not a switch of the inventory {inventory.path}", ExitCode.USAGE)
    elif nodes_expr and inventory.cabling:
        cabled = {row.switch for row in inventory.cabling if row.node in nodes}
        switches = [s for s in all_switches if s in cabled]
    else:
        switches = all_switches
    return nodes, switches


def read_config(inventory: Inventory, nodes: Sequence[str], switches: Sequence[str]) -> FleetConfig:
    """Read the hosts with a progress line on stderr (redrawn on a terminal)."""
    total = len(nodes) + len(switches)
    live = sys.stderr.isatty()
    done = 0

    def seen(host: str, reason: str) -> None:
        nonlocal done
        done += 1
        if reason:
            click.echo(("\r" if live else "") + f"fleet: {host}: {reason}", err=True)
        if live:
            click.echo(f"\rreading configuration {done}/{total}", err=True, nl=False)

    async def run() -> FleetConfig:
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        try:
            return await read_fleet(pool, inventory, nodes, switches, on_host=seen)
        finally:
            await pool.close()

    click.echo(f"reading the configuration of {len(nodes)} nodes and {len(switches)} switches", err=True)
    config = run_async(run())
    if live:
        click.echo("", err=True)
    return config


def store_report(db_path: Path | None, report: ConfigReport, config: FleetConfig) -> None:
    """Keep the run in the history; one line and exit 3 when it cannot be stored."""
    path = db_path_or_default(db_path)
    writer = open_writer(path)
    try:
        writer.put_event(report_event(report, configuration_summary(config)))
        stored = writer.flush(timeout=30)
        failing = None if stored else writer.stats().failing or "timed out after 30 s"
    finally:
        writer.close()
    if failing is not None:
        fail(f"the check run was not stored in {path}: {failing}", ExitCode.NO_DATA)


def print_table(report: ConfigReport) -> None:
    click.echo(f"{'check':<22} {'pass':>5} {'warn':>5} {'fail':>5}  odd ones out")
    for row in report.summaries():
        odd = ", ".join(row.odd[:ODD_SHOWN]) + (f" (+{len(row.odd) - ODD_SHOWN} more)" if len(row.odd) > ODD_SHOWN
                                                 else "")
        click.echo(f"{SPECS[row.check].title:<22} {row.passed:>5} {row.warned:>5} {row.failed:>5}  {odd}")
    for host, reason in sorted(report.unreachable.items()):
        click.echo(f"not read: {host}: {reason}")
    failed = report.failed
    if failed:
        click.echo("")
        for result in failed[:20]:
            click.echo(f"FAIL {result.check} {result.target}: expected {result.expected}, found {result.found}"
                       + (f"; fix: {result.fix}" if result.fix else ""))
        if len(failed) > 20:
            click.echo(f"... {len(failed) - 20} more failures (--json lists every one)")


def exit_status(report: ConfigReport, hosts: int) -> ExitCode:
    if hosts and len(report.unreachable) >= hosts:
        return ExitCode.NO_DATA
    return ExitCode.FAILED if report.failed or report.unreachable else ExitCode.OK


@click.group(invoke_without_command=True)
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node).")
@click.option("--switches", "switches_expr", default=None,
              help="Switch host list (default: every switch, or those the --nodes are cabled to).")
@click.option("--profile", "profile_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="RoCE profile TOML (default: NVIDIA's recommendations, docs/roce-profile.example.toml).")
@inventory_option
@db_option
@json_option
@click.pass_context
def check(ctx: click.Context, nodes_expr: str | None, switches_expr: str | None, profile_path: Path | None,
          inventory_path: Path | None, db_path: Path | None, as_json: bool) -> None:
    """Check every NIC, GPU node and switch against the lossless RoCE profile, and both ends of each link."""
    if ctx.invoked_subcommand is not None:
        return
    profile = load_profile(profile_path)
    inventory = open_inventory(inventory_path)
    nodes, switches = select_hosts(inventory, nodes_expr, switches_expr)
    config = read_config(inventory, nodes, switches)
    report = run_checks(config, profile, ts=time.time())
    code = exit_status(report, len(nodes) + len(switches))
    if code is not ExitCode.NO_DATA:
        store_report(db_path, report, config)
    if as_json:
        print_json(report.to_json() | {"profile_values": profile_json(profile)})
    else:
        print_table(report)
    if code is ExitCode.NO_DATA:
        fail(f"no host answered ({len(report.unreachable)} not read)", ExitCode.NO_DATA)
    if code is not ExitCode.OK:
        sys.exit(int(code))


from fleet.console.cli import check_fix  # noqa: E402  (registers `fleet check fix` on the group above)

__all__ = ["check", "check_fix", "load_profile", "read_config", "select_hosts"]
