"""The confirmation before a drain or a resume: the exact ``scontrol`` command, on which head.

A drain asks for its reason (offered from the node's worst finding that makes it worth draining,
e.g. "link flapping on mlx5_1"); the command shown follows the reason as it is typed. Nothing runs
unless the user confirms (Enter in the reason, ``y`` for a resume, or the button); ``escape``
changes nothing.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from fleet.collectors.slurm_nodes import REASON_CHARS, NodeChange, NodeChangeError, drain, resume


def change_text(change: NodeChange | None, head: str, problem: str = "") -> Text:
    """What the user agrees to, the command exactly as it will be sent (never markup)."""
    if change is None:
        return Text(f"Cannot drain: {problem}")
    text = Text(f"{change.action.capitalize()} {change.node} in Slurm, on {head}:\n\n", style="bold")
    text.append(f"  $ {change.command.text}\n\n")
    if change.action == "drain":
        text.append("No new job will start on it; running jobs finish. Resume it with u once repaired.")
    else:
        text.append("Jobs may start on it again.")
    return text


class ConfirmNodeChangeScreen(ModalScreen[NodeChange | None]):
    DEFAULT_CSS = """
    ConfirmNodeChangeScreen { align: center middle; }
    #node-change-box { width: 100; height: auto; max-height: 90%; border: thick $warning; background: $surface;
                       padding: 1 2; }
    #node-change-text { height: auto; }
    #node-change-reason { margin-top: 1; }
    #node-change-buttons { height: auto; margin-top: 1; }
    #node-change-buttons Button { margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="node_change.no"),
        Binding("y", "confirm", "Confirm", id="node_change.yes"),
    ]

    def __init__(self, action: str, node: str, head: str, reason: str = "") -> None:
        super().__init__()
        self.action_name = action
        self.node = node
        self.head = head
        self.reason = reason

    def _change(self) -> tuple[NodeChange | None, str]:
        try:
            return (drain(self.node, self.reason) if self.action_name == "drain" else resume(self.node)), ""
        except NodeChangeError as error:
            return None, str(error)

    def compose(self) -> ComposeResult:
        change, problem = self._change()
        with Vertical(id="node-change-box"):
            yield Static(change_text(change, self.head, problem), id="node-change-text")
            if self.action_name == "drain":
                yield Input(self.reason, placeholder="why (Slurm keeps it): e.g. link flapping on mlx5_1",
                            max_length=REASON_CHARS, id="node-change-reason")
            with Horizontal(id="node-change-buttons"):
                yield Button("Cancel (escape)", id="node-change-cancel", variant="primary")
                yield Button(Text(f"{self.action_name.capitalize()} {self.node}"), id="node-change-go",
                             variant="warning")

    def on_mount(self) -> None:
        if self.action_name == "drain":
            self.query_one("#node-change-reason", Input).focus()
        else:
            self.query_one("#node-change-cancel", Button).focus()

    @on(Input.Changed, "#node-change-reason")
    def _reason_changed(self, event: Input.Changed) -> None:
        self.reason = event.value
        change, problem = self._change()
        self.query_one("#node-change-text", Static).update(change_text(change, self.head, problem))

    @on(Input.Submitted, "#node-change-reason")
    @on(Button.Pressed, "#node-change-go")
    def action_confirm(self) -> None:
        change, problem = self._change()
        if change is None:
            self.notify(problem, severity="warning", markup=False)
            return
        self.dismiss(change)

    @on(Button.Pressed, "#node-change-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
