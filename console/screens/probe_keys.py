"""`t` latency, `b` bandwidth, `l` link test, `a` all-reduce, `x` all-to-all: the probe keys the Fleet, Node,
Probes and Jobs screens share.

A screen says which nodes the keys act on (``probe_nodes``: the marked nodes, or the
node under the cursor / shown, or the chosen job's); the keys ask what is missing in a
small dialog and hand the probe to ``app.probes``. ``t``/``b`` offer the node's worst NIC
(the one its health names: where the trouble is), not ``mlx5_0``. Probes start perftest or
nccl-tests on the nodes and put traffic on the tenants' fabric, so they are marked
``changes_machine``: read-only hides and refuses them, and says so when the key is pressed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from fleet.console.actions import changes_machine
from fleet.console.probe_control import ProbeUnavailable
from fleet.console.screens.linktest_dialog import LinktestDialog
from fleet.console.screens.probe_allreduce import AllreduceDialog
from fleet.console.screens.probe_alltoall import AlltoallDialog
from fleet.console.screens.probe_dialog import ProbeDialog
from fleet.fabric.naming import RAILS_PER_NODE, nic_name

if TYPE_CHECKING:
    from textual.screen import Screen

    from fleet.console.app import FleetApp

WHAT = {"lat": "Latency (ib_send_lat)", "bw": "Bandwidth (ib_send_bw)"}


class ProbeKeys:
    """Mixin for a ``FleetScreenBase`` screen; see the module doc."""

    def probe_nodes(self) -> tuple[str, ...]:
        """The nodes a probe key acts on, first the one under the cursor."""
        raise NotImplementedError

    def _fleet(self) -> FleetApp:
        from fleet.console.app import FleetApp

        return cast(FleetApp, cast("Screen[None]", self).app)

    def _all_nodes(self) -> list[str]:
        view = self._fleet().view
        return sorted(r.name for r in view.rows) if view is not None else []

    def _worst_nic(self, node: str) -> str:
        """The NIC the node's health finds a problem with (its worst); ``mlx5_0`` when it finds none (a
        healthy node's "worst" NIC is only its busiest, no reason to probe it first)."""
        view = self._fleet().view
        row = next((r for r in view.rows if r.name == node), None) if view is not None else None
        known = {nic_name(rail) for rail in range(RAILS_PER_NODE)}
        if row is None or row.worst_nic not in known:
            return nic_name(0)
        troubled = any(reason.startswith(f"{row.worst_nic} ") for reason in row.reasons)
        return row.worst_nic if troubled else nic_name(0)

    def _pair_dialog(self, kind: str) -> None:
        app = self._fleet()
        if not app.probes.can_probe:
            app.notify("no inventory: start the console with --inventory to run probes", severity="warning")
            return
        nodes = self.probe_nodes()
        if not nodes:
            app.notify("no node chosen", severity="warning")
            return
        if len(nodes) > 2:
            app.notify(f"{len(nodes)} nodes marked: mark two (space), or one and pick its peer", severity="warning")
            return
        src, peer = nodes[0], nodes[1] if len(nodes) == 2 else ""

        def chosen(answer: tuple[str, str] | None) -> None:
            if answer is not None:
                self._start(lambda: app.probes.start_pair(kind, src, answer[0], answer[1]))

        app.push_screen(ProbeDialog(WHAT[kind], src, self._all_nodes(), peer=peer, nic=self._worst_nic(src)),
                        chosen)

    def _start(self, start: Callable[[], None]) -> None:
        app = self._fleet()
        try:
            start()
        except (ProbeUnavailable, ValueError) as problem:
            app.notify(str(problem), title="probe not started", severity="warning", markup=False)

    @changes_machine("starts ib_send_lat on two nodes and puts traffic on their links")
    def action_latency(self) -> None:
        self._pair_dialog("lat")

    @changes_machine("starts ib_send_bw on two nodes and fills their links")
    def action_bandwidth(self) -> None:
        self._pair_dialog("bw")

    @changes_machine("starts perftest on every pair of nodes on every rail chosen")
    def action_linktest(self) -> None:
        app = self._fleet()
        if not app.probes.can_probe:
            app.notify("no inventory: start the console with --inventory to run probes", severity="warning")
            return
        marked = self.probe_nodes()
        known = self._all_nodes()

        def chosen(answer: tuple[tuple[str, ...], tuple[int, ...]] | None) -> None:
            if answer is not None:
                self._start(lambda: app.probes.start_linktest(answer[0], answer[1]))

        app.push_screen(LinktestDialog(marked if len(marked) >= 2 else known, known), chosen)

    @changes_machine("starts all_reduce_perf on the GPUs of the nodes chosen and loads their NICs")
    def action_allreduce(self) -> None:
        self._collective(AllreduceDialog, lambda nodes: self._fleet().probes.start_allreduce(nodes))

    @changes_machine("starts alltoall_perf on the GPUs of the nodes chosen and loads every rail and spine")
    def action_alltoall(self) -> None:
        self._collective(AlltoallDialog, lambda nodes: self._fleet().probes.start_alltoall(nodes))

    def _collective(self, dialog: type[AllreduceDialog], start: Callable[[tuple[str, ...]], None]) -> None:
        """An nccl-tests collective on the nodes chosen: the dialog shows them, enter starts ``start``."""
        app = self._fleet()
        if not app.probes.can_probe:
            app.notify("no inventory: start the console with --inventory to run probes", severity="warning")
            return
        nodes = self.probe_nodes()
        if not nodes:
            app.notify("no node chosen", severity="warning")
            return

        def chosen(answer: tuple[str, ...] | None) -> None:
            if answer is not None:
                self._start(lambda: start(answer))

        app.push_screen(dialog(nodes, self._all_nodes()), chosen)
