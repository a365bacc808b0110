"""Load the themes in ``themes/*.toml`` into Textual ``Theme`` objects.

Themes are data so that adding one needs no code; every colour the screens use
is a theme variable (``$health-down``), never a literal in TCSS or Python.
"""

from __future__ import annotations

import tomllib
from importlib import resources

from textual.theme import Theme

HEALTH_VARIABLES = ("health-ok", "health-degraded", "health-down", "health-unknown")


def load_themes() -> list[Theme]:
    """Every theme shipped in the ``themes`` package, sorted by name."""
    themes = []
    for entry in sorted(resources.files("fleet.themes").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            variables = data.pop("variables", {})
            missing = [v for v in HEALTH_VARIABLES if v not in variables]
            if missing:
                raise ValueError(f"theme {entry.name} lacks variables {missing}")
            themes.append(Theme(**data, variables=variables))
    return themes


def stylesheet_path() -> str:
    """Path of the shared TCSS, for ``App.CSS_PATH``."""
    return str(resources.files("fleet.themes") / "fleet.tcss")
