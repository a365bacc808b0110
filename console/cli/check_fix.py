"""`fleet check fix [--nodes HOSTLIST] [--switches HOSTLIST] [--profile FILE] [--canary HOST] [--yes] [--json]`:
bring the failed checks back to the profile, one guarded change per host.

Reads the configuration as ``fleet check`` does, plans the exact commands per node and switch with their
rollbacks (``fleet.fabric.config_fix``), shows them with what only a person can fix, asks for
confirmation, then changes the canary (``--canary``, else the first host of the plan) first, checks it
again, keeps it or rolls it back, and only then goes on to the next host (``fleet.collectors.config_fix``).
Every step is in the audit (``fleet audit``). Refused in read-only mode before anything connects.

Exit status (docs/exit-codes.md): 0 every planned change was applied, verified and kept; 1 a change was
rolled back or failed, the plan was not confirmed, or only manual fixes are left; 2 read-only mode, a bad
option, profile or host list; 3 the audit could not be stored.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from fleet.collectors.config_fix import FixOutcome, fix_fleet
from fleet.collectors.guarded_change import actor
from fleet.collectors.sshpool import SshPool
from fleet.console.cli.check import check, load_profile, read_config, select_hosts
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
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.fabric.config_checks import run_checks
from fleet.fabric.config_fix import FixPlan, line, plan_fixes


def show_plan(plan: FixPlan) -> None:
    """The commands per host, their rollbacks and the manual fixes, on stderr (stdout stays for --json)."""
    for host in plan.hosts:
        click.echo(f"{host.host} ({host.os if host.role == 'switch' else 'node'}):", err=True)
        for step in host.steps:
            click.echo(f"  # {step.check} {step.part}", err=True)
        for argv in host.apply:
            click.echo(f"  $ {line(argv)}", err=True)
        click.echo("  rollback: " + "; ".join(line(a) for a in host.rollback), err=True)
    if plan.manual:
        click.echo("needs a person (not run):", err=True)
        for manual in plan.manual:
            click.echo(f"  {manual.check} {manual.part}: {manual.advice or manual.why}", err=True)


@check.command("fix")
@click.option("--nodes", "nodes_expr", default=None, help="Slurm host list (default: every node).")
@click.option("--switches", "switches_expr", default=None,
              help="Switch host list (default: every switch, or those the --nodes are cabled to).")
@click.option("--profile", "profile_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="RoCE profile TOML (default: NVIDIA's recommendations, docs/roce-profile.example.toml).")
@click.option("--canary", default=None, help="The host changed first (default: the first host of the plan).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@read_only_option
@inventory_option
@db_option
@json_option
def fix(nodes_expr: str | None, switches_expr: str | None, profile_path: Path | None, canary: str | None,
        yes: bool, read_only_flag: bool, inventory_path: Path | None, db_path: Path | None, as_json: bool) -> None:
    """Fix failed checks: plan the commands per host, confirm, change a canary first, check again, roll back."""
    refuse_if_read_only(read_only_flag, "changes the RoCE, PCIe and switch configuration of the hosts")
    profile = load_profile(profile_path)
    inventory = open_inventory(inventory_path)
    nodes, switches = select_hosts(inventory, nodes_expr, switches_expr)
    config = read_config(inventory, nodes, switches)
    report = run_checks(config, profile, ts=time.time())
    plan = plan_fixes(report, config, profile)
    if canary is not None and plan.host(canary) is None:
        fail(f"--canary {canary} has nothing planned (planned: {', '.join(h.host for h in plan.hosts) or 'none'})",
             ExitCode.USAGE)
    for name, reason in sorted(report.unreachable.items()):
        click.echo(f"fleet: not read: {name}: {reason}", err=True)
    if not plan.hosts:
        if as_json:
            print_json(FixOutcome(manual=tuple(m.as_json() for m in plan.manual)).as_json() | {"plan": plan.as_json()})
        if plan.manual:
            show_plan(plan)
            fail("nothing fleet can change: only manual fixes are left", ExitCode.FAILED)
        click.echo("nothing to fix: every check passes" if not report.failed else "nothing planned", err=True)
        if report.unreachable:
            sys.exit(int(ExitCode.FAILED))
        return
    show_plan(plan)
    first = canary or plan.hosts[0].host
    if not yes and not click.confirm(f"Apply to {len(plan.hosts)} hosts, {first} first?", default=False, err=True):
        fail("not applied: not confirmed", ExitCode.FAILED)
    path = db_path_or_default(db_path)
    writer = open_writer(path)
    try:
        async def run() -> FixOutcome:
            pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
            try:
                return await fix_fleet(pool, inventory, plan, config, profile, actor=actor(),
                                       put_action=writer.put_action, read_only=False, canary=canary,
                                       on_step=lambda step, words: click.echo(f"[{step}] {words}", err=True))
            finally:
                await pool.close()

        outcome = run_async(run())
    finally:
        audited = writer.flush(timeout=30)
        store_failing = None if audited else writer.stats().failing or "timed out after 30 s"
        writer.close()
    if as_json:
        print_json(outcome.as_json() | {"plan": plan.as_json()})
    else:
        for done in outcome.hosts:
            click.echo(f"{done.host}: {done.state}: {done.verdict}")
    if store_failing is not None:
        fail(f"the audit of this change was not stored in {path}: {store_failing}", ExitCode.NO_DATA)
    if not outcome.all_kept or plan.manual or report.unreachable:
        sys.exit(int(ExitCode.FAILED))
