"""Marking the console actions that put traffic on the fabric or change a machine, so ``--read-only``
hides and refuses them, and says why when their key is pressed.

Decorate the ``action_*`` method with ``@changes_machine("what it does to the fleet")``. Screens and
the app ask ``is_machine_changing`` in ``check_action``; returning False there removes the binding
from the footer and the help screen, and the key reaches the screen as a plain key press instead:
``refusal`` finds the refused binding behind it and words the reason the screen shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from textual.screen import Screen

F = TypeVar("F", bound=Callable[..., Any])

_FLAG = "_fleet_changes_machine"

READ_ONLY_RULE = "read-only mode sends nothing and changes nothing"


def changes_machine(what: str) -> Callable[[F], F]:
    """Mark an ``action_*`` method as one that puts traffic on the fabric or changes a machine;
    ``what`` says what it does, for the refusal (``"starts ib_send_lat on two nodes"``)."""

    def mark(action: F) -> F:
        setattr(action, _FLAG, what)
        return action

    return mark


def machine_change(owner: object, action: str) -> str | None:
    """What ``owner.action_<action>`` does to the fleet when it is marked, else None."""
    method = getattr(owner, f"action_{action}", None)
    what = getattr(method, _FLAG, None)
    return what if isinstance(what, str) else None


def is_machine_changing(owner: object, action: str) -> bool:
    """Whether ``owner.action_<action>`` is marked with ``changes_machine``."""
    return machine_change(owner, action) is not None


def refusal(screen: Screen[Any], key: str) -> str | None:
    """Why the key ``key`` does nothing on ``screen`` in read-only mode, or None when no refused action
    is bound to it there: ``"Latency (t) starts ... : refused, read-only mode sends nothing ..."``.

    Looks through the screen's binding chain (the focused widget up to the app, with the user's
    keymap applied), the same bindings Textual itself consults for the key.
    """
    for namespace, bindings in screen._binding_chain:  # Textual's own view of the keys in force
        for binding in bindings.key_to_bindings.get(key, ()):
            target: object = namespace
            name = binding.action.split("(", 1)[0]
            if name.startswith("app."):
                target, name = screen.app, name.removeprefix("app.")
            elif name.startswith("screen."):
                target, name = screen, name.removeprefix("screen.")
            what = machine_change(target, name)
            if what is not None:
                return f"{binding.description} ({binding.key_display or key}) {what}: refused, {READ_ONLY_RULE}"
    return None


__all__ = ["READ_ONLY_RULE", "changes_machine", "is_machine_changing", "machine_change", "refusal"]
