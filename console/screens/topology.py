"""The Topology screen: the fabric as a picture (a row per spine, the leaves as columns, every
uplink a block coloured by utilisation and marked when down, hot, miswired or dropping), the
ECMP balance and node ports of every leaf under it, and below it the crossing under the cursor
drilled into: both ends' ports and counters, then every port of the chosen leaf.

On a fabric too wide for a column per leaf (1,024 nodes: hundreds of leaves) a column is a
leaf group; the table below then lists the group's uplinks to the chosen spine. The uplink
balance is ``fleet.collectors.ecmp_status.leaf_balances`` over the configured window (the
numbers `fleet ecmp status` and the ECMP plan judge), read on the reader thread at most every
``BALANCE_EVERY_S`` (or ten times its own cost, on a big fleet); ``e`` opens the chosen leaf's
ECMP plan."""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from fleet.console.ecmp_ops import LastChange, read_balances_and_changes, roles_inventory
from fleet.console.fabric_picture import HOT_PCT, FabricPicture, State, build_picture
from fleet.console.formatting import count, number
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.ecmp_plan import EcmpPlanScreen, settings_of
from fleet.console.screens.events import SEVERITY_VARIABLE
from fleet.console.topology_model import (
    LinkRow,
    PlannedCable,
    SwitchRow,
    TopologyView,
    balance_bars,
    build_topology,
)
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fabric_map import FabricMap
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.ecmp import LeafBalance

BALANCE_EVERY_S = 5.0
"""Seconds between two balance reads while live: a window of raw series per uplink of every leaf."""

LINK_COLUMNS = (
    Col("switch", "switch", 8, 3), Col("port", "port", 10), Col("peer", "peer", 16), Col("up", "up", 4),
    Col("util", "util %", 6), Col("rx", "rx Gb/s", 7, 2), Col("tx", "tx Gb/s", 7, 2), Col("drops", "drops Δ", 7),
    Col("pfc", "PFC", 7, 4), Col("cable", "cable", 12, 1, flex=True),
)


def plan_of(inventory: object) -> tuple[PlannedCable, ...]:
    rows = getattr(inventory, "cabling", ()) or ()
    return tuple(PlannedCable(r.node, r.nic, r.switch, r.port) for r in rows)


class TopologyScreen(FleetScreenBase):
    TITLE_TEXT = "Topology"
    SCREEN_KEY = "app.topology"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "ecmp_plan", "ECMP plan", id="topology.ecmp_plan"),
        Binding("tab", "focus_next", "Map/links", show=False, id="topology.focus_next"),
    ]
    DEFAULT_CSS = """
    #cabling { height: 1; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #fabric-map { margin: 0 0 1 0; }
    #link-detail { height: auto; max-height: 4; padding: 0 1; background: $surface; }
    #links { height: 1fr; min-height: 4; }
    """

    def compose_body(self) -> ComposeResult:
        yield Static(id="cabling")
        yield FabricMap(id="fabric-map")
        yield Static(id="link-detail")
        yield FitTable(LINK_COLUMNS, id="links")

    def build(self) -> None:
        self._topology: TopologyView | None = None
        self.picture: FabricPicture | None = None
        """The picture drawn now (tests read it)."""
        self.balances: dict[str, LeafBalance] = {}
        """Each leaf's uplink balance (``leaf_balances``), by leaf name."""
        self.last_changes: dict[str, LastChange] = {}
        """Each leaf's newest audited ECMP change, its uplinks before and after."""
        self._balance_read: tuple[float | None, float] | None = None  # (cursor, monotonic time) of the last read
        self._balance_cost_s = 0.0
        self._wanted_switch: str | None = None  # chosen elsewhere (an event) before its cell existed
        self.balances_read = asyncio.Event()
        """Set once the leaves' balances have been read and drawn (tests, snapshots)."""
        self.query_one(FabricMap).focus()

    def show_view(self, view: ConsoleView) -> None:
        self._maybe_read_balances(view)
        topology = build_topology(view.snapshot, plan_of(self.fleet_app.inventory))
        self._topology = topology
        v = self.app.theme_variables
        cabling = self.query_one("#cabling", Static)
        if topology.cable_problems:
            n = len(topology.cable_problems)
            line = Text(f"{n} {'cable differs' if n == 1 else 'cables differ'} from the plan: ",
                        style=v.get("health-down", ""))
            line.append(Text("; ".join(topology.cable_problems[:4])))
            cabling.update(line)
        else:
            cabling.update(Text("every cable where the plan says", style=v.get("health-ok", "")))
        fabric = self.query_one(FabricMap)
        self.picture = build_picture(topology, self.balances, view.snapshot.events, fabric.columns_that_fit())
        fabric.show(self.picture)
        if self._wanted_switch is not None:
            self.select_switch(self._wanted_switch)
        self._show_links()

    def _maybe_read_balances(self, view: ConsoleView) -> None:
        cursor = self.fleet_app.cursor_ts
        last = self._balance_read
        if last is not None and last[0] == cursor:
            if cursor is not None:
                return  # a replayed moment does not change
            if time.monotonic() - last[1] < max(BALANCE_EVERY_S, 10 * self._balance_cost_s):
                return
        self._balance_read = (cursor, time.monotonic())
        inventory = self.fleet_app.inventory or roles_inventory((h.name, h.role) for h in view.snapshot.hosts)
        self.read_balances(inventory, cursor)

    @work(group="topology-balance", exclusive=True, exit_on_error=False)
    async def read_balances(self, inventory: Any, cursor: float | None) -> None:
        settings = settings_of(self)
        started = time.monotonic()
        self.balances, self.last_changes = await self.fleet_app.feed.read(
            lambda reader: read_balances_and_changes(reader, inventory, settings, cursor))
        self._balance_cost_s = time.monotonic() - started
        if self.fleet_app.view is not None and self.is_current:
            self.show_view(self.fleet_app.view)
        self.balances_read.set()

    def select_switch(self, name: str) -> None:
        """Put the cursor on switch ``name`` (now, or once the store's switches are drawn)."""
        self._wanted_switch = name
        picture = self.picture
        if picture is None:
            return
        fabric = self.query_one(FabricMap)
        spines = [s.name for s in picture.spines]
        if name in spines:
            self._wanted_switch = None
            fabric.place(row=spines.index(name))
            return
        for index, column in enumerate(picture.columns):
            if name in column.leaves:
                self._wanted_switch = None
                fabric.place(column=index)
                return

    def selected_spine(self) -> str | None:
        picture = self.picture
        if picture is None or not picture.spines:
            return None
        return picture.spines[self.query_one(FabricMap).cursor[0]].name

    def selected_leaf(self) -> str | None:
        """The leaf of the cursor's column; for a leaf group, the leaf highlighted in the table."""
        picture = self.picture
        if picture is None or not picture.columns:
            return None
        column = picture.columns[self.query_one(FabricMap).cursor[1]]
        if len(column.leaves) == 1:
            return column.leaves[0]
        links = self.query_one("#links", FitTable)
        if links.row_count:
            key = str(links.coordinate_to_cell_key(links.cursor_coordinate).row_key.value)
            leaf = key.split("\t", 1)[0]
            if leaf in column.leaves:
                return leaf
        return None

    def _switch(self, name: str | None) -> SwitchRow | None:
        if self._topology is None or name is None:
            return None
        return next((s for s in self._topology.switches if s.name == name), None)

    def _show_links(self) -> None:
        """The crossing under the cursor: its uplinks at both ends, the spine's open findings,
        the leaf's balance; then the chosen leaf's ports (or the group's uplinks to the spine)."""
        picture = self.picture
        detail = self.query_one("#link-detail", Static)
        table = self.query_one("#links", FitTable)
        if picture is None or not picture.columns or not picture.spines:
            detail.update("no switches in the store")
            table.fill([])
            return
        v = self.app.theme_variables
        row, col = self.query_one(FabricMap).cursor
        spine = picture.spines[row]
        column = picture.columns[col]
        cell = picture.cells.get((row, col))
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(Text(f"{spine.name} ⇄ {column.key}", style="bold"))
        if cell is None:
            text.append(": no uplink cabled between them")
        else:
            util = f"{cell.util_pct:.0f} %" if cell.util_pct is not None else "no data"
            text.append(f": {len(cell.links)} uplink{'s' if len(cell.links) != 1 else ''}, busiest {util}")
            if cell.mark:
                words = [w for n, w in ((cell.down, "down"), (cell.miswired, "miswired"), (cell.hot, "hot"))
                         if n] + (["dropping"] if cell.drops else [])
                text.append(f"; {', '.join(words)}", style=v.get("health-down" if cell.state is State.BAD
                                                                  else "health-degraded", ""))
            if len(cell.links) == 1:
                leaf, link = cell.links[0]
                text.append(Text(f"  │ {leaf} {link.port} → {link.peer_host} {link.peer_port}"))
        for event in picture.findings.get(spine.name, ())[:1] + picture.findings.get(column.key, ())[:1]:
            text.append("\n")
            text.append(f"open finding {event.kind}: ", style=v.get(SEVERITY_VARIABLE[event.severity], ""))
            text.append(Text(event.message))
        balance = column.balance
        if balance is not None and balance.uplinks:
            text.append("\n")
            text.append(Text(f"{column.key} ECMP {balance_bars([u.util_pct for u in balance.uplinks])} "
                             f"max/mean {balance.imbalance:.2f}"))
            if balance.flagged:
                text.append(" FLAGGED", style=f"bold {v.get('health-down', '')}".strip())
            elif balance.warning:
                text.append(f" {balance.state.upper()}", style=f"bold {v.get('health-degraded', '')}".strip())
            if balance.reason:
                text.append(Text(f" ({balance.reason})"))
            text.append("  e: ECMP plan")
            change = self.last_changes.get(column.key)
            if change is not None:
                state = change.verdict.split(" ", 1)[0]
                text.append(f"  last change {time.strftime('%H:%M', time.gmtime(change.ts))} {state}: "
                            f"{balance_bars(change.before_util_pct)} → {balance_bars(change.after_util_pct)}")
        detail.update(text)
        if len(column.leaves) == 1:
            switch = self._switch(column.leaves[0])
            links = [(column.leaves[0], link) for link in switch.links] if switch is not None else []
        else:
            links = list(cell.links) if cell is not None else []
        highlighted = self.fleet_app.highlighted_nodes
        table.fill([self._link_cells(leaf, link, highlighted) for leaf, link in links],
                   [f"{leaf}\t{link.port}" for leaf, link in links])

    def _link_cells(self, leaf: str, link: LinkRow, highlighted: frozenset[str]) -> tuple[Text, ...]:
        v = self.app.theme_variables
        busy = link.util_pct is not None and link.util_pct >= HOT_PCT
        return (
            Text(leaf), Text(link.port),
            Text(f"{link.peer_host} {link.peer_port}".strip(),
                 style=f"bold reverse {v.get('highlight-node', '')}" if link.peer_host in highlighted else ""),
            Text({True: "up", False: "DOWN", None: "-"}[link.oper_up],
                 style=v.get("health-down", "") if link.oper_up is False else ""),
            Text(number(link.util_pct, 0), style=v.get("health-down", "") if link.drops_delta
                 else v.get("health-degraded", "") if busy else ""),
            Text(number(link.rx_gbps)), Text(number(link.tx_gbps)),
            Text(count(link.drops_delta) if link.drops_delta else "", style=v.get("health-down", "")),
            Text(count(link.pfc_pause)),
            Text(link.cable, style=v.get("health-down", "") if link.cable else ""),
        )

    def on_screen_resume(self) -> None:
        self._balance_read = None  # back from a plan or an apply: read the balances now

    def action_ecmp_plan(self) -> None:
        leaf = self.selected_leaf()
        if leaf is None:
            self.notify("choose a leaf (a column; in a leaf group, its row below): ECMP balances a leaf's uplinks",
                        severity="warning")
            return
        self.app.push_screen(EcmpPlanScreen(leaf))

    @on(FabricMap.CellChosen)
    def _cell_moved(self) -> None:
        self._show_links()

    def on_resize(self) -> None:
        if self.fleet_app.view is not None and self.is_current:
            self.show_view(self.fleet_app.view)
