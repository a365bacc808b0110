"""Which console actions change a machine. ``--read-only`` hides and refuses exactly these.

Action names (without ``action_``), as bound in the screens' ``BINDINGS``.
"""

from __future__ import annotations

CHANGES_MACHINE: frozenset[str] = frozenset()
