"""`fleet ecmp` on a SONiC leaf: the snapshot says what SONiC would not show, the remedy hashes on the
RoCE destination QP with `config switch-hash global ecmp-hash`, and the outcome is measured."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.simfleet import running_fleet

from fleet.console.cli import main
from fleet.simulator.scenario import parse_scenario

SONIC_COLLISION = """
[fabric]
nodes = 8
nodes_per_leaf = 4
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 3

[[switch_os]]
names = "leaf[09-16]"
os = "sonic"

[[jobs]]
id = 601
tenant = "acme"
nodes = "gpu[001-008]"
load = 1.0

[[faults]]
kind = "ecmp_collision"
target = "leaf09"
at = 0
"""
APPLY = ["--window", "3", "--interval", "0.5", "--sustain", "2"]


async def fleet(*args: str, answer: str | None = None) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, main, list(args), input=answer, catch_exceptions=False)


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_sonic_leaf_plan_and_apply(tmp_path: Path) -> None:
    db = str(tmp_path / "fleet.db")
    async with running_fleet(parse_scenario(SONIC_COLLISION, source="sonic.toml"), tmp_path / "sim") as inventory:
        common = ["--inventory", str(inventory), "--db", db]
        status = json.loads((await fleet("ecmp", "status", *common, *APPLY, "--json")).stdout)
        plan = json.loads((await fleet("ecmp", "plan", "--leaf", "leaf09", *common, *APPLY, "--json")).stdout)
        declined = await fleet("ecmp", "apply", "--leaf", "leaf09", *common, *APPLY, "--json", answer="n\n")
        untouched = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
        applied = await fleet("ecmp", "apply", "--leaf", "leaf09", "--yes", *common, *APPLY, "--json")
    assert status["flagged"] == ["leaf09"]
    leaf = plan["plans"][0]
    assert leaf["config"]["ecmp_fields"] is None
    assert "does not show its hash configuration" in leaf["config"]["note"]
    assert [r["id"] for r in leaf["remedies"]] == ["host-qps", "hash-fields"]
    assert declined.exit_code == 1 and "not applied: not confirmed" in declined.output
    assert "$ config switch-hash global ecmp-hash SRC_IP" in declined.output and "Apply to leaf09?" in declined.output
    assert untouched == []
    assert applied.exit_code == 0, applied.output
    outcome = json.loads(applied.stdout)
    assert outcome["state"] == "kept" and outcome["after"]["imbalanced_now"] is False
    assert outcome["after"]["hot_util_pct"] < outcome["before"]["hot_util_pct"]
    audit = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
    assert audit[2]["commands"] == ["config switch-hash global ecmp-hash SRC_IP DST_IP IP_PROTOCOL L4_SRC_PORT "
                                    "L4_DST_PORT RDMA_BTH_DEST_QP"]
    assert audit[0]["commands"] == ["show switch-hash global"]
