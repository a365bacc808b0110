"""JSON from a machine, read with a bound on nesting.

Why not ``json.loads``: on deeply nested input it raises RecursionError (one
host's ``lldpctl -f json`` printing 100,000 ``[`` stopped a whole collection),
and the parsers walk what it returns recursively. orjson reads in C with its
own depth limit, refuses NaN/Infinity literals and numbers that overflow a
double, and gives integers past 64 bits as floats; then the depth of what was
read is checked without recursion. No tool fleet reads nests its JSON more
than a handful of levels (``squeue --json`` is the deepest, about 6).
"""

from __future__ import annotations

from typing import Any

import orjson

from fleet.collectors.parsers.base import ParseError

MAX_JSON_DEPTH = 64
"""Nesting (arrays and objects inside each other) beyond which input is refused as a whole."""

_ORJSON_DEPTH_MESSAGE = "depth limit exceeded"  # orjson's message past its own limit (1024)


def load_json(text: str, what: str) -> Any:
    """The JSON value of ``text``.

    Raises ValueError (a ``json.JSONDecodeError``, with ``lineno``) for text
    that is not JSON, which parsers report as a problem; ParseError (naming
    ``what``, the tool) for JSON nested deeper than ``MAX_JSON_DEPTH``.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if _ORJSON_DEPTH_MESSAGE in str(exc):
            raise ParseError(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
        raise
    if depth_exceeds(value, MAX_JSON_DEPTH):
        raise ParseError(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def depth_exceeds(value: Any, limit: int) -> bool:
    """True when arrays/objects nest more than ``limit`` deep in ``value`` (no recursion)."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False
