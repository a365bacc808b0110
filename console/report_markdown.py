"""The Markdown twin of a report (for tickets and wikis): the same tables, no charts, the same SHA-256."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fleet.console.report_interconnect import EP_HEADERS, HEADERS, ep_rows, interconnect_rows
from fleet.fabric.report_model import Report, audit_words
from fleet.fabric.text import clean_text

_SYNTAX = re.compile(r"([\\`*\[\]<>|&])")
"""What Markdown (CommonMark with GitHub's tables) reads as syntax inside a line: escapes, code
spans, emphasis, links and images, raw HTML, entities, table pipes. ``_`` is left alone: inside a
name (``mlx5_0``) it is never emphasis."""


def _text(value: Any) -> str:
    """Machine or criteria text for Markdown: one line of inert text (``clean_text``) with every
    character Markdown would read as syntax backslash-escaped, so ``<script>`` stays text and
    ``[x](url)`` never becomes a link."""
    return _SYNTAX.sub(r"\\\1", clean_text(str(value), one_line=True))


def _cell(value: Any) -> str:
    """A table cell: machine text escaped (``_text``), so it can neither break the table nor form markup."""
    if isinstance(value, float):
        value = f"{value:.4g}"
    return "-" if value is None or value == "" else _text(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    if not rows:
        return ["None.", ""]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _shape(shape: Mapping[str, Any]) -> list[str]:
    rows: list[list[Any]] = [["nodes", shape["nodes"]], ["RDMA NICs", shape["nics"]],
                             ["switches", shape["switches"]], ["rails", ", ".join(str(r) for r in shape["rails"])]]
    units = shape.get("software_units", {})
    rows += [[k, "; ".join(f"{v} ({c} {units.get(k, 'NICs' if k == 'nic_firmware' else 'nodes')})"
                           for v, c in vals.items())] for k, vals in shape["software"].items()]
    rows += [[f"unreachable {n}", r] for n, r in shape.get("unreachable", {}).items()]
    return _table(["", ""], rows)


def _interconnect(title: str, view: Mapping[str, Any] | None) -> list[str]:
    """NVLink beside the network (``fleet.fabric.interconnect``): every figure against its theoretical value."""
    if not view:
        return [f"## {title}", "", "Not measured.", ""]
    out = [f"## {title}", "", *_table(HEADERS, interconnect_rows(view))]
    kernels = ep_rows(view)
    return out + (_table(EP_HEADERS, kernels) if kernels else [])


def _footer(report: Report) -> list[str]:
    data = report.data
    return ["---", f"Generated {_text(data.get('generated', ''))} by {_text(data.get('tool_version', ''))}. "
            f"SHA-256 of the report's canonical data (embedded in the HTML report): `{report.sha256}`", "",
            audit_words(data.get("audit_head")), ""]


def _acceptance(report: Report) -> list[str]:
    d = report.data
    checks = d["checks"]
    passed = sum(1 for c in checks if c["passed"])
    out = [f"# {_text(d['title'])}", "",
           f"Customer: {_text(d.get('customer') or '-')}; measured from {_text(d['measured_from'])}.", "",
           f"**{'ACCEPTED' if d['passed'] else 'NOT ACCEPTED'}**: {passed} of {len(checks)} checks pass.", "",
           "## Cluster", "", *_shape(d["shape"]), "## Criteria and results", ""]
    out += _table(["check", "what was checked (as measured)", "threshold", "evidence", "result"],
                  [[c["id"], c.get("claim") or c["description"], c["threshold_words"], c["summary"],
                    "PASS" if c["passed"] else "FAIL"] for c in checks])
    out += ["The customer's wording of each check:", ""]
    out += [f"- {c['id']}: {c['description']}" for c in checks if c["description"]] + [""]
    for c in checks:
        if c["failures"]:
            out += [f"### {_text(c['id'])}: failing parts", ""]
            out += _table(["part", f"measured {_text(c['unit'])}".strip(), "why"],
                          [[f["part"], f["measured"], f["note"]] for f in c["failures"]])
    out += _interconnect("NVLink beside the network", d.get("interconnect"))
    out += ["## Findings", ""]
    out += _table(["severity", "kind", "part", "next step"],
                  [[f["severity"], f["kind"], " ".join(x for x in (f["node"], f["nic"], f["switch"]) if x),
                    f["next_step"]] for f in d["findings"]])
    out += ["## Configuration (fleet check)", ""]
    section = d.get("configuration") or {}
    if section.get("read"):
        out += _table(["check", "pass", "warn", "fail", "odd ones out"],
                      [[c["title"], c["pass"], c["warn"], c["fail"], ", ".join(c["odd"]) or "-"]
                       for c in section["checks"]])
    else:
        out += ["The suite did not read the configuration.", ""]
    return out + _footer(report)


def _diff(report: Report) -> list[str]:
    d = report.data
    out = [f"# {_text(d['title'])}", "",
           f"before: {_text(d['before']['label'])} ({_text(d['before']['taken'])}); "
           f"after: {_text(d['after']['label'])} ({_text(d['after']['taken'])})", "", "## Regressions (worst first)", ""]
    change_rows = [[c["severity"], c["part"], c["metric"], c["before"], c["after"],
                    f"{c['delta']:+.3g}" if c["delta_pct"] is None else f"{c['delta_pct']:+.1f} %"]
                   for c in d["regressions"]]
    out += _table(["severity", "part", "metric", "before", "after", "change"], change_rows)
    out += ["## Improvements", ""]
    out += _table(["part", "metric", "before", "after"],
                  [[c["part"], c["metric"], c["before"], c["after"]] for c in d["improvements"]])
    out += ["## Parts new, gone, or no longer measured", ""]
    out += _table(["", "parts"], [["new", ", ".join(d["new_parts"])], ["gone", ", ".join(d["gone_parts"])],
                                  ["no longer measured", ", ".join(d["lost_metrics"])]])
    out += ["## Software and cabling changes", ""]
    out += _table(["severity", "what", "before", "after"],
                  [[c["severity"], c["subject"], c["before"], c["after"]] for c in d["software"] + d["cabling"]])
    out += _interconnect("NVLink beside the network: before", d["before"].get("interconnect"))
    out += _interconnect("NVLink beside the network: after", d["after"].get("interconnect"))
    out += ["## Configuration drift (fleet check)", ""]
    out += _table(["severity", "what", "before", "after"],
                  [[c["severity"], c["subject"], c["before"], c["after"]] for c in d.get("configuration", [])])
    return out + _footer(report)


def render_markdown(report: Report) -> str:
    lines = _acceptance(report) if report.kind == "acceptance" else _diff(report)
    return "\n".join(lines)


__all__ = ["render_markdown"]
