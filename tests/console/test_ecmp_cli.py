"""`fleet ecmp status|apply` and `fleet audit` against the simulator's `ecmp` scenario, over real SSH.

The simulator's leaf01 sends every cross-rack flow to one spine uplink; fleet
must find it from switch counters alone, fix it on the canary, prove it, and
roll back a remedy the switch's hash ignores.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.simfleet import running_fleet

from fleet.collectors.inventory import load_inventory
from fleet.console.cli import main
from fleet.console.ecmp_ops import EcmpOps, EcmpSettings
from fleet.simulator.scenario import SCENARIO_DIR, load_scenario, parse_scenario

SHORT = ["--window", "10", "--interval", "1", "--sustain", "3"]
"""A window of 10 s for an imbalance that must hold 3 s, polled every second: on two loaded cores
the switches' first polls come late (a 6 s window once saw it for only 2 s). Polls are stamped with
the switch's clock (``tests/collectors/test_switch_clock.py``): stamped on arrival, a late answer
read the hot uplink ~10% low and broke the hold (an 8 s window at 0.5 s once saw 1.5 s of it)."""
APPLY = ["--window", "3", "--interval", "0.5", "--sustain", "2"]


async def fleet(*args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner()
    return await asyncio.to_thread(runner.invoke, main, list(args), env=env, catch_exceptions=False)


def test_apply_is_refused_in_read_only_mode_before_touching_anything(tmp_path: Path) -> None:
    runner = CliRunner()
    for args, env in ((["--read-only"], {}), ([], {"FLEET_READ_ONLY": "1"})):
        result = runner.invoke(main, ["ecmp", "apply", "--leaf", "leaf01", "--yes", "--inventory",
                                      str(tmp_path / "none.toml"), "--db", str(tmp_path / "f.db"), *args],
                               env={"XDG_CONFIG_HOME": str(tmp_path), **env})
        assert result.exit_code == 2  # refused by the mode it runs in (docs/exit-codes.md)
        assert "refused: read-only mode" in result.output


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_status_flags_only_the_colliding_leaf_and_apply_fixes_it_with_an_audit_trail(tmp_path: Path) -> None:
    db = str(tmp_path / "fleet.db")
    async with running_fleet(load_scenario("ecmp"), tmp_path / "sim") as inventory:
        common = ["--inventory", str(inventory), "--db", db]
        status = await fleet("ecmp", "status", *common, *SHORT, "--json")
        assert status.exit_code == 0, status.output
        document = json.loads(status.stdout)
        assert document["flagged"] == ["leaf01"], json.dumps(document["leaves"][0])
        leaf01 = document["leaves"][0]
        assert leaf01["imbalance"] > 3 and leaf01["jobs"] == ["5101", "5102"]
        applied = await fleet("ecmp", "apply", "--leaf", "leaf01", "--yes", *common, *APPLY, "--json")
    assert applied.exit_code == 0, applied.output
    outcome = json.loads(applied.stdout)
    assert outcome["state"] == "kept" and outcome["remedy"] == "hash-fields"
    assert outcome["after"]["imbalanced_now"] is False
    assert outcome["after"]["imbalance"] < outcome["before"]["imbalance"]
    audit = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
    steps = [a["step"] for a in audit]
    assert steps == ["snapshot", "measure", "apply", "verify", "verdict"]
    assert all(a["target"] == "leaf01" and "@" in a["actor"] for a in audit)
    assert "nv show system forwarding" in audit[0]["commands"]
    assert audit[2]["commands"][0] == "nv set system forwarding ecmp-hash ingress-interface on"
    assert audit[-1]["verdict"].startswith("kept hash-fields on leaf01")
    assert audit[-1]["before"]["balance"]["imbalance"] > audit[-1]["after"]["balance"]["imbalance"]


@pytest.mark.slow
@pytest.mark.timeout(60)
async def test_a_remedy_the_hash_ignores_is_rolled_back_and_the_audit_says_why(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "ecmp.toml").read_text().replace('target = "leaf01"',
                                                              'target = "leaf01"\nsurvives_hash_fields = 1')
    scenario = parse_scenario(text, source="ecmp-sticky.toml")
    db = str(tmp_path / "fleet.db")
    async with running_fleet(scenario, tmp_path / "sim") as inventory:
        common = ["--inventory", str(inventory), "--db", db]
        applied = await fleet("ecmp", "apply", "--leaf", "leaf01", "--remedy", "hash-fields", "--yes", *common,
                              *APPLY, "--json")
        plan = await fleet("ecmp", "plan", "--leaf", "leaf01", *common, *APPLY, "--json")
    assert applied.exit_code == 1, applied.output
    outcome = json.loads(applied.stdout)
    assert outcome["state"] == "rolled-back"
    assert "still imbalanced" in outcome["verdict"]
    assert "configuration read back matches the snapshot" in outcome["verdict"]
    audit = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
    assert [a["step"] for a in audit] == ["snapshot", "measure", "apply", "verify", "rollback", "verdict"]
    assert audit[4]["action"] == "ecmp.rollback"
    assert audit[4]["commands"][0] == "nv set system forwarding ecmp-hash ingress-interface off"
    assert audit[-1]["verdict"].startswith("rolled back hash-fields on leaf01: still imbalanced")
    config = json.loads(plan.stdout)["plans"][0]["config"]
    assert "ingress-interface" not in config["ecmp_fields"]


def _without_job(text: str, job: str) -> str:
    """The scenario text without the [[jobs]] block of ``job``: its leaves carry no traffic."""
    blocks = text.split("[[jobs]]")
    return "[[jobs]]".join(b for b in blocks if f"id = {job}\n" not in b)


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_apply_on_an_idle_leaf_is_refused_unless_forced_and_status_and_plan_agree(tmp_path: Path) -> None:
    text = _without_job((SCENARIO_DIR / "ecmp.toml").read_text(), "5103")  # leaves 17-32 carry nothing
    db = str(tmp_path / "fleet.db")
    async with running_fleet(parse_scenario(text, source="ecmp-idle.toml"), tmp_path / "sim") as inventory:
        common = ["--inventory", str(inventory), "--db", db]
        status = await fleet("ecmp", "status", *common, *SHORT, "--json")
        refused = await fleet("ecmp", "apply", "--leaf", "leaf17", "--yes", *common, *SHORT)
        plan = await fleet("ecmp", "plan", "--leaf", "leaf17", *common, *SHORT, "--json")
        audit_before = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
        forced = await fleet("ecmp", "apply", "--leaf", "leaf17", "--remedy", "hash-fields", "--yes", "--force",
                             "rehearsal before the tenant arrives", *common, *APPLY, "--json")
    leaves = {leaf["leaf"]: leaf for leaf in json.loads(status.stdout)["leaves"]}
    idle = leaves["leaf17"]
    assert idle["state"] == "idle" and idle["imbalance"] == 0.0 and not idle["actionable"]
    assert refused.exit_code == 1
    assert "refused: leaf17 needs no remedy, it is idle" in refused.stderr and "--force REASON" in refused.stderr
    assert json.loads(plan.stdout)["plans"][0]["balance"] == idle  # the one assessment, read twice
    assert audit_before == []  # refused before anything was read from or sent to the switch
    outcome = json.loads(forced.stdout)
    assert outcome["state"] == "rolled-back" and "nothing to judge after the change: idle" in outcome["verdict"]
    audit = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
    assert audit[0]["step"] == "force" and audit[0]["verdict"] == "forced: rehearsal before the tenant arrives"
    assert "@" in audit[0]["actor"] and audit[-1]["verdict"].startswith("rolled back hash-fields on leaf17")


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_hash_seed_waits_for_switchd_then_is_verified_and_kept(tmp_path: Path) -> None:
    db = str(tmp_path / "fleet.db")
    async with running_fleet(load_scenario("ecmp"), tmp_path / "sim") as inventory:
        common = ["--inventory", str(inventory), "--db", db]
        applied = await fleet("ecmp", "apply", "--leaf", "leaf01", "--remedy", "hash-seed", "--yes", *common,
                              *APPLY, "--json")
    assert applied.exit_code == 0, applied.output
    outcome = json.loads(applied.stdout)
    assert outcome["state"] == "kept", outcome["verdict"]
    assert outcome["before"]["state"] == "squeezed" and outcome["after"]["state"] in ("ok", "uneven")
    assert "switchd back (uplinks up, LLDP, traffic) after" in outcome["verdict"]
    assert "[wait] waiting for leaf01:" in applied.stderr and "LLDP back on" in applied.stderr
    audit = json.loads((await fleet("audit", "--db", db, "--json")).stdout)["actions"]
    assert [a["step"] for a in audit] == ["snapshot", "measure", "apply", "verify", "verdict"]
    assert audit[-1]["verdict"].startswith("kept hash-seed on leaf01")


@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_collision_at_partial_load_is_a_warning_with_its_rate(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "ecmp.toml").read_text().replace("load = 0.9", "load = 0.3")
    db = str(tmp_path / "fleet.db")
    async with running_fleet(parse_scenario(text, source="ecmp-partial.toml"), tmp_path / "sim") as inventory:
        status = await fleet("ecmp", "status", "--inventory", str(inventory), "--db", db, *SHORT, "--json")
        ops = EcmpOps(load_inventory(inventory), Path(db), EcmpSettings(window_s=10.0, sustain_s=3.0))
        console = await ops.balance("leaf01")  # what the console's plan screen shows
        await ops.close()
    document = json.loads(status.stdout)
    assert console is not None and console.as_json() == document["leaves"][0]  # one assessment, same numbers
    leaf01 = document["leaves"][0]
    assert leaf01["state"] == "collision" and not leaf01["flagged"] and leaf01["hot_util_pct"] < 90
    assert document["warnings"] == ["leaf01"] and document["flagged"] == []
    assert leaf01["flows"] in ([8, 0, 0, 0], [0, 8, 0, 0], [0, 0, 8, 0], [0, 0, 0, 8])
    assert leaf01["collision_rate"] == 0.75 and leaf01["collision_target"] == 0.005
    assert leaf01["chance_p"] < 0.001
    words = (await fleet("ecmp", "status", "--inventory", str(inventory), "--db", db, *SHORT)).stdout
    assert "leaf01   COLLISION" in words and "collision rate 75.0 % of ~8 flows (target < 0.5 %)" in words
