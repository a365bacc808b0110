"""`fleet bench export` runs end to end on a small store and reports a scrape that carries every series."""

from __future__ import annotations

import json

from click.testing import CliRunner

from fleet.console.cli import main
from fleet.console.cli.bench_store_fleet import host_keys


def test_bench_export_json_on_four_nodes() -> None:
    result = CliRunner().invoke(main, ["bench", "export", "--nodes", "4", "--scrapes", "2", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["nodes"] == 4
    # Every series of the synthetic fleet; per node its state (fleet_host_up, fleet_host_state_time_seconds),
    # its inventory entry (fleet_host_info) and its job (fleet_slurm_job_node_info); the one job's start time.
    assert report["samples"] == 4 * len(host_keys()) + 4 * 4 + 1
    assert 0 < report["gzip_bytes"] < report["bytes"]
    assert report["openmetrics_scrape_cpu_s_p50"] > 0 and report["first_scrape_cpu_s"] > 0
