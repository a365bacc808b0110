"""`fleet drain NODE --reason TEXT` and `fleet resume NODE`: a node out of Slurm's service and back.

Each shows the exact ``scontrol`` command and the head it runs on, asks for confirmation (``--yes``
skips it), runs it over SSH on the inventory's Slurm head, reads the node before and after, and
audits the change in the history (``fleet audit``). Refused in read-only mode before connecting.

Exit status (docs/exit-codes.md): 0 done; 1 not confirmed, or Slurm refused it or the head could not
be reached (the attempt is audited); 2 read-only mode, no ``[slurm]`` head in the inventory, a bad
node name or reason; 3 the audit could not be stored.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fleet.collectors.guarded_change import actor
from fleet.collectors.inventory import Inventory
from fleet.collectors.slurm_nodes import (
    NodeChange,
    NodeChangeError,
    NodeChangeOutcome,
    change_node,
    drain,
    resume,
)
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
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.store.writer import StoreWriter


def _head(inventory: Inventory, command_name: str) -> str:
    head = inventory.head
    if head is None:
        fail(f"{command_name}: the inventory names no Slurm head ([slurm] host = ...): nowhere to run scontrol",
             ExitCode.USAGE)
    return head.name


async def _run(inventory: Inventory, writer: StoreWriter, head: str, change: NodeChange) -> NodeChangeOutcome:
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        return await change_node(pool, head, change, actor=actor(), put_action=writer.put_action)
    finally:
        await pool.close()


def _change(inventory_path: Path | None, db_path: Path | None, change_of: str, node: str, reason: str, yes: bool,
            read_only_flag: bool, as_json: bool) -> None:
    words = {"drain": "drains", "resume": "resumes"}[change_of]
    refuse_if_read_only(read_only_flag, f"{words} {node} in Slurm")
    try:
        change = drain(node, reason) if change_of == "drain" else resume(node)
    except NodeChangeError as error:
        fail(f"{change_of}: {error}", ExitCode.USAGE)
    inventory = open_inventory(inventory_path)
    head = _head(inventory, f"fleet {change_of}")
    click.echo(f"About to {change_of} {node} in Slurm, on {head}:", err=True)
    click.echo(f"  $ {change.command.text}", err=True)
    if change_of == "drain":
        click.echo("No new job will start on it; running jobs finish.", err=True)
    if not yes and not click.confirm(f"{change_of.capitalize()} {node}?", default=False, err=True):
        fail(f"{node} not {change.done_word}: not confirmed", ExitCode.FAILED)
    path = db_path_or_default(db_path)
    writer = open_writer(path)
    try:
        outcome = run_async(_run(inventory, writer, head, change))
    finally:
        audited = writer.flush(timeout=30)
        store_failing = None if audited else writer.stats().failing or "timed out after 30 s"
        writer.close()
    if as_json:
        print_json(outcome.as_json())
    else:
        click.echo(outcome.verdict)
    if store_failing is not None:
        fail(f"the audit of this change was not stored in {path}: {store_failing}", ExitCode.NO_DATA)
    if not outcome.done:
        sys.exit(int(ExitCode.FAILED))


@click.command("drain")
@click.argument("node")
@click.option("--reason", required=True, help="Why (Slurm keeps it and shows it in sinfo -R), e.g. "
                                              "'link flapping on mlx5_1'.")
@inventory_option
@db_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@read_only_option
@json_option
def drain_command(node: str, reason: str, inventory_path: Path | None, db_path: Path | None, yes: bool,
                  read_only_flag: bool, as_json: bool) -> None:
    """Drain NODE in Slurm (no new job starts on it) with `scontrol update`, audited."""
    _change(inventory_path, db_path, "drain", node, reason, yes, read_only_flag, as_json)


@click.command("resume")
@click.argument("node")
@inventory_option
@db_option
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@read_only_option
@json_option
def resume_command(node: str, inventory_path: Path | None, db_path: Path | None, yes: bool, read_only_flag: bool,
                   as_json: bool) -> None:
    """Return NODE to service in Slurm with `scontrol update ... State=RESUME`, audited."""
    _change(inventory_path, db_path, "resume", node, "", yes, read_only_flag, as_json)
