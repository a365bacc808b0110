"""The ecmp_collision fault's `survives_hash_fields` option: a leaf whose hash ignores its field list."""

from __future__ import annotations

from dataclasses import replace

from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import SCENARIO_DIR, parse_scenario
from fleet.simulator.traffic import SwitchConfig


def model(sticky: bool) -> FleetModel:
    text = (SCENARIO_DIR / "ecmp.toml").read_text()
    if sticky:
        text = text.replace('target = "leaf01"', 'target = "leaf01"\nsurvives_hash_fields = 1')
    return FleetModel(parse_scenario(text, source="ecmp.toml"), start_unix=1_800_000_000.0)


def collision_after(m: FleetModel, config: SwitchConfig) -> bool:
    m.apply_switch_config("leaf01", 10.0, config, restart=False, message="t")
    state, _ = m.solution(20.0)
    return "leaf01" in state.collision


def test_by_default_any_change_of_the_hash_clears_the_collision() -> None:
    m = model(False)
    current = m.switch_config("leaf01", 0.0)
    assert collision_after(m, replace(current, ecmp_fields=current.ecmp_fields | {"ingress-interface"})) is False
    assert "leaf01" in model(False).solution(5.0)[0].collision


def test_a_sticky_collision_survives_field_changes_but_not_a_new_seed() -> None:
    current = model(True).switch_config("leaf01", 0.0)
    assert collision_after(model(True), replace(current, ecmp_fields=current.ecmp_fields | {"ingress-interface"}))
    assert collision_after(model(True), replace(current, hash_seed=current.hash_seed + 1)) is False
