"""Real disks that cannot take writes, for the tests of a store that must say so.

``small_filesystem``: a tmpfs of a few MiB (root only: ``mount -t tmpfs``), the
same SQLITE_FULL a full disk gives. ``read_only_file``: chmod 0444 for an
ordinary user; root ignores modes, so for root the immutable attribute
(``chattr +i``). Each skips the test, saying why, where the machine does not allow it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_filesystem(folder: Path, size: str = "3m") -> Iterator[Path]:
    """``folder`` as the mount point of a tmpfs of ``size`` bytes (``mount``'s suffixes), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
                             capture_output=True, text=True, timeout=30, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=False)


def set_read_only(path: Path, read_only: bool) -> None:
    """Make ``path`` read-only (or writable again) for whoever runs the tests."""
    if os.geteuid() != 0:
        path.chmod(0o444 if read_only else 0o644)
        return
    done = subprocess.run(["chattr", "+i" if read_only else "-i", str(path)],
                          capture_output=True, text=True, timeout=10, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot make a file read-only as root here: {done.stderr.strip()}")


@contextlib.contextmanager
def read_only_file(path: Path) -> Iterator[Path]:
    """``path`` read-only while the block runs, writable again after (so tmp_path can be removed)."""
    set_read_only(path, True)
    try:
        yield path
    finally:
        set_read_only(path, False)
