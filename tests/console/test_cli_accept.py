"""`fleet accept` and `fleet baseline take|list|diff` from the command line, against `fleet sim` processes.

The shipped scenarios run with 5 nodes (``fleet sim --nodes 5``): `fleet accept`
with the example criteria exits 0 on ``acceptance`` and 1 on
``acceptance-broken``, naming the failed checks; the baselines taken on each
diff to the broken parts, with a report.
"""

from __future__ import annotations

import hashlib
import json
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
    assert "PASS  allreduce-node" in err and "accepted: all 8 checks pass" in err
    html = Path(document["report"][0]).read_text()
    data = embedded_data(html)
    assert data is not None and hashlib.sha256(data.encode()).hexdigest() == document["sha256"]
    assert Path(document["report"][1]).read_text().startswith("# Acceptance of the 64-node H100 RoCE cluster")

    code, document, err = verdicts["acceptance-broken"]
    assert code == 1 and "3 of 8 checks failed: allreduce-node, allreduce-fleet, optics" in err
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
    assert {c["part"] for c in result["regressions"]} == {"nic/gpu003/mlx5_2", "node/gpu005", "fleet/allreduce"}
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
