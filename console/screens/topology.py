"""The Topology screen: spines and leaves by group and rail, uplink balance per leaf (ECMP),
each switch's links coloured by utilization and errors, cables that differ from the plan."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from console.formatting import count, number
from console.screens.base import FleetScreenBase, fixed_columns
from console.topology_model import (
    PlannedCable,
    SwitchRow,
    TopologyView,
    balance_bars,
    build_topology,
)
from console.view_model import ConsoleView

UTIL_BUSY_PCT = 80.0
"""Links above 80% are where the incident study's balanced fabrics sat; above it queues build."""
IMBALANCE_WARN_PCT = 30.0
"""Uplinks of one leaf further apart than this are an ECMP hash collision, not noise."""


def plan_of(inventory: object) -> tuple[PlannedCable, ...]:
    rows = getattr(inventory, "cabling", ()) or ()
    return tuple(PlannedCable(r.node, r.nic, r.switch, r.port) for r in rows)


class TopologyScreen(FleetScreenBase):
    TITLE_TEXT = "Topology"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "focus_next", "Switch/links", show=False, id="topology.focus_next"),
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
        fixed_columns(self.query_one("#switches", DataTable), ("switch", 8), ("role", 5), ("grp", 3),
                      ("rail", 4), ("up", 7), ("max util %", 10), ("uplinks", 16), ("spread %", 8),
                      ("drops Δ", 7), ("cabling", 7))
        fixed_columns(self.query_one("#links", DataTable), ("port", 10), ("peer", 16), ("up", 4),
                      ("util %", 6), ("rx Gb/s", 7), ("tx Gb/s", 7), ("drops Δ", 7), ("PFC", 7),
                      ("cable", 40))
        self.query_one("#switches", DataTable).focus()

    def show_view(self, view: ConsoleView) -> None:
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
        self._show_links()

    def _util_style(self, util: float | None, errors: float = 0.0) -> str:
        v = self.app.theme_variables
        if errors:
            return v.get("health-down", "")
        if util is not None and util >= UTIL_BUSY_PCT:
            return v.get("health-degraded", "")
        return ""

    def _switch_cells(self, s: SwitchRow) -> tuple[Text, ...]:
        v = self.app.theme_variables
        spread = s.imbalance_pct
        return (
            Text(s.name), Text(s.role), Text("" if s.group < 0 else str(s.group)),
            Text("" if s.rail < 0 else str(s.rail)), Text(f"{s.ports_up}/{s.ports_total}"),
            Text(number(s.max_util_pct, 0), style=self._util_style(s.max_util_pct)),
            Text(balance_bars(s.uplink_utils)),
            Text(number(spread, 0), style=v.get("health-degraded", "")
                 if spread is not None and spread >= IMBALANCE_WARN_PCT else ""),
            Text(count(s.drops_delta) if s.drops_delta else "", style=v.get("health-down", "")),
            Text(str(s.cable_problems) if s.cable_problems else "", style=v.get("health-down", "")),
        )

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
            title.update(Text(f" {switch.name}: {switch.ports_up}/{switch.ports_total} ports up, "
                              f"uplinks {balance_bars(switch.uplink_utils) or '-'}"))
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

    @on(DataTable.RowHighlighted, "#switches")
    def _switch_moved(self) -> None:
        self._show_links()
