"""`fleet alltoall` and `fleet ep-bench` against a simulator process: words, JSON, a job's nodes, the store,
the comparison with the previous run, and a benchmark the nodes do not have."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.sim_subprocess import fleet_cli, sim_process

from fleet.console.cli.sim_process import SimProcess
from fleet.store.reader import StoreReader

pytestmark = pytest.mark.timeout(120)

SCENARIO = """\
[fabric]
nodes = 4
nodes_per_leaf = 2
spines = 2
seed = 1

[[jobs]]
id = 7001
tenant = "acme"
nodes = "gpu[001,003]"
load = 0.5

[software]
ep_bench = "uccl-ep"
ep_nodes = "gpu[001-003]"
"""


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    with sim_process(tmp_path_factory.mktemp("alltoall-sim"), SCENARIO) as process:
        yield process


def test_a_jobs_nodes_in_json_stored_and_compared_with_the_previous_run(sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    args = ("alltoall", "--job", "7001", "--max-bytes", "64M", "--json")
    code, out, _ = fleet_cli(sim, db, *args)
    assert code == 0, out
    first = json.loads(out)
    assert first["ok"] and first["kind"] == "alltoall" and first["params"]["nodes"] == ["gpu001", "gpu003"]
    result = first["result"]
    assert result["theoretical_busbw_gbytes_s"] == pytest.approx(50.0 * 15 / 8)
    assert [r["rail"] for r in result["rails"]] == list(range(8)) and result["bottleneck"]["kind"]
    assert first["previous"] is None and first["verdict"]["verdict"] == "no verdict"
    code, out, _ = fleet_cli(sim, db, *args)
    second = json.loads(out)
    assert second["previous"]["result"]["peak_busbw_gbytes_s"] == result["peak_busbw_gbytes_s"]
    assert second["verdict"]["verdict"] == "PASS"
    with StoreReader(db) as reader:
        assert len(reader.probes(kind="alltoall")) == 2


def test_words_and_input_errors(sim: SimProcess, tmp_path: Path) -> None:
    code, out, _ = fleet_cli(sim, tmp_path / "fleet.db", "alltoall", "--nodes", "gpu002", "--max-bytes", "256M")
    assert code == 0
    assert out.startswith("1 node(s), 8 ranks of NVIDIA H100 80GB HBM3: peak all-to-all bus bandwidth ")
    assert "of the theoretical 450.0 GB/s" in out and "     268435456" in out
    code, _, err = fleet_cli(sim, tmp_path / "fleet.db", "alltoall", "--job", "999")
    assert code == 2 and err.startswith("fleet: job 999: not running")
    code, _, err = fleet_cli(sim, tmp_path / "fleet.db", "alltoall", "--nodes", "gpu001", "--job", "7001")
    assert code == 2 and "not both" in err
    code, _, err = fleet_cli(sim, tmp_path / "fleet.db", "alltoall", "--nodes", "gpu001", "--read-only")
    assert code == 2 and "read-only" in err


def test_ep_bench_runs_where_installed_and_says_where_not(sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    code, out, _ = fleet_cli(sim, db, "ep-bench", "--nodes", "gpu[001-002]")
    assert code == 0, out
    assert out.startswith("2 nodes, uccl-ep test_internode.py: best of 9 configurations tried")
    assert "dispatch_fp8" in out and "combine" in out and "GB/s" in out
    code, out, err = fleet_cli(sim, db, "ep-bench", "--nodes", "gpu[003-004]", "--json")
    assert code == 0
    assert json.loads(out) == {"kind": "ep", "ran": False,
                               "missing": "the expert-parallel benchmark is not installed: no torchrun on gpu004"}
    assert err == "fleet: the expert-parallel benchmark is not installed: no torchrun on gpu004; skipped\n"
    with StoreReader(db) as reader:
        assert len(reader.probes(kind="ep")) == 1
