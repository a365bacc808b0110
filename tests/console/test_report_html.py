"""The acceptance and baseline-diff reports: self-contained, verifiable, and rendered by headless Chromium.

Chromium comes from Debian's package (``make system-packages``, run by ``make test``);
where it cannot be installed the rendering tests skip and say so.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fleet.console.report_html import embedded_data, render_html
from fleet.console.report_markdown import render_markdown
from fleet.console.report_write import write_report
from fleet.fabric.acceptance import evaluate, parse_criteria
from fleet.fabric.baseline import Baseline, CableCheck, FleetShape, diff, part_id
from fleet.fabric.events import Finding, Severity
from fleet.fabric.report_model import Report, acceptance_report, diff_report

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"
NODES = tuple(f"gpu{i:03d}" for i in range(1, 9))
SHOTS = Path(__file__).resolve().parents[2] / ".pytest_cache" / "report-screenshots"


def measured(*, weak: str = "", slow: str = "", label: str = "month-1") -> Baseline:
    parts: dict[str, dict[str, float]] = {}
    for k, node in enumerate(NODES):
        parts[part_id("node", node)] = {"allreduce_efficiency": 0.81 if node == slow else 0.95,
                                        "allreduce_busbw_gbytes_s": 365.0 if node == slow else 428.0}
        for rail in range(2):
            nic = f"{node}:mlx5_{rail}"
            parts[part_id("nic", node, f"mlx5_{rail}")] = {
                "bw_avg_gbps": 394.0 - k * 0.3, "rx_power_dbm": -4.7 if nic == weak else 0.3 + 0.2 * k,
                "errors": 0.0, "packets": 1e9, "lat_p99_usec": 1.6 + 0.05 * k}
            for other in NODES[k + 1:]:
                parts[part_id("pair", rail, node, other)] = {"p99_usec": 1.54 + 0.1 * ((k + rail) % 4)}
    parts[part_id("fleet", "allreduce")] = {"allreduce_efficiency": 0.93, "allreduce_busbw_gbytes_s": 93.0}
    parts[part_id("fleet", "alltoall")] = {"alltoall_efficiency": 0.78, "alltoall_busbw_gbytes_s": 73.1,
                                           "alltoall_theoretical_gbytes_s": 93.75}
    matrices = []
    for rail in range(2):
        cells = [[None if i == j else 1.54 + 0.1 * ((min(i, j) + rail) % 4) for j in range(8)] for i in range(8)]
        matrices.append({"rail": rail, "nic": f"mlx5_{rail}", "nodes": list(NODES), "p99_usec": cells,
                         "reference_p99_usec": 1.54, "bad_pairs": [["gpu001", "gpu003"]] if rail else []})
    return Baseline(
        label=label, ts=1_795_000_000.0, tool_version="fleet 0.1.0",
        shape=FleetShape(NODES, tuple(f"{n}:mlx5_{r}" for n in NODES for r in range(2)), ("leaf01", "spine01"),
                         (0, 1)),
        software={n: {"kernel": "5.15.0-119-generic", "gpu_driver": "550.90.07", "fw_mlx5_0": "28.39.1002"}
                  for n in NODES},
        parts=parts, cabling={f"{n}:mlx5_{r}": CableCheck(f"leaf0{r + 1} swp{k + 1}", f"leaf0{r + 1} swp{k + 1}")
                              for k, n in enumerate(NODES) for r in range(2)},
        matrices=tuple(matrices),
    )  # fmt: skip


def broken_acceptance() -> Report:
    criteria = parse_criteria(EXAMPLE.read_text(), source="acceptance-criteria.example.toml")
    baseline = measured(weak="gpu003:mlx5_1", slow="gpu005")
    findings = [Finding("nic_check", Severity.WARNING, node="gpu003", nic="mlx5_1",
                        evidence={"rx_power_dbm": -4.7, "problems": "<b>rx power</b> low"}, next_step="clean it")]
    return acceptance_report(criteria, baseline, evaluate(criteria, baseline, findings), findings, 1_795_000_100.0)


def test_the_report_embeds_its_data_and_the_digest_of_it() -> None:
    report = broken_acceptance()
    html = render_html(report)
    data = embedded_data(html)
    assert data is not None and hashlib.sha256(data.encode()).hexdigest() == report.sha256
    assert report.sha256 in html and report.sha256 in render_markdown(report)
    assert "<b>rx power</b>" not in html and "&lt;b&gt;rx power&lt;/b&gt;" in html  # node text is escaped
    assert not re.search(r"""(src|href)\s*=|@import|url\(""", html)  # nothing fetched
    assert "NOT ACCEPTED" in html and html.count("<svg") == 4 + 2  # four distributions, two pingmeshes
    assert data.count(",0.81,") == 1
    tampered = html.replace(",0.81,", ",0.95,")  # someone "fixes" the slow node's number
    tampered_data = embedded_data(tampered)
    assert tampered_data is not None and hashlib.sha256(tampered_data.encode()).hexdigest() != report.sha256


def test_markdown_has_each_check_with_threshold_and_evidence() -> None:
    text = render_markdown(broken_acceptance())
    assert "**NOT ACCEPTED**: 7 of 9 checks pass." in text
    assert "| allreduce-node |" in text and "\\>= 0.94" in text and "gpu005 0.81 \\< 0.94" in text  # < > escaped
    assert "| nic/gpu003/mlx5_1 | -4.7 | -4.7 \\< -3 dBm |" in text


def test_both_reports_show_nvlink_beside_the_network() -> None:
    report = broken_acceptance()
    html, markdown = render_html(report), render_markdown(report)
    for text in (html, markdown):
        assert "NVLink beside the network" in text
        assert "73.1 / 93.8 GB/s = 78 %" in text  # the all-to-all across nodes against its theoretical figure
    assert "428.0 / 450.5 GB/s = 95 %" in html  # a node's NVLink all-reduce (busbw / efficiency)
    assert report.data["interconnect"]["fleet"]["rdma_alltoall"]["ratio"] == 73.1 / 93.75
    before, after = measured(label="month-1"), measured(slow="gpu005", label="month-2")
    changed = diff_report(diff(before, after), 1_795_000_200.0)
    for text in (render_html(changed), render_markdown(changed)):
        assert "NVLink beside the network: before" in text and "NVLink beside the network: after" in text
        assert "365.0 / 450.6 GB/s = 81 %" in text  # the slow node's all-reduce, after


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed and could not be (`make system-packages` runs apt-get install chromium); "
                    "the HTML reports were not rendered")
    return found


def render(page: Path, tmp_path: Path, screenshot: Path | None = None) -> tuple[str, str]:
    """Chromium's DOM of ``page`` (or a screenshot of it) and its log, where console messages appear."""
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr", "--v=0", "--window-size=1200,3000"]
    args += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run([*args, page.as_uri()], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def console_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["acceptance", "baseline-diff"])
def test_chromium_renders_the_report_without_console_errors(tmp_path: Path, kind: str) -> None:
    report = broken_acceptance() if kind == "acceptance" else diff_report(
        diff(measured(), measured(weak="gpu003:mlx5_1", slow="gpu005", label="month-2")), 1_795_000_100.0)
    html_path, md_path = write_report(report, tmp_path / f"{kind}.html")
    assert md_path.read_text().startswith("# ")
    control = tmp_path / "control.html"
    control.write_text("<!DOCTYPE html><html><body><script>console.error('control')</script></body></html>")
    _, control_log = render(control, tmp_path)
    assert console_lines(control_log), "Chromium's log shows no console messages: the check below would be blind"
    dom, log = render(html_path, tmp_path)
    assert console_lines(log) == []
    assert report.sha256 in dom and ("NOT ACCEPTED" in dom or "regression(s)" in dom)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{kind}.png"
    _, shot_log = render(html_path, tmp_path, screenshot=shot)
    assert console_lines(shot_log) == []
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
