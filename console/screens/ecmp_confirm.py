"""The confirmation before an ECMP change: the exact commands, what they restart, how they are undone.

Nothing runs unless the user presses ``y`` (or the Apply button) here; the
default (``escape``, ``n``, Enter on Cancel) changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from fleet.fabric.ecmp_plan import Remedy


def confirmation_text(leaf: str, remedy: Remedy, theme_variables: Mapping[str, str]) -> Text:
    """What the user agrees to, every command exactly as it will be sent (never markup)."""
    danger = theme_variables.get("health-down", "")
    text = Text(f"Change {leaf}: [{remedy.id}] {remedy.title}\n\n", style="bold")
    text.append("Commands, run in this order on the switch:\n")
    for line in remedy.command_lines:
        text.append(f"  $ {line}\n")
    if remedy.restarts_switchd or remedy.resets_ports:
        text.append("\nRESTARTS switchd: every port of the switch resets and traffic through it stops.\n",
                    style=f"bold {danger}".strip())
    else:
        text.append("\nRe-hashes in place: no daemon restart, no port reset.\n")
    text.append("\nConfig diff:\n")
    for line in remedy.config_diff.splitlines():
        text.append(f"  {line}\n")
    text.append("\nAfterwards: fresh counters and a probe across the leaf; rolled back automatically with\n")
    for line in remedy.rollback_lines:
        text.append(f"  $ {line}\n")
    text.append("unless the imbalance falls and no probe gets worse.")
    return text


class ConfirmApplyScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmApplyScreen { align: center middle; }
    #confirm-box { width: 110; height: auto; max-height: 90%; border: thick $error; background: $surface;
                   padding: 1 2; }
    #confirm-text { height: auto; }
    #confirm-buttons { height: auto; margin-top: 1; }
    #confirm-buttons Button { margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Apply", id="ecmp_confirm.yes"),
        Binding("escape,n", "cancel", "Cancel", id="ecmp_confirm.no"),
    ]

    def __init__(self, leaf: str, remedy: Remedy) -> None:
        super().__init__()
        self.leaf = leaf
        self.remedy = remedy

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(confirmation_text(self.leaf, self.remedy, self.app.theme_variables), id="confirm-text")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel (n)", id="confirm-cancel", variant="primary")
                yield Button(Text(f"Apply to {self.leaf} (y)"), id="confirm-apply", variant="error")

    def on_mount(self) -> None:
        self.query_one("#confirm-cancel", Button).focus()

    @on(Button.Pressed, "#confirm-apply")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)
