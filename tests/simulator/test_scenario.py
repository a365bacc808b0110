"""Scenario files: every built-in one loads; every mistake names its line and key, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_helpers import small_scenario

from fleet.simulator.scenario import ScenarioError, builtin_scenarios, load_scenario, parse_scenario

GOOD = """\
[fabric]
nodes = 16
nodes_per_leaf = 8
spines = 4
seed = 1

[[jobs]]
id = 1001
tenant = "acme"
nodes = "gpu[001-008]"
load = 0.6

[[faults]]
kind = "optics_attenuation"
target = "gpu003:mlx5_2"
db = 7.0
at = 0
"""


def error_of(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="s.toml")
    return str(caught.value)


def test_builtin_scenarios_all_load() -> None:
    names = set(builtin_scenarios())
    assert {"healthy", "incident", "ecmp", "acceptance"} <= names
    for name in names:
        scenario = load_scenario(name)
        assert scenario.fabric.nodes > 0
        assert scenario.description


def test_incident_has_the_fault_kinds_the_demo_needs() -> None:
    kinds = {f.kind for f in load_scenario("incident").faults}
    assert {"optics_attenuation", "link_flap", "pfc_storm", "ecn_disabled", "gpu_xid",
            "node_unreachable", "node_hang", "slow_node"} <= kinds  # fmt: skip
    assert {f.kind for f in load_scenario("ecmp").faults} == {"ecmp_collision"}


def test_good_scenario_parses() -> None:
    scenario = parse_scenario(GOOD)
    assert scenario.jobs[0].nodes == tuple(f"gpu{i:03d}" for i in range(1, 9))
    assert scenario.faults[0].param("db") == 7.0
    assert scenario.fabric.groups == 2


def test_nodes_override() -> None:
    assert load_scenario("acceptance", nodes=128).fabric.nodes == 128


@pytest.mark.parametrize(
    ("replace", "by", "line", "key"),
    [
        ("spines = 4", "spines = \"four\"", 4, "spines"),
        ("spines = 4", "spine = 4", 4, "spine"),
        ("load = 0.6", "load = 1.6", 11, "load"),
        ('nodes = "gpu[001-008]"', 'nodes = "gpu[001-099]"', 10, "nodes"),
        ('kind = "optics_attenuation"', 'kind = "optics_attenuate"', 14, "kind"),
        ('target = "gpu003:mlx5_2"', 'target = "gpu003:mlx5_9"', 15, "target"),
        ("db = 7.0", "dB = 7.0", 16, "dB"),
        ("at = 0", "at = -5", 17, "at"),
    ],
)
def test_errors_name_line_and_key(replace: str, by: str, line: int, key: str) -> None:
    message = error_of(GOOD.replace(replace, by))
    assert message.startswith(f"s.toml:{line}:"), message
    assert f"'{key}'" in message


def test_missing_required_parameter_is_named() -> None:
    message = error_of(GOOD.replace("db = 7.0\n", ""))
    assert "'db'" in message and "missing" in message


def test_toml_syntax_error_has_line() -> None:
    message = error_of(GOOD.replace("seed = 1", "seed = = 1"))
    assert message.startswith("s.toml:5:") and "not valid TOML" in message


def test_fault_target_must_fit_kind() -> None:
    message = error_of(GOOD.replace('target = "gpu003:mlx5_2"', 'target = "spine01"'))
    assert "does not fit optics_attenuation" in message


def test_job_nodes_may_not_overlap() -> None:
    text = GOOD + '\n[[jobs]]\nid = 1002\ntenant = "b"\nnodes = "gpu[008-009]"\n'
    message = error_of(text)
    assert ":22:" in message and "gpu008 already runs job 1001" in message


def test_miswire_needs_two_nic_endpoints() -> None:
    good = small_scenario('[[faults]]\nkind = "miswire"\ntarget = ["gpu001:mlx5_0", "gpu002:mlx5_1"]\n')
    assert good.faults[0].targets == ("gpu001:mlx5_0", "gpu002:mlx5_1")
    with pytest.raises(ScenarioError, match="two node:nic endpoints"):
        small_scenario('[[faults]]\nkind = "miswire"\ntarget = "gpu001:mlx5_0"\n')


def test_switch_port_targets_use_the_switch_os_names() -> None:
    assert small_scenario('[[faults]]\nkind = "link_down"\ntarget = "leaf09:Ethernet4"\n').faults
    with pytest.raises(ScenarioError, match="leaf09:swp2"):
        small_scenario('[[faults]]\nkind = "link_down"\ntarget = "leaf09:swp2"\n')


def test_unknown_file_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such scenario"):
        load_scenario(str(tmp_path / "missing.toml"))


@pytest.mark.parametrize("nodes", [2, 3, 4, 16])
def test_a_smaller_node_count_fits_every_builtin_scenario_and_says_what_it_left_out(nodes: int) -> None:
    """`fleet sim --nodes N` for any N from 2: jobs keep the nodes the fabric has, jobs and faults
    whose machines are gone are dropped, and one line says so."""
    for name in builtin_scenarios():
        full = load_scenario(name)
        scenario = load_scenario(name, nodes=nodes)
        assert scenario.fabric.nodes == nodes
        present = {f"gpu{i:03d}" for i in range(1, nodes + 1)}
        assert all(set(job.nodes) <= present and job.nodes for job in scenario.jobs)
        left_out = len(full.jobs) - len(scenario.jobs) + len(full.faults) - len(scenario.faults)
        trimmed = sum(len(job.nodes) for job in full.jobs if set(job.nodes) & present) > sum(
            len(job.nodes) for job in scenario.jobs)
        if left_out or trimmed:
            assert scenario.scaled.startswith(f"fitted to {nodes} nodes: ") and "\n" not in scenario.scaled
        else:
            assert scenario.scaled == ""


def test_the_incident_on_four_nodes_keeps_its_first_job_and_the_faults_on_its_nodes() -> None:
    scenario = load_scenario("incident", nodes=4)
    assert [(job.id, job.nodes) for job in scenario.jobs] == [(4101, ("gpu001", "gpu002", "gpu003", "gpu004"))]
    assert [(f.kind, f.target) for f in scenario.faults] == [("optics_attenuation", "gpu003:mlx5_2"),
                                                             ("spine_loss", "spine02")]  # the spines all stay
    assert "job 4101 runs on gpu[001-004] (4 of its 12 nodes)" in scenario.scaled
    assert "dropped jobs 4102, 4103" in scenario.scaled and "node_hang gpu032" in scenario.scaled
    assert load_scenario("incident", nodes=64).scaled == ""  # a larger fabric keeps everything


def test_a_wrong_target_is_an_error_with_or_without_a_node_count() -> None:
    text = """
[fabric]
nodes = 8
[[faults]]
kind = "link_flap"
target = "gpu009:mlx5_0"
"""
    with pytest.raises(ScenarioError, match="gpu009:mlx5_0"):
        parse_scenario(text)
    with pytest.raises(ScenarioError, match="gpu009:mlx5_0"):
        parse_scenario(text, nodes=4)
