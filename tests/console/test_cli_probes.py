"""`fleet lat`, `fleet bw`, `fleet linktest`, `fleet allreduce` against a simulator process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.sim_subprocess import fleet_cli, sim_process

from fleet.console.cli.sim_process import SimProcess
from fleet.store.reader import StoreReader

pytestmark = pytest.mark.timeout(60)

SCENARIO = """\
[fabric]
nodes = 4
nodes_per_leaf = 2
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 1

[[faults]]
kind = "link_down"
target = "gpu004:mlx5_1"
at = 0
"""


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    with sim_process(tmp_path_factory.mktemp("probes-sim"), SCENARIO) as process:
        yield process


def test_lat_prints_one_json_document_and_stores_it(sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    code, out, _ = fleet_cli(sim, db, "lat", "gpu001", "gpu003", "--nic", "mlx5_2", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["ok"] and document["kind"] == "lat" and document["src_nic"] == "mlx5_2"
    assert document["result"]["p99_usec"] > 0 and document["previous"] is None
    code, out, _ = fleet_cli(sim, db, "lat", "gpu001", "gpu003", "--nic", "mlx5_2", "--json")
    assert json.loads(out)["previous"]["result"]["p99_usec"] == document["result"]["p99_usec"]
    with StoreReader(db) as reader:
        assert len(reader.probes(kind="lat")) == 2


def test_bw_in_words(sim: SimProcess, tmp_path: Path) -> None:
    code, out, _ = fleet_cli(sim, tmp_path / "fleet.db", "bw", "gpu002", "gpu001", "--size", "1048576",
                         "--iterations", "100")
    assert code == 0
    assert out.startswith("gpu002 mlx5_0 -> gpu001 mlx5_0 ib_send_bw 1048576 B: avg ") and "Gb/s" in out


def test_a_failed_probe_exits_1_with_one_line(sim: SimProcess, tmp_path: Path) -> None:
    code, out, err = fleet_cli(sim, tmp_path / "fleet.db", "lat", "gpu001", "gpu004", "--nic", "mlx5_9",
                         "--peer-nic", "mlx5_0")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("fleet: gpu001: no RDMA device mlx5_9")
    code, _, err = fleet_cli(sim, tmp_path / "fleet.db", "lat", "gpu001", "gpu404")
    assert code == 2 and "not a node of the inventory: gpu404" in err  # an input error (docs/exit-codes.md)


def test_linktest_json_names_the_down_nic(sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    code, out, err = fleet_cli(sim, db, "linktest", "--rails", "0-1", "--json")
    assert code == 1, err  # it found bad pairs: the exit status says so, the JSON says which
    assert err == "fleet: link test found 3 bad pair(s), 1 NIC(s) with problems; suspects: nic gpu004:mlx5_1\n"
    document = json.loads(out)
    assert document["rounds"] == 3 and document["probes"] == 12
    assert [m["nic"] for m in document["matrices"]] == ["mlx5_0", "mlx5_1"]
    assert [(s["kind"], s["node"], s["nic"]) for s in document["suspects"]] == [("nic", "gpu004", "mlx5_1")]
    assert document["nic_problems"][0]["node"] == "gpu004"
    # no progress bar when stderr is not a terminal: the one line above is all
    with StoreReader(db) as reader:
        assert len(reader.probes(kind="lat", run_id=document["run_id"])) == 12
        assert len(reader.probes(kind="linktest")) == 1


def test_allreduce_json(sim: SimProcess, tmp_path: Path) -> None:
    code, out, _ = fleet_cli(sim, tmp_path / "fleet.db", "allreduce", "--nodes", "gpu[001-002]", "--max-bytes", "16M",
                         "--json")
    assert code == 0
    result = json.loads(out)["result"]
    assert result["ranks"] == 16 and result["theoretical_busbw_gbytes_s"] == 400.0
    assert 0 < result["efficiency"] <= 1
