"""Write a report as the HTML file the user named, the Markdown file beside it, and a PDF when Chromium is here.

Reports are kept: without a path they go to the reports folder
(``$XDG_DATA_HOME/fleet/reports``, or ``reports_dir`` in the config file), never
beside a history that may be a temporary one (``fleet demo``'s is deleted on
quit). The PDF is Chromium's print of the HTML (``--print-to-pdf``, the
report's print CSS); without Chromium the report is HTML and Markdown, and the
note says why there is no PDF.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from fleet.console.report_html import render_html
from fleet.console.report_markdown import render_markdown
from fleet.fabric.report_model import Report

PDF_TIMEOUT_S = 120.0
"""How long Chromium may take to print a report (a 1,024-node pingmesh is a large page)."""


def write_report(report: Report, html_path: Path) -> tuple[Path, Path]:
    """``report.html`` and ``report.md`` (same stem); the paths written."""
    html_path.parent.mkdir(parents=True, exist_ok=True)
    markdown_path = html_path.with_suffix(".md")
    html_path.write_text(render_html(report), encoding="utf-8")
    markdown_path.write_text(render_markdown(report), encoding="utf-8")
    return html_path, markdown_path


class WrittenReport(NamedTuple):
    html: Path
    markdown: Path
    pdf: Path | None
    """None when no PDF could be printed (``note`` says why)."""
    note: str = ""

    @property
    def paths(self) -> tuple[Path, ...]:
        return (self.html, self.markdown) if self.pdf is None else (self.html, self.markdown, self.pdf)

    def words(self) -> str:
        """``report written: /path/a.html, a.md and a.pdf`` (or why there is no PDF)."""
        names = [self.markdown.name] + ([self.pdf.name] if self.pdf is not None else [])
        return f"report written: {self.html}, {' and '.join(names)}" + (f" ({self.note})" if self.note else "")


def chromium_binary() -> str | None:
    """Chromium on this machine (Debian's ``chromium``, others' ``chromium-browser``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def print_pdf(html_path: Path, *, chromium: str | None = None) -> tuple[Path | None, str]:
    """``<stem>.pdf`` beside ``html_path``, printed by headless Chromium; (None, why) when it cannot be."""
    binary = chromium or chromium_binary()
    if binary is None:
        return None, "no PDF: Chromium is not installed (`make system-packages`)"
    pdf_path = html_path.with_suffix(".pdf")
    profile = html_path.parent / f".chromium-{html_path.stem}"
    args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--no-pdf-header-footer",
            f"--user-data-dir={profile}", f"--print-to-pdf={pdf_path}", html_path.resolve().as_uri()]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=PDF_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"no PDF: Chromium failed ({error})"
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if done.returncode != 0 or not pdf_path.exists():
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return None, f"no PDF: Chromium failed ({last})"
    return pdf_path, ""


def default_report_path(reports_dir: Path, kind: str, ts: float | None = None) -> Path:
    """``<reports_dir>/<kind>-YYYYmmdd-HHMMSS.html`` (UTC), a name that sorts by time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if ts is None else ts))
    return reports_dir / f"{kind}-{stamp}.html"


def write_report_files(report: Report, html_path: Path, *, pdf: bool = True) -> WrittenReport:
    """HTML, Markdown and (``pdf`` and Chromium here) the PDF of ``report``, at ``html_path``'s stem."""
    html, markdown = write_report(report, html_path)
    if not pdf:
        return WrittenReport(html, markdown, None, "")
    printed, note = print_pdf(html)
    return WrittenReport(html, markdown, printed, note)


__all__ = ["WrittenReport", "chromium_binary", "default_report_path", "print_pdf", "write_report",
           "write_report_files"]
