"""Report data: one canonical text per document, its SHA-256, and values JSON cannot hold."""

from __future__ import annotations

import hashlib
import json

from fleet.fabric.report_model import canonical_json, make_report


def test_canonical_text_is_order_free_and_script_safe() -> None:
    a = canonical_json({"b": 1, "a": "</script><b>&"})
    assert a == canonical_json({"a": "</script><b>&", "b": 1})
    assert "<" not in a and ">" not in a and "&" not in a
    assert json.loads(a) == {"a": "</script><b>&", "b": 1}


def test_digest_covers_the_data_and_any_edit_changes_it() -> None:
    report = make_report("acceptance", {"title": "T", "value": 0.95, "loss": float("inf")})
    assert report.data["loss"] == "inf"
    assert report.sha256 == hashlib.sha256(report.canonical.encode()).hexdigest()
    edited = make_report("acceptance", {"title": "T", "value": 0.96, "loss": float("inf")})
    assert edited.sha256 != report.sha256
