"""Make ``tests/helpers`` importable as ``helpers`` however pytest imports test modules."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).parent))
