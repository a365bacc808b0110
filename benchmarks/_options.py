"""The argument parser every benchmark starts from, and the bounded number types its options use."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path


def parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """``python -m benchmarks NAME``'s parser; its description is the first paragraph of ``doc``.

    ``--json`` is read by ``python -m benchmarks`` itself (one JSON document on stdout, the only
    output there); it is declared here too so that ``--help`` lists it."""
    summary = (doc or "").strip().split("\n\n", 1)[0]
    made = argparse.ArgumentParser(prog=f"python -m benchmarks {name}", description=summary)
    made.add_argument("--json", action="store_true",
                      help="print one JSON document (the only output on stdout)")
    return made


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high``, both included."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not in {low}..{high}")
        return value
    return parse


def float_in(low: float, high: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a number from ``low`` to ``high``, both included."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value:g} is less than {low:g}")
        if value > high:
            raise argparse.ArgumentTypeError(f"{value:g} is more than {high:g}")
        return value
    return parse


def fleet_path(tree: Path) -> Path:
    """The folder of ``tree`` (a checkout) that holds its ``fleet`` package: ``src/``, or the checkout
    itself for trees from before ``src/fleet`` existed. Put first on ``PYTHONPATH``, it makes an
    interpreter import that tree's ``fleet`` rather than the installed one."""
    return tree / "src" if (tree / "src" / "fleet").is_dir() else tree
