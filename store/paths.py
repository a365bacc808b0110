"""Where the history lives when the user does not say."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/fleet/fleet.db``, falling back to ``~/.local/share/fleet/fleet.db``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fleet" / "fleet.db"
