"""`fleet accept` and `fleet baseline take|list|diff` from the command line, against `fleet sim` processes.

The shipped scenarios run with 5 nodes (``fleet sim --nodes 5``): `fleet accept`
with the example criteria exits 0 on ``acceptance`` and 1 on
``acceptance-broken``, naming the failed checks; the baselines taken on each
diff to the broken parts, with a report.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fleet.console.cli import main
from fleet.console.cli.sim_process import start_sim
from fleet.console.report_html import embedded_data

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"


def fleet(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_accept_and_baselines_on_the_good_and_the_broken_cluster(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    verdicts: dict[str, tuple[int, dict[str, Any], str]] = {}
    for name in ("acceptance", "acceptance-broken"):
        sim = start_sim(name, tmp_path / name, nodes=5, timeout_s=60)
        try:
            report = tmp_path / f"{name}.html"
            code, out, err = fleet("accept", "--criteria", str(EXAMPLE), "--report", str(report), "--json",
                                   "--inventory", str(sim.inventory), "--db", str(db))
            verdicts[name] = (code, json.loads(out), err)
            if name == "acceptance-broken":
                code, out, _ = fleet("baseline", "take", "--label", "quick", "--mode", "sample", "--sample-rounds",
                                     "1", "--rails", "2", "--no-fleet-allreduce", "--json",
                                     "--inventory", str(sim.inventory), "--db", str(db))
                assert code == 0 and json.loads(out)["shape"]["rails"] == [2]
        finally:
            sim.stop()

    code, document, err = verdicts["acceptance"]
    assert code == 0, err
    assert document["passed"] and all(c["passed"] for c in document["checks"])
    assert "PASS  allreduce-node" in err and "accepted: all 9 checks pass" in err
    html = Path(document["report"][0]).read_text()
    data = embedded_data(html)
    assert data is not None and hashlib.sha256(data.encode()).hexdigest() == document["sha256"]
    assert Path(document["report"][1]).read_text().startswith("# Acceptance of the 64-node H100 RoCE cluster")

    code, document, err = verdicts["acceptance-broken"]
    assert code == 1 and "2 of 9 checks failed: allreduce-node, optics" in err
    failed = {c["id"]: c for c in document["checks"] if not c["passed"]}
    assert [f["part"] for f in failed["optics"]["failures"]] == ["nic/gpu003/mlx5_2"]
    assert [f["part"] for f in failed["allreduce-node"]["failures"]] == ["node/gpu005"]

    code, out, _ = fleet("baseline", "list", "--json", "--db", str(db))
    listed = json.loads(out)
    # each accept run is stored as a baseline too, labelled with the criteria's title
    title = "Acceptance of the 64-node H100 RoCE cluster"
    assert [(b["number"], b["label"]) for b in listed] == [(1, title), (2, title), (3, "quick")]
    report = tmp_path / "diff.html"
    code, out, _ = fleet("baseline", "diff", "1", "2", "--json", "--report", str(report), "--db", str(db))
    assert code == 0
    result = json.loads(out)
    assert {c["part"] for c in result["regressions"]} == {"nic/gpu003/mlx5_2", "node/gpu005", "fleet/allreduce",
                                                          "fleet/alltoall"}
    assert result["improvements"] == [] and result["new_parts"] == [] and result["gone_parts"] == []
    assert report.exists() and report.with_suffix(".md").exists()


def test_accept_names_a_bad_criteria_file(tmp_path: Path) -> None:
    criteria = tmp_path / "c.toml"
    criteria.write_text('[[check]]\nkind = "latency_max"\n')
    code, _, err = fleet("accept", "--criteria", str(criteria), "--inventory", str(tmp_path / "none.toml"))
    assert code == 2 and f"fleet: {criteria}: check 1" in err and "'latency_max' is not one of" in err


def test_baseline_diff_names_an_unknown_baseline(tmp_path: Path) -> None:
    code, _, err = fleet("baseline", "diff", "june", "july", "--db", str(tmp_path / "fleet.db"))
    assert code == 2 and "no baseline 'june'" in err


def test_the_broken_clusters_report_claims_what_ran_bounds_its_percentages_and_is_kept(tmp_path: Path) -> None:
    """No --report: the report goes to the reports folder ($XDG_DATA_HOME/fleet/reports), named on stdout,
    with a PDF beside it when Chromium is here; each check says what it covered, as measured."""
    data_home = tmp_path / "data"
    sim = start_sim("acceptance-broken", tmp_path / "sim", nodes=5, timeout_s=60)
    try:
        result = CliRunner().invoke(main, ["accept", "--criteria", str(EXAMPLE), "--inventory", str(sim.inventory),
                                           "--db", str(tmp_path / "temporary" / "fleet.db")],
                                    env={"XDG_DATA_HOME": str(data_home), "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    finally:
        sim.stop()
    assert result.exit_code == 1, result.stderr
    written = [Path(line.removeprefix("report: ")) for line in result.stdout.splitlines()
               if line.startswith("report: /")]
    assert written and all(p.parent == data_home / "fleet" / "reports" and p.exists() for p in written)
    html, markdown = written[0], written[1]
    assert [p.suffix for p in written] == ([".html", ".md", ".pdf"] if shutil.which("chromium") else [".html", ".md"])
    document = json.loads(embedded_data(html.read_text()) or "{}")
    checks = {c["id"]: c for c in document["checks"]}
    latency = checks["latency-p99"]["claim"]
    measured = sum(1 for m in document["charts"]["matrices"] for i, row in enumerate(m["p99_usec"])
                   for j, value in enumerate(row) if j > i and value is not None)
    assert "sample mode" in latency and f"on {measured} node pairs x rail it measured" in latency
    assert "of 80 in scope" in latency  # 5 nodes: 10 pairs on each of 8 rails
    assert "every pair" not in latency
    assert all(c["claim"] for c in checks.values())
    loss = checks["link-loss"]
    assert loss["measured"]["max"] <= 100.0 and "moved plus those lost" in loss["claim"]
    for text in (re.sub(r'<script type="application/json".*?</script>', "", html.read_text(), flags=re.S),
                 markdown.read_text()):
        shares = [float(s.replace(",", "")) for s in re.findall(r"(\d[\d,]*(?:\.\d+)?) ?%", text)]
        assert shares and max(shares) <= 100.0
    assert "(5 nodes)" in markdown.read_text() and "NICs)" in markdown.read_text()  # firmware counted per NIC
