"""`fleet check` end to end over real SSH against the simulator: every check passes on `healthy`; on
`roce-misconfig` exactly the injected misconfigurations are named and nothing else; the run is stored,
and a failed switch check becomes the root cause of the symptom it explains in the diagnosis."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.simfleet import running_fleet

from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.console.cli import main
from fleet.console.cli.diagnose import collect_for, diagnose_store
from fleet.fabric.config_checks import CONFIG_CHECK_EVENT, report_of
from fleet.simulator.scenario import SCENARIO_DIR, load_scenario, parse_scenario
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

SWITCH_FAULTS = ("pfc_disabled", "ecn_disabled", "pfc_watchdog_disabled", "mtu_mismatch", "trust_pcp",
                 "dscp_map_mismatch")


async def fleet_check(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, main, ["check", *args], catch_exceptions=False)


def injected_parts(scenario: str) -> set[str]:
    """The parts the scenario misconfigures, named as a check names its culprits."""
    return {fault.target for fault in load_scenario(scenario).faults}


@pytest.mark.timeout(120)
async def test_every_check_passes_on_the_healthy_fleet(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("healthy"), tmp_path / "sim") as inventory:
        result = await fleet_check("--inventory", str(inventory), "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["unreachable"] == {}
    assert all(row["fail"] == 0 and row["warn"] == 0 for row in document["summary"]), document["summary"]
    assert len(document["summary"]) == 26 and all(row["pass"] > 0 for row in document["summary"])
    with StoreReader(db) as reader:
        [event] = reader.events(kind=CONFIG_CHECK_EVENT)
    report = report_of(event)
    assert report is not None and report.failed == () and "every check passes" in event.message


@pytest.mark.timeout(120)
async def test_roce_misconfig_names_every_injected_misconfiguration_and_nothing_else(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("roce-misconfig"), tmp_path / "sim") as inventory:
        result = await fleet_check("--inventory", str(inventory), "--db", str(db), "--json")
        text = await fleet_check("--inventory", str(inventory), "--db", str(db))
    assert result.exit_code == 1, result.output  # a check fails (docs/exit-codes.md)
    document = json.loads(result.stdout)
    failing = {c for r in document["results"] if r["verdict"] == "fail" for c in r["culprits"]}
    warned = {c for r in document["results"] if r["verdict"] == "warn" for c in r["culprits"]}
    assert failing == injected_parts("roce-misconfig")
    assert warned <= failing
    by_check = {row["check"]: set(row["odd"]) for row in document["summary"] if row["fail"]}
    assert by_check == {
        "nic_trust": {"gpu006:mlx5_4"}, "nic_pfc": {"gpu003:mlx5_1"},
        "nic_dscp_map": {"gpu006:mlx5_4", "gpu012:mlx5_6"}, "mtu": {"gpu014:mlx5_0"},
        "gid_index": {"gpu008:mlx5_7"}, "versions_firmware": {"gpu002:mlx5_2"}, "peermem": {"gpu010"},
        "pcie_acs": {"gpu015:gpu3"}, "pcie_link": {"gpu001:gpu5"}, "gpu_nic_path": {"gpu016:mlx5_5"},
        "switch_pfc": {"leaf10:Ethernet8"}, "switch_ecn": {"leaf03"}, "switch_pfc_watchdog": {"leaf12"},
        "link_pfc": {"gpu003:mlx5_1", "leaf10:Ethernet8"}, "link_dscp": {"gpu006:mlx5_4", "gpu012:mlx5_6"},
    }
    ecn = next(r for r in document["results"] if r["check"] == "switch_ecn" and r["verdict"] == "fail")
    assert "min 149996 B, max 1499464 B" in ecn["found"]  # thresholds shown (146.48 KB / 1.43 MB as NVUE prints)
    assert text.exit_code == 1
    assert "switch ECN" in text.stdout and "leaf03" in text.stdout
    assert "FAIL nic_pfc gpu003:mlx5_1" in text.stdout and "mlnx_qos -i enp31s0np0 --pfc 0,0,0,1,0,0,0,0" in text.stdout


@pytest.mark.timeout(120)
async def test_nodes_limit_the_run_and_their_switches_follow_the_plan(tmp_path: Path) -> None:
    async with running_fleet(load_scenario("roce-misconfig"), tmp_path / "sim") as inventory:
        result = await fleet_check("--inventory", str(inventory), "--db", str(tmp_path / "f.db"), "--nodes",
                                   "gpu[003,010]", "--json")
        unknown = await fleet_check("--inventory", str(inventory), "--db", str(tmp_path / "f.db"), "--nodes",
                                    "gpu999")
    document = json.loads(result.stdout)
    targets = {r["target"].split(":")[0].split("<->")[0] for r in document["results"]}
    assert targets <= {"gpu003", "gpu010", *(f"leaf{n:02d}" for n in range(1, 17))}
    failing = {c for r in document["results"] if r["verdict"] == "fail" for c in r["culprits"]}
    # the leaves the two nodes are cabled to come along: leaf03 (gpu003's rail 2), leaf10 and leaf12 (gpu010's)
    assert failing == {"gpu003:mlx5_1", "gpu010", "leaf03", "leaf10:Ethernet8", "leaf12"}
    assert unknown.exit_code == 2 and "gpu999 is not a node" in unknown.output


def test_a_bad_profile_is_named_with_its_line(tmp_path: Path) -> None:
    profile = tmp_path / "site.toml"
    profile.write_text("[roce]\nlossless_priority = 3\nrocee_dscp = 26\n")
    result = CliRunner().invoke(main, ["check", "--profile", str(profile), "--inventory", str(tmp_path / "x.toml")])
    assert result.exit_code == 2 and f"{profile}:3: [roce] rocee_dscp: unknown key" in result.output


SETTINGS = CollectSettings(interval_s=1.0, hung_after_s=10.0, slow_after_s=2.0, facts_every_s=60.0, optics_every=2)


@pytest.mark.timeout(120)
async def test_ecn_off_on_a_leaf_queue_is_the_root_cause_of_its_nics_pausing_without_cnps(tmp_path: Path) -> None:
    text = (SCENARIO_DIR / "congestion.toml").read_text()
    text = text[: text.index("[[faults]]")] + '[[faults]]\nkind = "ecn_disabled"\ntarget = "leaf03"\n'
    db = tmp_path / "fleet.db"
    writer = StoreWriter(db).start()
    try:
        async with running_fleet(parse_scenario(text, source="congestion-leaf-ecn.toml"), tmp_path / "sim") as path:
            inventory = load_inventory(path)
            await asyncio.wait_for(collect_for(inventory, writer, 4.0, SETTINGS), timeout=60)
            assert writer.flush(timeout=30)
            symptom_only = diagnose_store(db, window_s=300.0, cabling=inventory.cabling, writer=writer)
            checked = await fleet_check("--inventory", str(path), "--db", str(db))
        assert checked.exit_code == 1
        findings = diagnose_store(db, window_s=300.0, cabling=inventory.cabling, writer=writer)
    finally:
        writer.close()
    assert [(life.finding.kind, life.finding.switch) for life in symptom_only] == [("ecn_not_working", "leaf03")]
    # the symptom is folded into its cause: one finding now (the symptom's, gone, is only held open)
    [cause] = [life.finding for life in findings if life.active]
    assert (cause.kind, cause.switch) == ("misconfigured", "leaf03")
    assert cause.evidence["check"] == "switch_ecn" and cause.evidence["expected"] == "ECN on traffic class 3"
    assert cause.evidence["symptom_ecn_not_working"]["nics_pausing_without_cnp"] >= 2
    assert "nv set qos congestion-control default-global traffic-class 3 ecn enable" in cause.next_step
