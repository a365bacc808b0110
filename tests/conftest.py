"""Make ``tests/helpers`` importable as ``helpers`` however pytest imports test modules; the fixtures that
start real daemons (the system's sshd, Slurm) for a test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).parent))

from helpers.real_slurm import (  # found through the path above
    RealSlurm,
    running_slurm,
    slurm_or_skip,
)
from helpers.real_sshd import RealSshd, running_sshd, sshd_or_skip


@pytest.fixture
def real_sshd(tmp_path: Path) -> Iterator[RealSshd]:
    """The system's sshd on 127.0.0.1 for this test (skipped, saying why, where there is none)."""
    sshd_or_skip()
    with running_sshd(tmp_path / "sshd") as sshd:
        yield sshd


@pytest.fixture
def real_slurm(tmp_path: Path) -> Iterator[RealSlurm]:
    """MUNGE, slurmctld and slurmd on localhost for this test (skipped, saying why, where they cannot run)."""
    slurm_or_skip()
    with running_slurm(tmp_path / "slurm") as slurm:
        yield slurm


@pytest.fixture
def slurm_head(real_slurm: RealSlurm, tmp_path: Path) -> Iterator[tuple[RealSlurm, RealSshd]]:
    """This host as the Slurm head behind the system's sshd, whose sessions find ``real_slurm``."""
    sshd_or_skip()
    with running_sshd(tmp_path / "sshd-head", extra=(f"SetEnv SLURM_CONF={real_slurm.conf}",)) as sshd:
        yield real_slurm, sshd
