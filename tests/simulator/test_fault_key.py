"""The model's key for the faults in force is worked out once per stretch between fault instants; it must
equal the faults' own definition at every instant, on the stretches' very edges too."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fleet.simulator import faults as fault_rules
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario

SCENARIOS = sorted(p.stem for p in (Path(__file__).parents[2] / "simulator" / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_fault_key_is_the_faults_own_definition(name: str) -> None:
    model = FleetModel(load_scenario(name))
    faults = model.scenario.faults
    edges = fault_rules.boundaries(faults)
    instants = {0.0, 1e9, *(i * 7.3 for i in range(200))}
    for edge in edges:
        instants |= {edge, math.nextafter(edge, -math.inf), math.nextafter(edge, math.inf), edge + 0.5}
    for t in sorted(instants, key=lambda x: (x * 7919) % 1):  # not in time order: the memo must not care
        active = frozenset(i for i, f in enumerate(faults) if f.active(t))
        escalated = frozenset(
            i for i in active if faults[i].kind == "pfc_storm" and t - faults[i].at >= fault_rules.STORM_ESCALATION_S
        )
        assert model._fault_key(t) == (active, escalated), t
    if name == "incident":
        assert any(model._fault_key(t)[1] for t in instants)  # a storm escalates in it: that part is held too
