"""The ``fleet`` fixture: a 4-node simulated fleet in-process and a pool reaching it (see simfleet)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from simfleet import Fleet, fabric_text, start_fleet


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    running = await start_fleet(tmp_path, fabric_text())
    try:
        yield running
    finally:
        await running.pool.close()
        await running.server.close()
