"""`fleet ecmp status|plan|apply`: find an imbalanced leaf, plan, apply with guards (audited: `fleet audit`).

status, plan and apply judge each leaf with the one assessment
(``fleet.collectors.ecmp_status.leaf_balances``: the numbers and the state
the console shows too); when the store holds no switch data newer than the
window they collect the switches (and the Slurm head) for one window first
and say so on stderr. apply changes a switch: refused in read-only mode
(``--read-only`` or ``FLEET_READ_ONLY=1`` / ``read_only = true`` in the config
file), refused for a leaf that needs no remedy (idle, balanced, no data)
unless ``--force REASON`` (audited), shows the exact commands and asks on
the terminal unless ``--yes``.

Exit status (docs/exit-codes.md): 0 done (apply: the change was kept); 1 apply
rolled back or did not apply (a leaf that needs no remedy, unforced), or a
leaf's configuration could not be read; 2 a bad option, a leaf the inventory
does not hold, an inventory without leaves (said at once, before any
collection), read-only mode; 3 no leaf has uplink data, or the store cannot
write.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from fleet.collectors.ecmp_apply import ApplySettings
from fleet.collectors.ecmp_status import (
    collect_switches,
    guarded_apply,
    leaf_balances,
    plan_leaf,
    switch_data_age_s,
)
from fleet.collectors.guarded_change import actor
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
    require_leaves,
    run_async,
)
from fleet.console.cli.exit_codes import ExitCode
from fleet.console.cli.read_only import read_only_option, refuse_if_read_only
from fleet.fabric.ecmp import COLLISION_TARGET, EcmpThresholds, LeafBalance, ecmp_thresholds
from fleet.fabric.ecmp_plan import Remedy, default_remedy
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

_DEFAULTS = EcmpThresholds()
RECENT_S = 30.0
"""Switch data newer than this (or than the window) is used as it is; older: collect a window first."""


def _window_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed([
        click.option("--window", "window_s", type=float, default=60.0, show_default=True,
                     help="Seconds of uplink throughput to judge."),
        click.option("--interval", "interval_s", type=float, default=1.0, show_default=True,
                     help="Seconds between switch polls when fleet collects or verifies itself."),
        click.option("--sustain", "sustain_s", type=float, default=None,
                     help="Seconds the imbalance must hold to be flagged (default 60, at most the window)."),
        click.option("--ratio", type=float, default=_DEFAULTS.imbalance_ratio, show_default=True,
                     help="max/mean of the uplinks at or above which a leaf is imbalanced."),
        click.option("--hot-util", "hot_util_pct", type=float, default=_DEFAULTS.hot_util_pct,
                     show_default=True, help="Percent of line rate the hottest uplink must reach."),
    ]):
        fn = option(fn)
    return fn


def _thresholds(window_s: float, sustain_s: float | None, ratio: float, hot_util_pct: float) -> EcmpThresholds:
    return ecmp_thresholds(window_s, sustain_s, ratio=ratio, hot_util_pct=hot_util_pct)


def _leaves(inventory: Inventory, leaf: str | None) -> list[str]:
    names = [h.name for h in inventory.by_role("leaf")]
    if leaf is not None and leaf not in names:
        fail(f"{leaf} is not a leaf of the inventory (leaves: {', '.join(names[:8])}{' ...' if len(names) > 8 else ''})",
             ExitCode.USAGE)
    return [leaf] if leaf else names


def _fresh_store(inventory: Inventory, writer: StoreWriter, reader: StoreReader, window_s: float,
                 interval_s: float) -> None:
    """Collect one window from the switches when the store has no uplink data that recent."""
    leaves = [h.name for h in inventory.by_role("leaf")]
    age = switch_data_age_s(reader, leaves, time.time())
    if age is not None and age <= max(window_s, RECENT_S):
        return
    seen = "no switch data in the store" if age is None else f"the newest switch data is {age:.0f} s old"
    click.echo(f"fleet: {seen}: collecting {window_s:g} s from the switches first", err=True)
    run_async(collect_switches(inventory, writer, window_s + max(3 * interval_s, 3.0), interval_s))
    if not writer.flush(timeout=30):
        fail(f"the store did not take the collected samples: {writer.stats().failing or 'timed out after 30 s'}",
             ExitCode.NO_DATA)


def _balances(inventory: Inventory, db_path: Path | None, window_s: float, interval_s: float,
              thresholds: EcmpThresholds, leaves: list[str]) -> tuple[list[LeafBalance], Path]:
    path = db_path_or_default(db_path)
    writer = open_writer(path)
    try:
        _fresh_store(inventory, writer, StoreReader(path), window_s, interval_s)
        reader = StoreReader(path)  # a new read connection sees what was just collected
        balances = leaf_balances(reader, inventory, thresholds, window_s=window_s, leaves=leaves)
    finally:
        writer.close()
    if not any(b.samples for b in balances):
        fail(f"no uplink throughput of any leaf in the last {window_s:g} s (did any leaf answer? see "
             "`fleet collect --once`)", ExitCode.NO_DATA)
    return balances, path


@click.group()
def ecmp() -> None:
    """ECMP uplink balance per leaf: status, remedies, guarded apply."""


@ecmp.command()
@inventory_option
@db_option
@_window_options
@json_option
def status(inventory_path: Path | None, db_path: Path | None, window_s: float, interval_s: float,
           sustain_s: float | None, ratio: float, hot_util_pct: float, as_json: bool) -> None:
    """Every leaf's uplink utilizations, max/mean imbalance and whether it is flagged."""
    inventory = open_inventory(inventory_path)
    require_leaves(inventory, "fleet ecmp status")
    thresholds = _thresholds(window_s, sustain_s, ratio, hot_util_pct)
    balances, _ = _balances(inventory, db_path, window_s, interval_s, thresholds, _leaves(inventory, None))
    if as_json:
        print_json({"thresholds": _thresholds_json(thresholds), "leaves": [b.as_json() for b in balances],
                    "flagged": [b.leaf for b in balances if b.flagged],
                    "warnings": [b.leaf for b in balances if b.warning]})
        return
    for b in balances:
        click.echo(status_line(b))


def status_line(b: LeafBalance) -> str:
    """One leaf in words: state, max/mean, uplink utilizations, the collision estimate, why."""
    bars = " ".join(f"{u.spine}:{u.util_pct:3.0f}%" for u in b.uplinks)
    collision = f"  {b.collision_words()}" if b.collision_rate is not None and b.actionable else ""
    return (f"{b.leaf:8} {b.state.upper() if b.actionable else b.state:9} max/mean {b.imbalance:4.2f} "
            f"spread {b.spread_gbps:6.1f} Gb/s  {bars}{collision}  ({b.reason})")


def _thresholds_json(t: EcmpThresholds) -> dict[str, float]:
    return {"imbalance_ratio": t.imbalance_ratio, "hot_util_pct": t.hot_util_pct, "sustain_s": t.sustain_s,
            "min_mean_gbps": t.min_mean_gbps, "collision_target": COLLISION_TARGET}


async def _plans(inventory: Inventory, balances: list[LeafBalance]) -> list[dict[str, object]]:
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        plans = await asyncio.gather(*(plan_leaf(pool, inventory.host(b.leaf), b) for b in balances))
    finally:
        await pool.close()
    return [p.as_json() for p in plans]


@ecmp.command()
@inventory_option
@db_option
@click.option("--leaf", default=None, help="Plan this leaf (default: every flagged leaf).")
@_window_options
@json_option
def plan(inventory_path: Path | None, db_path: Path | None, leaf: str | None, window_s: float, interval_s: float,
         sustain_s: float | None, ratio: float, hot_util_pct: float, as_json: bool) -> None:
    """Remedies for a leaf, least disruptive first, from the configuration the switch runs now."""
    inventory = open_inventory(inventory_path)
    require_leaves(inventory, "fleet ecmp plan")
    thresholds = _thresholds(window_s, sustain_s, ratio, hot_util_pct)
    balances, _ = _balances(inventory, db_path, window_s, interval_s, thresholds, _leaves(inventory, leaf))
    chosen = balances if leaf else [b for b in balances if b.actionable]
    plans = run_async(_plans(inventory, chosen)) if chosen else []
    if as_json:
        print_json({"plans": plans})
        return
    if not plans:
        click.echo("no leaf needs a remedy (none squeezed, in collision or uneven); give --leaf NAME to plan one anyway")
    for balance, p in zip(chosen, plans, strict=True):
        click.echo(status_line(balance))
        click.echo(f"{p['leaf']}: config {p['config']}")
        for r in p["remedies"]:  # type: ignore[attr-defined]
            click.echo(f"  [{r['id']}] {r['title']}")
            for line in r["commands"]:
                click.echo(f"      {line}")


def _show_remedy(leaf: str, remedy: Remedy) -> None:
    click.echo(f"About to change {leaf}: [{remedy.id}] {remedy.title}", err=True)
    for line in remedy.command_lines:
        click.echo(f"  $ {line}", err=True)
    click.echo("Config diff:\n" + "".join(f"  {line}\n" for line in remedy.config_diff.splitlines()), err=True,
               nl=False)
    if remedy.restarts_switchd or remedy.resets_ports:
        click.echo("WARNING: this restarts switchd and resets every port of the switch.", err=True)
    click.echo("Rollback: " + "; ".join(remedy.rollback_lines), err=True)


async def _apply(inventory: Inventory, writer: StoreWriter, reader: StoreReader, leaf: str,
                 remedy_id: str | None, yes: bool, settings: ApplySettings, force_reason: str) -> dict[str, object]:
    host = inventory.host(leaf)
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        balance = leaf_balances(reader, inventory, settings.thresholds, window_s=settings.window_s,
                                leaves=[leaf])[0]
        leaf_plan = await plan_leaf(pool, host, balance)
        if not leaf_plan.snapshot.reachable:
            fail(f"cannot read {leaf}'s configuration: {leaf_plan.snapshot.reason}", ExitCode.FAILED)
        remedies = {r.id: r for r in leaf_plan.remedies}
        remedy = remedies.get(remedy_id) if remedy_id else default_remedy(leaf_plan.remedies)
        if remedy is None:
            fail(f"no remedy {remedy_id!r} for {leaf} (available: {', '.join(remedies) or 'none'})" if remedy_id
                 else f"no switch remedy left for {leaf}", ExitCode.USAGE if remedy_id else ExitCode.FAILED)
        click.echo(f"fleet: {status_line(balance)}", err=True)
        if not balance.actionable and not force_reason:
            fail(f"refused: {leaf} needs no remedy, it is {balance.state} ({balance.reason}); "
                 "give --force REASON to change it anyway (the reason is audited)", ExitCode.FAILED)
        _show_remedy(leaf, remedy)
        if not yes and not click.confirm(f"Apply to {leaf}?", default=False, err=True):
            fail("not applied: not confirmed", ExitCode.FAILED)
        outcome = await guarded_apply(pool, inventory, reader, writer, leaf_plan, remedy, actor=actor(),
                                      settings=settings, read_only=False, force_reason=force_reason,
                                      on_step=lambda step, words: click.echo(f"[{step}] {words}", err=True))
    finally:
        await pool.close()
    return outcome.as_json()


@ecmp.command()
@inventory_option
@db_option
@click.option("--leaf", required=True, help="The canary leaf to change.")
@click.option("--remedy", "remedy_id", default=None, help="Remedy id from `fleet ecmp plan` (default: the least "
              "disruptive switch change).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", "force_reason", default="", metavar="REASON",
              help="Change a leaf that needs no remedy (idle, balanced, no data) anyway; the reason is audited.")
@read_only_option
@click.option("--margin", type=float, default=0.25, show_default=True,
              help="Keep a change that lowers max/mean by this fraction even if above the threshold.")
@click.option("--probe-tolerance", type=float, default=0.25, show_default=True,
              help="The probe's p99 may rise by this fraction (plus 0.5 us) before the change counts as worse.")
@_window_options
@json_option
def apply(inventory_path: Path | None, db_path: Path | None, leaf: str, remedy_id: str | None, yes: bool,
          force_reason: str, read_only_flag: bool, margin: float, probe_tolerance: float, window_s: float,
          interval_s: float, sustain_s: float | None,
          ratio: float, hot_util_pct: float, as_json: bool) -> None:
    """Apply a remedy to one leaf, verify it on fresh counters and a probe, roll back if it did not help."""
    refuse_if_read_only(read_only_flag, f"changes {leaf}'s ECMP configuration")
    inventory = open_inventory(inventory_path)
    require_leaves(inventory, "fleet ecmp apply")
    _leaves(inventory, leaf)
    thresholds = _thresholds(window_s, sustain_s, ratio, hot_util_pct)
    settings = ApplySettings(window_s=window_s, interval_s=interval_s, margin=margin,
                             probe_tolerance=probe_tolerance, thresholds=thresholds)
    path = db_path_or_default(db_path)
    writer = open_writer(path)
    try:
        _fresh_store(inventory, writer, StoreReader(path), window_s, interval_s)
        reader = StoreReader(path)  # a new read connection sees what was just collected
        document = run_async(_apply(inventory, writer, reader, leaf, remedy_id, yes, settings,
                                    force_reason.strip()))
    finally:
        audited = writer.flush(timeout=30)
        store_failing = None if audited else writer.stats().failing or "timed out after 30 s"
        writer.close()
    if as_json:
        print_json(document)
    else:
        click.echo(f"{document['state']}: {document['verdict']}")
    if store_failing is not None:
        fail(f"the audit of this change was not stored in {path}: {store_failing}", ExitCode.NO_DATA)
    if document["state"] != "kept":
        sys.exit(int(ExitCode.FAILED))
