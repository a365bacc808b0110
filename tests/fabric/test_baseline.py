"""The baseline diff: thresholds per metric, severity order, new and gone parts, software and cables."""

from __future__ import annotations

import pytest

from fleet.fabric.baseline import (
    Baseline,
    CableCheck,
    FleetShape,
    Rank,
    diff,
    part_id,
    part_nodes,
    part_rail,
)


def make(parts: dict[str, dict[str, float]], *, label: str = "a", software: dict[str, dict[str, str]] | None = None,
         cabling: dict[str, CableCheck] | None = None) -> Baseline:
    return Baseline(label=label, ts=1000.0, tool_version="fleet test", shape=FleetShape(("gpu001", "gpu002")),
                    software=software or {}, parts=parts, cabling=cabling or {})


PAIR = part_id("pair", 0, "gpu001", "gpu002")
NIC = part_id("nic", "gpu001", "mlx5_0")
NODE = part_id("node", "gpu001")


def test_part_names_carry_nodes_and_rails() -> None:
    assert PAIR == "pair/0/gpu001/gpu002" and part_nodes(PAIR) == ("gpu001", "gpu002") and part_rail(PAIR) == 0
    assert part_nodes(NIC) == ("gpu001",) and part_rail("nic/gpu001/mlx5_7") == 7
    assert part_rail(NODE) is None and part_nodes("fleet/allreduce") == ()
    with pytest.raises(ValueError):
        part_id("rack", "r1")


def test_changes_within_thresholds_are_not_reported() -> None:
    before = make({PAIR: {"p99_usec": 2.0}, NIC: {"bw_avg_gbps": 394.0, "rx_power_dbm": 1.0},
                   NODE: {"allreduce_busbw_gbytes_s": 430.0}})
    after = make({PAIR: {"p99_usec": 2.19}, NIC: {"bw_avg_gbps": 375.0, "rx_power_dbm": -0.9},
                  NODE: {"allreduce_busbw_gbytes_s": 418.0}}, label="b")
    result = diff(before, after)
    assert result.changes == () and result.new_parts == () and result.gone_parts == ()


def test_regressions_past_thresholds_sorted_worst_first() -> None:
    before = make({PAIR: {"p99_usec": 2.0}, NIC: {"bw_avg_gbps": 394.0, "rx_power_dbm": 1.0, "errors": 0.0},
                   NODE: {"allreduce_busbw_gbytes_s": 430.0}})
    after = make({PAIR: {"p99_usec": 2.3}, NIC: {"bw_avg_gbps": 200.0, "rx_power_dbm": -1.5, "errors": 12.0},
                  NODE: {"allreduce_busbw_gbytes_s": 410.0}}, label="b")
    result = diff(before, after)
    got = [(c.part, c.metric, c.rank) for c in result.changes]
    assert got == [
        (NIC, "errors", Rank.CRITICAL),          # new errors: no tolerance
        (NIC, "bw_avg_gbps", Rank.CRITICAL),     # -49 %: ~10 thresholds of 5 %
        (NODE, "allreduce_busbw_gbytes_s", Rank.WARNING),  # -4.7 %: 1.55 x its 3 %
        (PAIR, "p99_usec", Rank.WARNING),        # +15 %: 1.5 x its 10 %
        (NIC, "rx_power_dbm", Rank.WARNING),     # -2.5 dB: 1.25 x its 2 dB
    ]
    assert all(c.regression for c in result.changes) and result.improvements == ()
    bw = result.changes[1]
    assert bw.delta == pytest.approx(-194.0) and bw.delta_pct == pytest.approx(-49.24, abs=0.01)
    assert result.changed_parts() == (NIC, NODE, PAIR)


def test_improvements_are_info_and_after_regressions() -> None:
    before = make({PAIR: {"p99_usec": 3.0}, NIC: {"bw_avg_gbps": 300.0}})
    after = make({PAIR: {"p99_usec": 2.0}, NIC: {"bw_avg_gbps": 250.0}}, label="b")
    result = diff(before, after)
    assert [(c.part, c.regression, c.rank) for c in result.changes] == [(NIC, True, Rank.CRITICAL),
                                                                        (PAIR, False, Rank.INFO)]
    assert result.to_json()["improvements"][0]["direction"] == "improvement"


def test_new_gone_and_lost_measurements() -> None:
    other = part_id("nic", "gpu002", "mlx5_0")
    before = make({NIC: {"bw_avg_gbps": 394.0, "lat_p99_usec": 2.0}, other: {"bw_avg_gbps": 394.0}})
    after = make({NIC: {"lat_p99_usec": 2.0}, NODE: {"allreduce_efficiency": 0.95}}, label="b")
    result = diff(before, after)
    assert result.new_parts == (NODE,) and result.gone_parts == (other,)
    assert result.lost_metrics == (f"{NIC} bw_avg_gbps",) and result.changes == ()


def test_software_and_cabling_changes() -> None:
    nic = "gpu001:mlx5_0"
    before = make({}, software={"gpu001": {"kernel": "5.15", "fw_mlx5_0": "28.39"}},
                  cabling={nic: CableCheck("leaf01 swp1", "leaf01 swp1")})
    after = make({}, software={"gpu001": {"kernel": "5.15", "fw_mlx5_0": "28.41"}},
                 cabling={nic: CableCheck("leaf01 swp2", "leaf01 swp1")}, label="b")
    result = diff(before, after)
    assert [(c.subject, c.before, c.after) for c in result.software] == [("gpu001 fw_mlx5_0", "28.39", "28.41")]
    [cable] = result.cabling
    assert (cable.subject, cable.rank) == (nic, Rank.CRITICAL)


def test_json_round_trip() -> None:
    baseline = make({PAIR: {"p99_usec": 2.0}}, software={"gpu001": {"kernel": "5.15"}},
                    cabling={"gpu001:mlx5_0": CableCheck("leaf01 swp1", "")})
    again = Baseline.from_json(baseline.to_json())
    assert again == baseline
    assert again.cabling["gpu001:mlx5_0"].matches is None
    with pytest.raises(ValueError):
        Baseline.from_json(baseline.to_json() | {"format": 99})
