"""Marking the console actions that change a machine, so ``--read-only`` hides and refuses them.

Decorate the ``action_*`` method: ``@changes_machine``. Screens and the app ask
``is_machine_changing`` in ``check_action``; returning False there removes the
binding from the footer and the help screen and makes the key do nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_FLAG = "_fleet_changes_machine"


def changes_machine(action: F) -> F:
    """Mark ``action`` (an ``action_*`` method) as one that changes a machine."""
    setattr(action, _FLAG, True)
    return action


def is_machine_changing(owner: object, action: str) -> bool:
    """Whether ``owner.action_<action>`` is marked with ``changes_machine``."""
    method = getattr(owner, f"action_{action}", None)
    return bool(getattr(method, _FLAG, False))
