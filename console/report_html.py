"""One self-contained HTML file per report: inline CSS, inline SVG, no script, no fetch.

The report's canonical data (``fleet.fabric.report_model``) is embedded verbatim in
``<script type="application/json" id="report-data">`` (data, never run), and
its SHA-256 printed in the footer: recompute it with
``embedded_data(html)`` + ``hashlib.sha256`` to see whether anything was edited.
Everything that came from a machine or a criteria file is HTML-escaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from fleet.console.report_interconnect import EP_HEADERS, HEADERS, ep_rows, interconnect_rows
from fleet.console.report_svg import histogram, pingmesh
from fleet.fabric.report_model import Report, audit_words
from fleet.fabric.text import clean_text

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#212121;
padding:0 1rem}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #e0e0e0;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #e0e0e0;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#fff;background:#2e7d32;font-weight:bold;padding:.1rem .5rem;border-radius:3px}
.fail{color:#fff;background:#c62828;font-weight:bold;padding:.1rem .5rem;border-radius:3px}
.info{color:#fff;background:#546e7a;padding:.1rem .5rem;border-radius:3px}
.verdict{font-size:1.4rem;margin:.8rem 0}.meta{color:#616161}.charts{display:flex;flex-wrap:wrap;gap:1rem}
footer{margin-top:2rem;color:#616161;font-size:.8rem;word-break:break-all}
@page{size:A4;margin:12mm}
@media print{body{margin:0;max-width:none;font-size:9pt;padding:0}h2{break-after:avoid}
tr,svg,h3{break-inside:avoid}thead{display:table-header-group}svg{max-width:100%;height:auto}
.pass,.fail,.info,svg{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"""


def _e(value: Any) -> str:
    """Text for HTML: inert (``clean_text``) and escaped (``<``, ``>``, ``&``, quotes)."""
    return escape(clean_text(str(value)))


def _n(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return _e("-" if value is None else value)


def _badge(passed: bool | None, words: str = "") -> str:
    if passed is None:
        return f'<span class="info">{_e(words or "info")}</span>'
    return f'<span class="{"pass" if passed else "fail"}">{_e(words or ("PASS" if passed else "FAIL"))}</span>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    """``rows`` are already-escaped cell HTML."""
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>" for row in rows)  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _shape(shape: Mapping[str, Any]) -> str:
    rows = [[_e("nodes"), _n(shape["nodes"])], [_e("RDMA NICs"), _n(shape["nics"])],
            [_e("switches"), _n(shape["switches"])], [_e("rails"), _e(", ".join(str(r) for r in shape["rails"]))]]
    units = shape.get("software_units", {})
    for key, values in shape.get("software", {}).items():
        unit = units.get(key, "NICs" if key == "nic_firmware" else "nodes")  # firmware is counted per NIC
        rows.append([_e(key), "<br>".join(f"{_e(v)} ({_n(c)} {_e(unit)})" for v, c in values.items())])
    if shape.get("unreachable"):
        rows.append([_e("unreachable"), "<br>".join(f"{_e(n)}: {_e(r)}" for n, r in shape["unreachable"].items())])
    return _table(["", "as measured"], rows)


def _charts(charts: Mapping[str, Any], limits: Mapping[str, float | None], label: str = "") -> str:
    prefix = f"{label}: " if label else ""
    figures = [
        histogram(charts.get("latency_p99_usec", []), title=f"{prefix}link-test p99 latency per pair", unit="usec",
                  threshold=limits.get("latency")),
        histogram(charts.get("bandwidth_gbps", []), title=f"{prefix}bandwidth per NIC", unit="Gb/s",
                  threshold=limits.get("bandwidth")),
        histogram(charts.get("rx_power_dbm", []), title=f"{prefix}optics rx power per NIC (weakest lane)",
                  unit="dBm", threshold=limits.get("optics")),
        histogram(charts.get("allreduce_efficiency", []), title=f"{prefix}single-node all-reduce efficiency",
                  unit="fraction of the hardware's bus bandwidth", threshold=limits.get("allreduce")),
    ]  # fmt: skip
    meshes = [pingmesh(m, limit_usec=limits.get("latency")) for m in charts.get("matrices", [])]
    return f'<div class="charts">{"".join(figures)}</div><h3>Pingmesh</h3><div class="charts">{"".join(meshes)}</div>'


def _limits(checks: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Threshold lines for the charts, from the checks that judge the charted numbers."""
    kinds = {"latency_p99_max_usec": "latency", "bandwidth_min_gbps": "bandwidth",
             "optics_rx_power_min_dbm": "optics"}
    found: dict[str, float | None] = {}
    for check in checks:
        if check["kind"] in kinds:
            found.setdefault(kinds[check["kind"]], check["threshold"])
        elif check["kind"] == "allreduce_efficiency_min" and not check.get("scope", "").startswith("fleet"):
            found.setdefault("allreduce", check["threshold"])
    return found


def _findings(findings: Sequence[Mapping[str, Any]]) -> str:
    rows = [[_badge(None, f["severity"]), _e(f["kind"]), _e(" ".join(x for x in (f["node"], f["nic"], f["switch"],
                                                                                   f["port"]) if x)),
             _e(", ".join(f"{k}={v}" for k, v in sorted(f["evidence"].items()))), _e(f["next_step"])]
            for f in findings]  # fmt: skip
    return _table(["severity", "kind", "part", "evidence", "next step"], rows)


def _footer(report: Report) -> str:
    data = report.data
    return (f'<footer>Generated {_e(data.get("generated", ""))} by {_e(data.get("tool_version", ""))}. '
            f"SHA-256 of the report's canonical data (embedded below as JSON): <code>{report.sha256}</code>"
            f"<br>{_e(audit_words(data.get('audit_head')))}</footer>"
            f'<script type="application/json" id="report-data">{report.canonical}</script>')


def _interconnect(view: Mapping[str, Any] | None) -> str:
    """NVLink beside the network (``fleet.fabric.interconnect``): every figure against its theoretical value."""
    if not view:
        return "<p>Not measured.</p>"
    out = _table(list(HEADERS), [[_e(cell) for cell in row] for row in interconnect_rows(view)])
    kernels = ep_rows(view)
    if kernels:
        out += _table(list(EP_HEADERS), [[_e(cell) for cell in row] for row in kernels], (1, 2))
    return out


def _page(report: Report, body: str) -> str:
    title = _e(report.title)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="report-sha256" content="{report.sha256}">'
            f"<title>{title}</title><style>{_CSS}</style></head><body>{body}{_footer(report)}</body></html>\n")


def _acceptance(report: Report) -> str:
    d = report.data
    checks = d["checks"]
    passed = sum(1 for c in checks if c["passed"])
    out = [f"<h1>{_e(d['title'])}</h1>",
           f'<p class="meta">Customer: {_e(d.get("customer") or "-")} &middot; measured from '
           f'{_e(d["measured_from"])} &middot; criteria {_e(d.get("criteria_source", ""))}</p>',
           f'<p class="verdict">{_badge(d["passed"], "ACCEPTED" if d["passed"] else "NOT ACCEPTED")} '
           f"{passed} of {len(checks)} checks pass</p>",
           "<h2>Cluster</h2>", _shape(d["shape"]), "<h2>Criteria and results</h2>"]
    rows = []
    for c in checks:
        measured = c["measured"]
        spread = (f"min {_n(measured.get('min'))}, median {_n(measured.get('median'))}, max {_n(measured.get('max'))}"
                  if "median" in measured else ", ".join(f"{_e(k)} {_n(v)}" for k, v in measured.items()))
        unit = f" {c['unit']}" if c.get("unit") and "median" in measured else ""
        agreed = f'<div class="meta">agreed wording: {_e(c["description"])}</div>' if c["description"] else ""
        rows.append([_e(c["id"]), _e(c.get("claim") or c["description"]) + agreed, _e(c["threshold_words"]),
                     spread + _e(unit), _e(c["summary"]), _badge(c["passed"])])
    out.append(_table(["check", "what was checked (as measured)", "threshold", "measured", "evidence", "result"],
                      rows))
    for c in checks:
        if c["failures"]:
            out.append(f"<h3>{_e(c['id'])}: failing parts ({len(c['failures'])})</h3>")
            out.append(_table(["part", f"measured {c['unit']}".strip(), "why"],
                              [[_e(f["part"]), _n(f["measured"]), _e(f["note"])] for f in c["failures"]], (1,)))
    out += ["<h2>NVLink beside the network</h2>", _interconnect(d.get("interconnect")),
            "<h2>Charts</h2>", _charts(d["charts"], _limits(checks)), "<h2>Findings</h2>", _findings(d["findings"])]
    out += ["<h2>Configuration (fleet check)</h2>", _configuration(d.get("configuration"))]
    if d.get("notes"):
        out += ["<h2>Notes</h2><ul>", *(f"<li>{_e(n)}</li>" for n in d["notes"]), "</ul>"]
    out += ["<h2>How it was measured</h2>",
            _table(["setting", "value"], [[_e(k), _e(v)] for k, v in sorted(d.get("suite", {}).items())])]
    return _page(report, "".join(out))


def _configuration(section: Mapping[str, Any] | None) -> str:
    """The suite's configuration checks: one row per check with its counts and the parts at fault."""
    if not section or not section.get("read"):
        return '<p class="meta">The suite did not read the configuration.</p>'
    return _table(["check", "pass", "warn", "fail", "odd ones out", "source"],
                  [[_e(c["title"]), _n(c["pass"]), _n(c["warn"]), _n(c["fail"]), _e(", ".join(c["odd"]) or "-"),
                    _e(c["source"])] for c in section["checks"]], (1, 2, 3))


def _change(change: Mapping[str, Any]) -> str:
    """``-14.7 %``, or the difference in the metric's unit where a percentage means nothing (dBm, from zero)."""
    if change["delta_pct"] is not None:
        return f"{change['delta_pct']:+.1f} %"
    unit = "dB" if change["metric"].endswith("_dbm") else ""
    return f"{change['delta']:+.3g} {unit}".rstrip()


def _changes(changes: Sequence[Mapping[str, Any]]) -> str:
    rows = [[_badge(False, c["severity"]) if c["direction"] == "regression" else _badge(True, "better"), _e(c["part"]), _e(c["metric"]), _n(c["before"]), _n(c["after"]),
             _change(c)] for c in changes]  # fmt: skip
    return _table(["severity", "part", "metric", "before", "after", "change"], rows, (3, 4, 5))


def _diff(report: Report) -> str:
    d = report.data
    before, after = d["before"], d["after"]
    regressions = d["regressions"]
    worse = bool(regressions or d["gone_parts"] or d["lost_metrics"])
    out = [f"<h1>{_e(d['title'])}</h1>",
           f'<p class="meta">before: {_e(before["label"])} ({_e(before["taken"])}, {_e(before["tool_version"])}) '
           f'&middot; after: {_e(after["label"])} ({_e(after["taken"])}, {_e(after["tool_version"])})</p>',
           f'<p class="verdict">{_badge(not worse, "REGRESSED" if worse else "NO REGRESSION")} '
           f"{len(regressions)} regression(s), {len(d['improvements'])} improvement(s), "
           f"{len(d['new_parts'])} new and {len(d['gone_parts'])} gone part(s)</p>",
           "<h2>Regressions (worst first)</h2>", _changes(regressions),
           "<h2>Improvements</h2>", _changes(d["improvements"]),
           "<h2>Parts new, gone, or no longer measured</h2>",
           _table(["", "parts"], [[_e("new"), _e(", ".join(d["new_parts"]) or "-")],
                                  [_e("gone"), _e(", ".join(d["gone_parts"]) or "-")],
                                  [_e("no longer measured"), _e(", ".join(d["lost_metrics"]) or "-")]]),
           "<h2>Software and cabling changes</h2>",
           _table(["severity", "what", "before", "after"],
                  [[_badge(None, c["severity"]), _e(c["subject"]), _e(c["before"]), _e(c["after"])]
                   for c in d["software"] + d["cabling"]]),
           "<h2>Configuration drift (fleet check)</h2>",
           _table(["severity", "what", "before", "after"],
                  [[_badge(None, c["severity"]), _e(c["subject"]), _e(c["before"]), _e(c["after"])]
                   for c in d.get("configuration", [])]),
           "<h2>Cluster (after)</h2>", _shape(after["shape"]),
           "<h2>NVLink beside the network: before</h2>", _interconnect(before.get("interconnect")),
           "<h2>NVLink beside the network: after</h2>", _interconnect(after.get("interconnect")),
           "<h2>Charts: before</h2>", _charts(before["charts"], {}, before["label"]),
           "<h2>Charts: after</h2>", _charts(after["charts"], {}, after["label"])]  # fmt: skip
    return _page(report, "".join(out))


def render_html(report: Report) -> str:
    """The whole HTML document of an ``acceptance`` or ``baseline-diff`` report."""
    return _acceptance(report) if report.kind == "acceptance" else _diff(report)


_DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def embedded_data(html: str) -> str | None:
    """The canonical data text a report embeds (hash it to check the footer's SHA-256)."""
    match = _DATA.search(html)
    return match.group(1) if match else None


__all__ = ["embedded_data", "render_html"]
