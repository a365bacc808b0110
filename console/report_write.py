"""Write a report as the HTML file the user named and the Markdown file beside it."""

from __future__ import annotations

from pathlib import Path

from fleet.console.report_html import render_html
from fleet.console.report_markdown import render_markdown
from fleet.fabric.report_model import Report


def write_report(report: Report, html_path: Path) -> tuple[Path, Path]:
    """``report.html`` and ``report.md`` (same stem); the paths written."""
    html_path.parent.mkdir(parents=True, exist_ok=True)
    markdown_path = html_path.with_suffix(".md")
    html_path.write_text(render_html(report), encoding="utf-8")
    markdown_path.write_text(render_markdown(report), encoding="utf-8")
    return html_path, markdown_path


__all__ = ["write_report"]
