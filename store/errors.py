"""Why a history file cannot be used, in one line each: the CLI turns them into exit statuses.

Two families, because the user acts differently: a :class:`HistoryFileError`
means ``--db`` points at the wrong thing (not SQLite, another program's
database, unreadable, written by another fleet version): choose another file.
A :class:`StoreWriteError` means the right file cannot take writes now (disk
full, read-only, moved): free space or fix the mount; what was committed stays
readable.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


class HistoryFileError(RuntimeError):
    """The file at the path is not a fleet history this fleet can use; the message says why."""


class StoreWriteError(RuntimeError):
    """The history cannot be written (disk full, read-only or moved file, I/O error)."""


def write_failure(error: BaseException, path: Path) -> str:
    """One line naming why writing ``path`` failed, from SQLite's error (SQLITE_FULL, _READONLY, _IOERR ...)."""
    text = str(error)
    if "full" in text:
        return f"cannot write {path}: the disk (or its size cap) is full"
    if "readonly" in text or "read-only" in text:
        return f"cannot write {path}: the file is read-only or was moved"
    if "disk I/O error" in text:
        return f"cannot write {path}: disk I/O error"
    if "unable to open" in text:
        return f"cannot write {path}: unable to open the file (its folder is missing, read-only or not ours)"
    return f"cannot write {path}: {text}"


def open_failure(error: sqlite3.Error, path: Path) -> HistoryFileError:
    """A :class:`HistoryFileError` for an SQLite error met while opening ``path`` to read it."""
    text = str(error)
    if "not a database" in text:
        return HistoryFileError(f"{path} is not an SQLite database, so not a fleet history")
    if "unable to open" in text or "authorization denied" in text:
        why = "permission denied" if not os.access(path, os.R_OK) else "its folder is not readable or writable"
        return HistoryFileError(f"cannot open {path} to read it: {why}")
    return HistoryFileError(f"cannot read {path} as a fleet history: {text}")
