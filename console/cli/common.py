"""Options and conventions every fleet subcommand shares.

Every command that touches a fleet or a history takes ``--inventory`` and
``--db``; failures exit with a status from :class:`~fleet.console.cli.exit_codes.ExitCode`
(docs/exit-codes.md) and one line naming the reason; ``--json`` prints exactly
one JSON document on stdout, with progress and logs on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sys
import urllib.parse
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import uvloop

from fleet.collectors.inventory import (
    Inventory,
    InventoryError,
    default_inventory_path,
    load_inventory,
)
from fleet.collectors.shard import Shard, parse_shard, shard_inventory
from fleet.console.cli.exit_codes import ExitCode
from fleet.store.errors import HistoryFileError, StoreWriteError
from fleet.store.paths import default_db_path

if TYPE_CHECKING:  # imported when used: numpy and the store's modules are not needed to print help
    from fleet.store.reader import StoreReader
    from fleet.store.writer import StoreWriter

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


def alertmanager_option(fn: F) -> F:
    """``--alertmanager URL``: post the findings of what is collected to that Alertmanager."""
    return click.option("--alertmanager", "alertmanager", default=None, metavar="URL", callback=_parse_http_url,
                        help="Judge what is collected and post the findings to this Alertmanager "
                             "(http://HOST:9093) while they are open; resolved when they close.")(fn)


def _parse_http_url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise click.BadParameter(f"{value!r}: expected http://HOST:PORT or https://HOST:PORT")
    return value.rstrip("/")


def shard_option(fn: F) -> F:
    """``--shard K/N``: collect only the hosts of shard K of N (``fleet.collectors.shard``)."""
    return click.option("--shard", "shard", default=None, metavar="K/N", callback=_parse_shard,
                        help="Collect only shard K of N: the hosts that N collectors sharing this inventory "
                             "leave to this one (docs/scale-out.md).")(fn)


def _parse_shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Shard | None:
    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def sharded(inventory: Inventory, shard: Shard | None) -> Inventory:
    """The hosts ``shard`` collects (all of them without one); exit 2 when the shard is left empty."""
    if shard is None:
        return inventory
    mine = shard_inventory(inventory, shard)
    if not mine.hosts:
        fail(f"shard {shard} of {inventory.path} holds no host ({len(inventory.hosts)} hosts in all): "
             "use fewer shards", ExitCode.USAGE)
    return mine


def fail(reason: str, code: ExitCode) -> NoReturn:
    """Exit with ``code`` and ``reason`` as one line on stderr."""
    click.echo(f"fleet: {' '.join(reason.splitlines())}", err=True)
    sys.exit(int(code))


def interrupted(words: str = "interrupted") -> NoReturn:
    """Ctrl-C: say what was cleaned up, exit 130."""
    click.echo(f"fleet: {words}", err=True)
    sys.exit(int(ExitCode.INTERRUPTED))


def open_inventory(path: Path | None) -> Inventory:
    chosen = path or default_inventory_path()
    if not chosen.exists():
        fail(f"no inventory at {chosen} (give --inventory FILE, or run `fleet sim` and use its inventory.toml)",
             ExitCode.USAGE)
    try:
        return load_inventory(chosen)
    except InventoryError as error:
        fail(str(error), ExitCode.USAGE)
    except OSError as error:
        fail(f"cannot read inventory {chosen}: {error.strerror}", ExitCode.USAGE)


def require_leaves(inventory: Inventory, what: str) -> None:
    """Stop at once, with exit 2, when the inventory names no leaf switch (``what`` needs one)."""
    if not inventory.by_role("leaf"):
        found = f"only spines ({len(inventory.switches)})" if inventory.switches else "no switches"
        fail(f"{inventory.path} names {found}: {what} needs at least one leaf ([[switches]] role = \"leaf\")",
             ExitCode.USAGE)


def db_path_or_default(path: Path | None) -> Path:
    chosen = path or default_db_path()
    try:
        chosen.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        fail(f"cannot create the folder of {chosen}: {error.strerror or error}", ExitCode.NO_DATA)
    return chosen


def open_writer(path: Path) -> StoreWriter:
    """The started store writer of the history at ``path``; one line and exit 2 when the file is not a
    fleet history, exit 3 when it cannot be written."""
    from fleet.store.writer import StoreWriter

    with history_errors():
        return StoreWriter(path).start()


@contextlib.contextmanager
def history_errors() -> Iterator[None]:
    """Turn the store's opening errors into one line and an exit status: no file 3, a file that is
    not a fleet history 2, a history that cannot be written 3."""
    try:
        yield
    except FileNotFoundError as error:
        fail(f"{error.args[0] if error.args else error} (run `fleet collect`, or give --db FILE)", ExitCode.NO_DATA)
    except HistoryFileError as error:
        fail(str(error), ExitCode.USAGE)
    except StoreWriteError as error:
        fail(str(error), ExitCode.NO_DATA)


def open_reader(path: Path | None) -> StoreReader:
    """A reader of the history at ``path`` (default: the user's); one line and exit 3 when there is
    no file, exit 2 when the file is not a fleet history this fleet can read."""
    from fleet.store.reader import StoreReader

    with history_errors():
        return StoreReader(path or default_db_path())


def print_json(document: Any) -> None:
    click.echo(json.dumps(document, indent=2, sort_keys=True, default=str))


GC_THRESHOLDS = (20_000, 50, 100)
"""The garbage collector's thresholds for a headless command and for ``fleet sim`` (``gc.set_threshold``).

Every SSH channel leaves a few reference cycles, so a link test, a streaming
collector and the simulated sshds that answer them allocate fast; with the
default (700, 10, 10) the collections, and above all the full ones that stall
the loop for tens of ms, come every few hundred probes (~12% of the
simulator's CPU in a 128-node link test). A young collection every 20,000 net
allocations instead (measured with ``python -m benchmarks linktest`` and
``python -m benchmarks collect``)."""


def collect_less_often() -> None:
    """Freeze what start-up made (it lives as long as the process: no collection walks it) and
    set :data:`GC_THRESHOLDS`."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop, for every headless command that talks to the fleet.

    libuv's loop reads a socket and calls back in C: at 1,024 nodes streaming at 1 s,
    the SSH receive of an agent line cost the collector about half the CPU of the
    standard loop's (``python -m benchmarks collect``).
    """
    collect_less_often()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
