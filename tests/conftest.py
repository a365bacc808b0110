"""Make ``tests/helpers`` importable as ``helpers`` however pytest imports test modules; the real sshd fixture."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).parent))

from helpers.real_sshd import RealSshd, running_sshd, sshd_or_skip  # found through the path above


@pytest.fixture
def real_sshd(tmp_path: Path) -> Iterator[RealSshd]:
    """The system's sshd on 127.0.0.1 for this test (skipped, saying why, where there is none)."""
    sshd_or_skip()
    with running_sshd(tmp_path / "sshd") as sshd:
        yield sshd
