"""Options and conventions every fleet subcommand shares.

Every command that touches a fleet or a history takes ``--inventory`` and
``--db``; failures exit non-zero with one line naming the reason; ``--json``
prints exactly one JSON document on stdout, with progress and logs on stderr.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import uvloop

from fleet.collectors.inventory import (
    Inventory,
    InventoryError,
    default_inventory_path,
    load_inventory,
)
from fleet.store.paths import default_db_path

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def inventory_option(fn: F) -> F:
    return click.option("--inventory", "inventory_path", type=click.Path(path_type=Path), default=None,
                        help="Inventory TOML (default: $XDG_CONFIG_HOME/fleet/inventory.toml).")(fn)


def db_option(fn: F) -> F:
    return click.option("--db", "db_path", type=click.Path(path_type=Path), default=None,
                        help="History database (default: $XDG_DATA_HOME/fleet/fleet.db).")(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")(fn)


def fail(reason: str) -> NoReturn:
    """Exit 1 with a one-line reason on stderr."""
    click.echo(f"fleet: {reason}", err=True)
    sys.exit(1)


def open_inventory(path: Path | None) -> Inventory:
    chosen = path or default_inventory_path()
    if not chosen.exists():
        fail(f"no inventory at {chosen} (give --inventory FILE, or run `fleet sim` and use its inventory.toml)")
    try:
        return load_inventory(chosen)
    except InventoryError as error:
        fail(str(error))
    except OSError as error:
        fail(f"cannot read inventory {chosen}: {error.strerror}")


def db_path_or_default(path: Path | None) -> Path:
    chosen = path or default_db_path()
    chosen.parent.mkdir(parents=True, exist_ok=True)
    return chosen


def print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=True, default=str))


GC_THRESHOLDS = (20_000, 50, 100)
"""The garbage collector's thresholds for a headless command and for ``fleet sim`` (``gc.set_threshold``).

Every SSH channel leaves a few reference cycles, so a link test, a streaming
collector and the simulated sshds that answer them allocate fast; with the
default (700, 10, 10) the collections, and above all the full ones that stall
the loop for tens of ms, come every few hundred probes (~12% of the
simulator's CPU in a 128-node link test). A young collection every 20,000 net
allocations instead (``python -m benchmarks linktest`` and ``python -m benchmarks collect``,
docs/benchmarks.md)."""


def collect_less_often() -> None:
    """Freeze what start-up made (it lives as long as the process: no collection walks it) and
    set :data:`GC_THRESHOLDS`."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop, for every headless command that talks to the fleet.

    libuv's loop reads a socket and calls back in C: at 1,024 nodes streaming at 1 s,
    the SSH receive of an agent line cost the collector about half the CPU of the
    standard loop's (``python -m benchmarks collect``, docs/benchmarks.md).
    """
    collect_less_often()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
