"""`l`: which nodes (a Slurm host list) and which rails the link test covers; ``enter`` starts.

Defaults: the nodes marked on the Fleet table (two or more), else every node
shown; every rail. Dismisses with ``(nodes, rails)`` or None.
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

from fleet.fabric.naming import RAILS_PER_NODE


def parse_rails(text: str) -> tuple[int, ...]:
    """``0-7`` / ``0,3`` -> rails; ValueError in words when it is not a rail list."""
    try:
        rails = tuple(int(r) for r in hostlist.expand_hostlist(f"[{text.strip()}]"))
    except (hostlist.BadHostlist, ValueError) as error:
        raise ValueError(f"bad rail list {text!r}: use e.g. 0-7 or 0,3") from error
    if not rails or any(not 0 <= r < RAILS_PER_NODE for r in rails):
        raise ValueError(f"rails are 0 to {RAILS_PER_NODE - 1}, not {text!r}")
    return rails


class LinktestDialog(ModalScreen[tuple[tuple[str, ...], tuple[int, ...]] | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="linktest_dialog.cancel"),
    ]
    DEFAULT_CSS = """
    LinktestDialog { align: center middle; }
    #linktest-box { width: 80; height: auto; border: round $primary; background: $surface; padding: 1; }
    #linktest-error { color: $error; }
    """

    def __init__(self, nodes: Sequence[str], known: Sequence[str]) -> None:
        super().__init__()
        self._default = hostlist.collect_hostlist(list(nodes)) if nodes else ""
        self._known = set(known)

    def compose(self) -> ComposeResult:
        with Vertical(id="linktest-box"):
            yield Label("Link test (full mesh, every pair on every rail given). Enter starts.")
            yield Input(value=self._default, placeholder="nodes, e.g. gpu[001-064]", id="linktest-nodes")
            yield Input(value=f"0-{RAILS_PER_NODE - 1}", placeholder="rails, e.g. 0-7 or 0,3", id="linktest-rails")
            yield Label("", id="linktest-error")

    def on_mount(self) -> None:
        self.query_one("#linktest-nodes", Input).focus()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        error = self.query_one("#linktest-error", Label)
        text = self.query_one("#linktest-nodes", Input).value
        try:
            nodes = tuple(hostlist.expand_hostlist(text))
            rails = parse_rails(self.query_one("#linktest-rails", Input).value)
        except (hostlist.BadHostlist, ValueError) as problem:
            error.update(Text(str(problem)))
            return
        unknown = [n for n in nodes if n not in self._known]
        if unknown:
            error.update(Text(f"not in the fleet: {', '.join(unknown[:5])}"))
            return
        if len(nodes) < 2:
            error.update("a link test needs at least two nodes")
            return
        self.dismiss((nodes, rails))

    def action_cancel(self) -> None:
        self.dismiss(None)
