"""`t` / `b` with one node: pick the peer (type to search the fleet's nodes) and the NIC, then start.

With two nodes marked on the Fleet table the peer is filled in; ``enter`` starts.
Dismisses with ``(peer, nic)`` or None. Node names are shown as ``Text``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Select
from textual.widgets.option_list import Option

from fleet.fabric.naming import RAILS_PER_NODE, nic_name

MATCHES_SHOWN = 8


class ProbeDialog(ModalScreen[tuple[str, str] | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="probe_dialog.cancel"),
    ]
    DEFAULT_CSS = """
    ProbeDialog { align: center middle; }
    #probe-box { width: 70; height: auto; border: round $primary; background: $surface; padding: 1; }
    #probe-matches { height: auto; max-height: 10; }
    #probe-error { color: $error; }
    """

    def __init__(self, what: str, src: str, nodes: Sequence[str], peer: str = "", nic: str = "mlx5_0") -> None:
        super().__init__()
        self._what = what
        self._src = src
        self._peers = [n for n in nodes if n != src]
        self._peer = peer
        self._nic = nic

    def compose(self) -> ComposeResult:
        with Vertical(id="probe-box"):
            yield Label(Text(f"{self._what} from {self._src} to which node? (enter starts)"))
            yield Input(value=self._peer, placeholder="peer node, type to search", id="probe-peer")
            yield OptionList(id="probe-matches")
            yield Select([(nic_name(r), nic_name(r)) for r in range(RAILS_PER_NODE)], value=self._nic,
                         allow_blank=False, id="probe-nic")
            yield Label("", id="probe-error")

    def on_mount(self) -> None:
        self._list(self._peer)
        self.query_one("#probe-peer", Input).focus()

    def _matches(self, typed: str) -> list[str]:
        word = typed.strip().lower()
        return [n for n in self._peers if word in n.lower()][:MATCHES_SHOWN]

    def _list(self, typed: str) -> None:
        options = self.query_one("#probe-matches", OptionList)
        options.clear_options()
        options.add_options([Option(Text(n), id=n) for n in self._matches(typed)])

    @on(Input.Changed, "#probe-peer")
    def _typed(self, event: Input.Changed) -> None:
        self._list(event.value)

    @on(OptionList.OptionSelected, "#probe-matches")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self._finish(event.option.id)

    @on(Input.Submitted, "#probe-peer")
    def _submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if typed in self._peers:
            self._finish(typed)
            return
        matches = self._matches(typed)
        if len(matches) == 1:
            self._finish(matches[0])
            return
        self.query_one("#probe-error", Label).update(
            Text(f"no node {typed!r}" if not matches else f"{len(matches)} nodes match {typed!r}: pick one"))

    def _finish(self, peer: str) -> None:
        self.dismiss((peer, str(self.query_one("#probe-nic", Select).value)))

    def action_cancel(self) -> None:
        self.dismiss(None)
