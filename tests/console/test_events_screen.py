"""The Events screen helps: host-state flips fold into one line, warnings and up by default, `!` negates a
filter word, and the pane under the table gives the highlighted finding's evidence and next step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from console_waits import NOW, view_where
from textual.widgets import DataTable, Static

from fleet.console.app import FleetApp
from fleet.console.screens.events import EventsScreen, event_matches, fold
from fleet.console.screens.fleet import FleetScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.widgets.fleet_table import FleetTable
from fleet.fabric.diagnosis import finding_event
from fleet.fabric.events import Event, Finding, Severity
from fleet.store.writer import StoreWriter

SIZE = (160, 40)


def flips(host: str, start: float, count: int) -> list[Event]:
    """A switch CLI answering late, then on time, over and over: the collector's state changes."""
    return [Event(start + 5 * k, "host_state", Severity.WARNING if k % 2 == 0 else Severity.INFO,
                  f"{host}: {'ok -> slow' if k % 2 == 0 else 'slow -> ok'}", host=host) for k in range(count)]


STORM = Finding("pfc_storm", Severity.CRITICAL, node="gpu006", nic="mlx5_6", switch="leaf07", port="swp6",
                evidence={"tx_paused_share": 0.97, "rx_discards_in_window": 1200.0},
                next_step="Drain the node and check its receive path.")
STALL = Finding("job_slow", Severity.WARNING, job="101",
                evidence={"gbps_per_node": 4.8, "straggler": "gpu006", "straggler_why": "pfc_storm mlx5_6"},
                next_step="Fix or drain gpu006.")


def test_folding_keeps_the_newest_line_and_counts_the_rest() -> None:
    events = tuple(sorted(flips("leaf03", 100.0, 6), key=lambda e: -e.ts))
    [row] = fold(events)
    assert (row.event.ts, row.repeats, row.oldest_ts) == (125.0, 6, 100.0)
    assert event_matches(events[0], "!kind:link_down leaf03") and not event_matches(events[0], "!kind:host")


async def test_the_events_screen_shows_what_is_wrong_first_and_says_what_to_do(
        make_app: Callable[..., FleetApp], store: tuple[Path, StoreWriter]) -> None:
    writer = store[1]
    for event in (*flips("leaf03", NOW - 60, 10), *flips("leaf04", NOW - 50, 8),
                  Event(NOW - 40, "collect_mode", Severity.INFO, "gpu002: collecting with commands", host="gpu002"),
                  finding_event(STORM, NOW - 30), finding_event(STALL, NOW - 20)):
        writer.put_event(event)
    assert writer.flush(timeout=10)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await view_where(app, lambda v: any(e.kind == "job_slow" for e in v.snapshot.events))
        assert isinstance(app.screen, FleetScreen)
        fleet_table = app.screen.query_one(FleetTable)
        fleet_table.move_cursor(row=list(fleet_table.order).index("gpu006"))
        await pilot.pause()
        app.screen._show_reasons()
        reasons = str(app.screen.query_one("#reasons", Static).render())
        assert "next: pfc storm mlx5_6: Drain the node and check its receive path.  (+1 more)" in reasons
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        table = screen.query_one("#events-table", DataTable)

        def rows() -> list[list[str]]:
            return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]

        kinds = [r[2] for r in rows()]
        assert {"link_down", "job_slow", "pfc_storm"} <= set(kinds[:5]) and "collect_mode" not in kinds  # info hidden
        leaf03 = [r for r in rows() if r[3] == "leaf03"]
        assert len(leaf03) == 1 and "(x5 since" in leaf03[0][5]  # went slow five times: one line
        table.move_cursor(row=1)
        await pilot.pause()
        detail = str(screen.query_one("#event-detail", Static).render())
        assert "straggler=gpu006" in detail and "next: Fix or drain gpu006." in detail
        assert "enter: open gpu006" in detail

        await pilot.press("a")
        await pilot.pause()
        assert "collect_mode" in [r[2] for r in rows()]
        await pilot.press("a", "slash", *"!kind:host_state", "enter")
        await pilot.pause()
        assert {r[2] for r in rows()} == {"job_slow", "pfc_storm", "optics_low", "link_down"}

        table.move_cursor(row=[r[2] for r in rows()].index("pfc_storm"))
        await pilot.pause()
        assert "job_slow" in [r[2] for r in rows()]
        detail = str(screen.query_one("#event-detail", Static).render())
        assert "tx_paused_share=0.97" in detail and "next: Drain the node" in detail
        table.move_cursor(row=[r[2] for r in rows()].index("job_slow"))
        await pilot.press("enter")
        await pilot.pause()
        node = app.screen
        assert isinstance(node, NodeScreen) and node.node_name == "gpu006"  # the job's straggler
        title = str(node.query_one("#node-title", Static).render())
        assert "pfc storm" in title and "next: Drain the node" in title
