"""Write docs/screenshot.svg: the real console on the simulated `incident` fleet.

Starts the simulator in-process (the same servers `fleet sim` runs, on loopback), opens the
console headless on its inventory exactly as `fleet demo` does, and waits until every fault
of the scenario has started and the Fleet screen shows it: every node read, hung and slow
nodes named, rates derived, the faulty nodes coloured, the diagnosis' findings counted. Then
it saves the terminal as SVG. Run it with `make screenshot` (about two and a half minutes for
`incident`, whose last fault starts two minutes in).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.view_model import ConsoleView
from fleet.fabric.health import Health
from fleet.simulator.main import serve
from fleet.simulator.scenario import Scenario, load_scenario

SIZE = (160, 48)
"""Terminal columns and rows: wide enough for every Fleet column, tall enough for 32 nodes."""

READY_TIMEOUT_S = 60.0
SETTLE_S = 20.0
"""Seconds after the last fault starts: the NIC's storm counters escalate after 8 s, and the
console's diagnosis runs every 30 s from its start."""
MIN_FINDINGS = 3


def _shows_the_fleet(view: ConsoleView, nodes: int) -> bool:
    """Every node on screen with its state, rates on the healthy ones, the faults coloured."""
    summary = view.summary
    if not view.snapshot.complete or len(view.rows) < nodes or summary.unknown or summary.connecting:
        return False
    healths = {row.health for row in view.rows}
    rates = sum(1 for row in view.rows if row.health is Health.OK and row.tx_gbps is not None)
    return (Health.DOWN in healths and Health.DEGRADED in healths and rates >= nodes // 2
            and summary.open_findings >= MIN_FINDINGS)


async def _wait_for_view(app: FleetApp, scenario: Scenario, started: float) -> ConsoleView:
    last_fault_s = max((fault.at for fault in scenario.faults), default=0.0)
    due = started + last_fault_s + SETTLE_S

    async def wait() -> ConsoleView:
        while True:
            view = app.view
            if view is not None and time.monotonic() >= due and _shows_the_fleet(view, scenario.fabric.nodes):
                return view
            await app.next_view()

    return await asyncio.wait_for(wait(), last_fault_s + SETTLE_S + 180.0)


async def make_screenshot(out: Path, scenario_name: str) -> None:
    scenario = load_scenario(scenario_name)
    with tempfile.TemporaryDirectory(prefix="fleet-screenshot-") as temp:
        state = Path(temp) / "sim"
        stop, ready = asyncio.Event(), asyncio.Event()
        sim = asyncio.create_task(serve(scenario, state, ready=lambda _line: ready.set(), stop=stop))
        try:
            await asyncio.wait_for(ready.wait(), READY_TIMEOUT_S)
            started = time.monotonic()
            inventory_path = state / "inventory.toml"
            db = Path(temp) / "fleet.db"
            config = Config(db_path=db, inventory_path=inventory_path)
            app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=config.refresh_s),
                           load_inventory(inventory_path))
            async with app.run_test(size=SIZE) as pilot:
                await _wait_for_view(app, scenario, started)
                await pilot.pause()
                out.parent.mkdir(parents=True, exist_ok=True)
                app.save_screenshot(filename=out.name, path=str(out.parent))
        finally:
            stop.set()
            await asyncio.wait_for(sim, 30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/screenshot.svg from the running console.")
    parser.add_argument("--scenario", default="incident", help="built-in scenario name or file")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "screenshot.svg")
    args = parser.parse_args(argv)
    try:
        asyncio.run(make_screenshot(args.out, args.scenario))
    except TimeoutError:
        print("make_screenshot: the Fleet screen did not show the scenario in time", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
