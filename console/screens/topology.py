"""The Topology screen: spines and leaves by group and rail, uplink balance per leaf (ECMP),
each switch's links coloured by utilization and errors, cables that differ from the plan.

The uplink balance is ``fleet.collectors.ecmp_status.leaf_balances`` over the configured window
(the numbers `fleet ecmp status` and the ECMP plan judge), read on the reader thread at most
every ``BALANCE_EVERY_S`` (or ten times its own cost, on a big fleet); ``e`` on a leaf opens its
ECMP plan."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from fleet.console.ecmp_ops import LastChange, read_balances_and_changes, roles_inventory
from fleet.console.formatting import count, number
from fleet.console.screens.base import FleetScreenBase, fixed_columns
from fleet.console.screens.ecmp_plan import EcmpPlanScreen, settings_of
from fleet.console.topology_model import (
    PlannedCable,
    SwitchRow,
    TopologyView,
    balance_bars,
    build_topology,
)
from fleet.console.view_model import ConsoleView
from fleet.fabric.ecmp import LeafBalance

UTIL_BUSY_PCT = 80.0
"""Links above 80% are where the incident study's balanced fabrics sat; above it queues build."""
BALANCE_EVERY_S = 5.0
"""Seconds between two balance reads while live: a window of raw series per uplink of every leaf."""


def plan_of(inventory: object) -> tuple[PlannedCable, ...]:
    rows = getattr(inventory, "cabling", ()) or ()
    return tuple(PlannedCable(r.node, r.nic, r.switch, r.port) for r in rows)


class TopologyScreen(FleetScreenBase):
    TITLE_TEXT = "Topology"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "focus_next", "Switch/links", show=False, id="topology.focus_next"),
        Binding("e", "ecmp_plan", "ECMP plan", id="topology.ecmp_plan"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Static(id="cabling")
        with Horizontal(id="topology-main"):
            yield DataTable(id="switches", cursor_type="row")
            with Vertical(id="switch-side"):
                yield Static(id="switch-title")
                yield DataTable(id="links", cursor_type="row")

    def build(self) -> None:
        self._topology: TopologyView | None = None
        self._switch_rows: tuple[tuple[Text, ...], ...] = ()
        self._link_rows: tuple[tuple[Text, ...], ...] = ()
        self.balances: dict[str, LeafBalance] = {}
        """Each leaf's uplink balance (``leaf_balances``), by leaf name."""
        self.last_changes: dict[str, LastChange] = {}
        """Each leaf's newest audited ECMP change, its uplinks before and after."""
        self._balance_read: tuple[float | None, float] | None = None  # (cursor, monotonic time) of the last read
        self._balance_cost_s = 0.0
        self._wanted_switch: str | None = None  # chosen elsewhere (an event) before its row existed
        fixed_columns(self.query_one("#switches", DataTable), ("switch", 8), ("role", 5), ("grp", 3),
                      ("rail", 4), ("up", 7), ("max util %", 10), ("uplinks", 16), ("max/mean", 12),
                      ("drops Δ", 7), ("cabling", 7))
        fixed_columns(self.query_one("#links", DataTable), ("port", 10), ("peer", 16), ("up", 4),
                      ("util %", 6), ("rx Gb/s", 7), ("tx Gb/s", 7), ("drops Δ", 7), ("PFC", 7),
                      ("cable", 40))
        self.query_one("#switches", DataTable).focus()

    def show_view(self, view: ConsoleView) -> None:
        self._maybe_read_balances(view)
        topology = build_topology(view.snapshot, plan_of(self.fleet_app.inventory))
        self._topology = topology
        v = self.app.theme_variables
        cabling = self.query_one("#cabling", Static)
        if topology.cable_problems:
            n = len(topology.cable_problems)
            line = Text(f" {n} {'cable differs' if n == 1 else 'cables differ'} from the plan: ",
                        style=v.get("health-down", ""))
            line.append(Text("; ".join(topology.cable_problems[:4])))
            cabling.update(line)
        else:
            cabling.update(Text(" every cable where the plan says", style=v.get("health-ok", "")))
        rows = tuple(self._switch_cells(s) for s in topology.switches)
        if rows != self._switch_rows:
            self._switch_rows = rows
            table = self.query_one("#switches", DataTable)
            keep = table.cursor_row
            table.clear()
            for switch, row in zip(topology.switches, rows, strict=True):
                table.add_row(*row, key=switch.name)
            if rows:
                table.move_cursor(row=min(keep, len(rows) - 1))
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

    def _util_style(self, util: float | None, errors: float = 0.0) -> str:
        v = self.app.theme_variables
        if errors:
            return v.get("health-down", "")
        if util is not None and util >= UTIL_BUSY_PCT:
            return v.get("health-degraded", "")
        return ""

    def _balance_cells(self, name: str) -> tuple[Text, Text]:
        """Uplink bars and max/mean (FLAGGED when sustained) of a leaf's measured balance."""
        balance = self.balances.get(name)
        if balance is None or not balance.uplinks:
            return Text(""), Text("")
        v = self.app.theme_variables
        bars = Text(balance_bars([u.util_pct for u in balance.uplinks]))
        if balance.flagged:
            return bars, Text(f"{balance.imbalance:.2f} FLAG", style=f"bold {v.get('health-down', '')}".strip())
        if balance.warning:  # a collision or an uneven group: a warning at any load
            return bars, Text(f"{balance.imbalance:.2f} {balance.state[:4].upper()}",
                              style=f"bold {v.get('health-degraded', '')}".strip())
        return bars, Text(f"{balance.imbalance:.2f}", style=v.get("health-degraded", "") if balance.imbalanced_now
                          else "")

    def _switch_cells(self, s: SwitchRow) -> tuple[Text, ...]:
        v = self.app.theme_variables
        bars, imbalance = self._balance_cells(s.name)
        return (
            Text(s.name), Text(s.role), Text("" if s.group < 0 else str(s.group)),
            Text("" if s.rail < 0 else str(s.rail)), Text(f"{s.ports_up}/{s.ports_total}"),
            Text(number(s.max_util_pct, 0), style=self._util_style(s.max_util_pct)),
            bars, imbalance,
            Text(count(s.drops_delta) if s.drops_delta else "", style=v.get("health-down", "")),
            Text(str(s.cable_problems) if s.cable_problems else "", style=v.get("health-down", "")),
        )

    def select_switch(self, name: str) -> None:
        """Put the cursor on switch ``name`` (now, or once the store's switches are drawn)."""
        self._wanted_switch = name
        names = [s.name for s in self._topology.switches] if self._topology is not None else []
        if name in names:
            self._wanted_switch = None
            self.query_one("#switches", DataTable).move_cursor(row=names.index(name))
            self._show_links()

    def _selected(self) -> SwitchRow | None:
        table = self.query_one("#switches", DataTable)
        if self._topology is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((s for s in self._topology.switches if s.name == key), None)

    def _show_links(self) -> None:
        switch = self._selected()
        title = self.query_one("#switch-title", Static)
        highlighted = self.fleet_app.highlighted_nodes
        if switch is None:
            title.update("no switches in the store")
            rows: tuple[tuple[Text, ...], ...] = ()
        else:
            balance = self.balances.get(switch.name)
            words = f", {balance.reason}" if balance is not None and balance.reason else ""
            line = Text(f" {switch.name}: {switch.ports_up}/{switch.ports_total} ports up"
                        f"{words}{'  (e: ECMP plan)' if switch.role == 'leaf' else ''}")
            change = self.last_changes.get(switch.name)
            if change is not None:
                state = change.verdict.split(" ", 1)[0]
                line.append(f"  last change {time.strftime('%H:%M', time.gmtime(change.ts))} {state}: "
                            f"{balance_bars(change.before_util_pct)} → {balance_bars(change.after_util_pct)}")
            title.update(line)
            v = self.app.theme_variables
            rows = tuple(
                (
                    Text(link.port),
                    Text(f"{link.peer_host} {link.peer_port}".strip(),
                         style=f"bold reverse {v.get('highlight-node', '')}" if link.peer_host in highlighted else ""),
                    Text({True: "up", False: "DOWN", None: "-"}[link.oper_up],
                         style=v.get("health-down", "") if link.oper_up is False else ""),
                    Text(number(link.util_pct, 0), style=self._util_style(link.util_pct, link.drops_delta)),
                    Text(number(link.rx_gbps)), Text(number(link.tx_gbps)),
                    Text(count(link.drops_delta) if link.drops_delta else "", style=v.get("health-down", "")),
                    Text(count(link.pfc_pause)),
                    Text(link.cable, style=v.get("health-down", "") if link.cable else ""),
                )
                for link in switch.links
            )
        if rows != self._link_rows:
            self._link_rows = rows
            table = self.query_one("#links", DataTable)
            table.clear()
            table.add_rows(rows)

    def on_screen_resume(self) -> None:
        self._balance_read = None  # back from a plan or an apply: read the balances now

    def action_ecmp_plan(self) -> None:
        switch = self._selected()
        if switch is None or switch.role != "leaf":
            self.notify("choose a leaf: ECMP balances a leaf's uplinks", severity="warning")
            return
        self.app.push_screen(EcmpPlanScreen(switch.name))

    @on(DataTable.RowHighlighted, "#switches")
    def _switch_moved(self) -> None:
        self._show_links()
