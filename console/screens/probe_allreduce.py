"""`a`: which nodes the all-reduce runs on (a Slurm host list, filled in); ``enter`` starts.

Filled with the nodes the key acts on: the marked nodes, or the chosen job's, or the node
under the cursor (one node: NVLink only; several: one ring over their NICs, as
``fleet allreduce --nodes`` runs it). The list is shown before anything starts, because on a
job's nodes the all-reduce shares the GPUs and NICs with the tenant. Dismisses with the nodes
or None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import hostlist
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class AllreduceDialog(ModalScreen[tuple[str, ...] | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="allreduce_dialog.cancel"),
    ]
    DEFAULT_CSS = """
    AllreduceDialog { align: center middle; }
    #allreduce-box { width: 80; height: auto; border: round $primary; background: $surface; padding: 1; }
    #allreduce-error { color: $error; }
    """

    PROMPT: ClassVar[str] = ("All-reduce (nccl-tests all_reduce_perf): one node runs over NVLink, several as one "
                              "ring over their NICs. It shares the GPUs with any job on them. Enter starts.")
    """The dialog's first line: what runs, and that it shares the GPUs."""

    def __init__(self, nodes: Sequence[str], known: Sequence[str]) -> None:
        super().__init__()
        self._default = hostlist.collect_hostlist(list(nodes)) if nodes else ""
        self._known = set(known)

    def compose(self) -> ComposeResult:
        with Vertical(id="allreduce-box"):
            yield Label(self.PROMPT)
            yield Input(value=self._default, placeholder="nodes, e.g. gpu[001-008]", id="allreduce-nodes")
            yield Label("", id="allreduce-error")

    def on_mount(self) -> None:
        self.query_one("#allreduce-nodes", Input).focus()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        error = self.query_one("#allreduce-error", Label)
        text = self.query_one("#allreduce-nodes", Input).value
        try:
            nodes = tuple(dict.fromkeys(hostlist.expand_hostlist(text)))
        except hostlist.BadHostlist as problem:
            error.update(Text(f"not a host list: {problem}"))
            return
        unknown = [n for n in nodes if n not in self._known]
        if unknown:
            error.update(Text(f"not in the fleet: {', '.join(unknown[:5])}"))
            return
        if not nodes:
            error.update("no node given")
            return
        self.dismiss(nodes)

    def action_cancel(self) -> None:
        self.dismiss(None)
