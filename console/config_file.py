"""Changes the console writes back into the user's config file: the Fleet columns chosen with `c`.

Only the one top-level key is rewritten (or added above the first table); every other
line, comment and table of the file stays as the user wrote it. The result is parsed
before it replaces the file, and replaced in one rename, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

_KEY_LINE = re.compile(r"^\s*fleet_columns\s*=")
_TABLE_LINE = re.compile(r"^\s*\[")


def save_fleet_columns(path: Path, keys: Sequence[str]) -> None:
    """Set ``fleet_columns = [...]`` in the TOML file at ``path`` (made if missing)."""
    line = "fleet_columns = [" + ", ".join(f'"{key}"' for key in keys) + "]\n"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True) if path.exists() else []
    first_table = next((i for i, text in enumerate(lines) if _TABLE_LINE.match(text)), len(lines))
    existing = next((i for i, text in enumerate(lines[:first_table]) if _KEY_LINE.match(text)), None)
    if existing is not None:
        lines[existing] = line
    else:
        if first_table and not lines[first_table - 1].endswith("\n"):
            lines[first_table - 1] += "\n"
        lines.insert(first_table, line)
    text = "".join(lines)
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path} would not parse after the change: {error}") from error
    if parsed.get("fleet_columns") != list(keys):
        raise ValueError(f"{path}: fleet_columns could not be set (a multi-line value?)")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
