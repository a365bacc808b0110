"""Screenshot of the Probes screen (pair matrix, suspects, history) on a stored link test, compared with the
stored SVG so a visual change is seen. Regenerate: ``pytest tests/console/test_probes_snapshot.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console_waits import view_where
from fleetstore import T0
from textual.pilot import Pilot

from fleet.collectors.probes.linktest import LinktestReport, LinktestSpec, PairOutcome
from fleet.console.app import FleetApp
from fleet.console.screens.probes import ProbesScreen
from fleet.fabric.localize import Suspect
from fleet.fabric.records import ProbeRecord
from fleet.store.writer import StoreWriter

SIZE = (160, 44)
NODES = ("gpu001", "gpu002", "gpu003", "gpu004")


def stored_link_test(writer: StoreWriter) -> None:
    """A one-rail link test where every pair through gpu003 is slow, and one lat probe before it."""
    outcomes = tuple(
        PairOutcome(a, b, 0, None, True, 9.5 if "gpu003" in (a, b) else 2.1 + 0.1 * i, None, 1.8)
        for i, (a, b) in enumerate((a, b) for n, a in enumerate(NODES) for b in NODES[n + 1:]))
    bad = tuple(o for o in outcomes if "gpu003" in (o.src, o.dst))
    report = LinktestReport(
        run_id="linktest-snapshot", spec=LinktestSpec(NODES, rails=(0,)), seconds=2.5, rounds=3, unreachable={},
        nic_checks=(), outcomes=outcomes, references_usec={(0, "leaf"): 2.3}, bad=bad,
        suspects=(Suspect("nic", "gpu003:mlx5_0", node="gpu003", nic="mlx5_0", bad=3, total=3, explains=3,
                          reason="every pair through gpu003:mlx5_0 is slow, others are not"),))
    writer.put_probe(ProbeRecord(ts=T0 - 120, kind="lat", src="gpu001", dst="gpu002", src_nic="mlx5_0",
                                 dst_nic="mlx5_0", ok=True, params={"test": "ib_send_lat"},
                                 result={"t_typical_usec": 2.05, "p99_usec": 2.6}))
    writer.put_probe(report.summary_record(T0 - 60))
    assert writer.flush(timeout=10)


def test_probes_screen(snap_compare: Any, make_app: Callable[..., FleetApp],
                       store: tuple[Path, StoreWriter]) -> None:
    stored_link_test(store[1])

    async def open_probes(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, FleetApp)
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProbesScreen)

        async def loaded() -> None:
            while screen.linktest is None:
                await app.next_view()

        await asyncio.wait_for(loaded(), 10)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_probes)
