"""`fleet console`: open the Textual console on the store, collecting live when given an inventory."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from fleet.collectors.inventory import Inventory
    from fleet.console.app import FleetApp
    from fleet.console.config import Config


@click.command()
@click.option("--inventory", type=click.Path(dir_okay=False, path_type=Path),
              help="Inventory TOML: collect from these hosts while the console runs.")
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path),
              help="Store file (default: the store's XDG data path).")
@click.option("--read-only", "read_only", is_flag=True, default=None,
              help="Hide and refuse every action that changes a machine.")
@click.option("--theme", help="fleet-dark (default), fleet-light or fleet-high-contrast.")
@click.option("--at", "at", metavar="TIMESTAMP",
              help="Replay this moment: 2026-11-29T03:00Z, -15m, or unix seconds.")
@click.option("--refresh", "refresh_s", type=float, help="Seconds between redraws (default 1).")
@click.option("--history", "history", metavar="URL",
              help="Read the fleet from this Prometheus (http://HOST:9090), which scrapes the shards' `fleet export`; "
                   "--db then keeps only this console's probes, actions and audit (docs/scale-out.md).")
@click.option("--alertmanager", "alertmanager", metavar="URL",
              help="With --history: the open findings are the alerts active in this Alertmanager.")
def console(inventory: Path | None, db: Path | None, read_only: bool | None, theme: str | None,
            at: str | None, refresh_s: float | None, history: str | None, alertmanager: str | None) -> None:
    """Open the fleet console (flags > FLEET_* env > $XDG_CONFIG_HOME/fleet/config.toml).

    With --history the console collects nothing: the shards do (`fleet export --collect --shard K/N`);
    --inventory then only lets it run probes and actions.
    """
    from fleet.console.config import ConfigError, load_config
    from fleet.console.theming import load_themes

    try:
        config = load_config(
            {"db": db, "inventory": inventory, "read_only": read_only, "theme": theme, "at": at,
             "refresh_s": refresh_s, "history": history, "alertmanager": alertmanager},
            os.environ, time.time(),
        )
    except ConfigError as error:
        raise click.UsageError(str(error)) from error
    names = [t.name for t in load_themes()]
    if config.theme not in names:
        raise click.UsageError(f"unknown theme {config.theme!r}; choose one of {', '.join(names)}")
    loaded = None
    if config.inventory_path is not None:
        from fleet.collectors.inventory import InventoryError, load_inventory

        try:
            loaded = load_inventory(config.inventory_path)
        except (InventoryError, OSError) as error:
            raise click.UsageError(f"inventory: {error}") from error
    elif not config.db_path.exists() and config.history_url is None:
        raise click.UsageError(
            f"no store at {config.db_path}: give --db, --inventory to collect into it, or --history URL")
    if config.db_path.exists():  # one line now, not a traceback inside the app, for a file that is not ours
        from fleet.store.errors import HistoryFileError
        from fleet.store.schema import connect_history

        try:
            connect_history(config.db_path, older_ok=True, empty_ok=loaded is not None).close()
        except HistoryFileError as error:
            raise click.UsageError(str(error)) from error
    config.db_path.parent.mkdir(parents=True, exist_ok=True)
    make_app(config, loaded).run()


def make_app(config: Config, inventory: Inventory | None = None) -> FleetApp:
    """The console for ``config``; with ``inventory`` (and no ``--at``) it collects live into
    ``config.db_path``. ``fleet demo`` calls this too."""
    from fleet.console.app import FleetApp
    from fleet.console.feed import Feed, open_store_loader

    history = config.history_url
    if history is not None:
        from fleet.console.remote_history import open_remote_loader

        alertmanager = config.alertmanager_url
        feed = Feed(lambda: open_remote_loader(history, config.db_path, alertmanager), refresh_s=config.refresh_s)
    else:
        feed = Feed(lambda: open_store_loader(config.db_path), refresh_s=config.refresh_s)
    return FleetApp(config, feed, inventory)
