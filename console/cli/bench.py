"""`fleet bench ...`: benchmarks that print JSON. Performance targets live here, not in tests."""

from __future__ import annotations

import click

from console.cli import LazyGroup

BENCHMARKS: dict[str, str] = {
    "sim": "console.cli.bench_sim:bench_sim",
    "collect": "console.cli.bench_collect:bench_collect",
    "store": "console.cli.bench_store:bench_store",
    "ui": "console.cli.bench_ui:bench_ui",
    "linktest": "console.cli.bench_linktest:bench_linktest",
    "export": "console.cli.bench_export:bench_export",
}


@click.group(cls=LazyGroup, lazy=BENCHMARKS)
def bench() -> None:
    """Measure start-up, collection, storage, UI and probe speed; print JSON."""
