"""`fleet bench ...`: benchmarks that print JSON. Performance targets live here, not in tests."""

from __future__ import annotations

import click

from fleet.console.cli import LazyGroup

BENCHMARKS: dict[str, str] = {
    "sim": "fleet.console.cli.bench_sim:bench_sim",
    "collect": "fleet.console.cli.bench_collect:bench_collect",
    "store": "fleet.console.cli.bench_store:bench_store",
    "ui": "fleet.console.cli.bench_ui:bench_ui",
    "linktest": "fleet.console.cli.bench_linktest:bench_linktest",
    "export": "fleet.console.cli.bench_export:bench_export",
}


@click.group(cls=LazyGroup, lazy=BENCHMARKS)
def bench() -> None:
    """Measure start-up, collection, storage, UI and probe speed; print JSON."""
