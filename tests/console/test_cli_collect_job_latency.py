"""`fleet collect --job-latency`: the per-job latency sampler beside the collector, against a simulator
process with a running job; its probes land in the store where the Jobs screen reads them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.sim_subprocess import sim_process

from fleet.console.cli import main
from fleet.console.cli.sim_process import SimProcess
from fleet.store.reader import StoreReader

pytestmark = pytest.mark.timeout(60)

SCENARIO = """\
[fabric]
nodes = 4
nodes_per_leaf = 4
spines = 1
link_layer = "roce"
link_gbps = 400
seed = 1

[[jobs]]
id = 7
tenant = "acme"
nodes = "gpu[001-004]"
load = 0.5
"""


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimProcess]:
    with sim_process(tmp_path, SCENARIO) as process:
        yield process


def collect(sim: SimProcess, db: Path, *flags: str) -> None:
    result = CliRunner().invoke(main, ["collect", "--duration", "3", *flags, "--inventory", str(sim.inventory),
                                       "--db", str(db)])
    assert result.exit_code == 0, result.output


def test_collect_with_job_latency_stores_the_jobs_probes(sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    collect(sim, db, "--job-latency")
    with StoreReader(db) as reader:
        probes = reader.probes(job="7")
        buckets = reader.job_latency("7", 0.0, 4e9)
    assert probes and all(p.kind == "lat" and p.ok for p in probes)
    assert {p.src for p in probes} | {p.dst for p in probes} <= {"gpu001", "gpu002", "gpu003", "gpu004"}
    assert buckets and all(0 < p50 <= p99 for _ts, p50, p99 in buckets)


def test_collect_without_it_probes_nothing(sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    collect(sim, db)
    with StoreReader(db) as reader:
        assert reader.probes() == [] and reader.jobs()
