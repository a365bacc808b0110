"""ECMP balance detection and the plan of remedies: pure functions on made-up series."""

from __future__ import annotations

from fleet.fabric.ecmp import (
    EcmpThresholds,
    UplinkSeries,
    assess_leaf,
    collision_rate,
    flows_on,
    improved,
    jobs_across,
    max_load_chance,
)
from fleet.fabric.ecmp_plan import HashConfig, default_remedy, plan_remedies
from fleet.fabric.records import JobRecord

T = EcmpThresholds(sustain_s=5.0)


def group(loads: list[float], samples: int = 6, speed: float = 400.0) -> list[UplinkSeries]:
    ts = tuple(1000.0 + i for i in range(samples))
    return [UplinkSeries(f"swp{9 + k}", f"spine0{k + 1}", speed, ts, (g,) * samples) for k, g in enumerate(loads)]


def test_collision_on_one_saturated_uplink_is_flagged_with_numbers() -> None:
    b = assess_leaf("leaf01", group([0, 0, 398, 0]), T, ("5101",))
    assert b.flagged and b.imbalanced_now
    assert b.imbalance == 4.0 and b.spread_gbps == 398
    assert (b.hot_port, b.hot_spine) == ("swp11", "spine03") and round(b.hot_util_pct) == 100
    assert b.held_s == 6.0 and b.jobs == ("5101",)


def test_uneven_hash_without_a_hot_uplink_is_not_flagged() -> None:
    b = assess_leaf("leaf07", group([0, 100, 250, 50]), T)
    assert b.imbalance == 2.5 and not b.flagged and "squeezes no flow yet" in b.reason
    assert b.state == "uneven" and b.warning and "flows are unknown" in b.reason


def test_balanced_and_idle_groups_are_not_flagged() -> None:
    balanced = assess_leaf("a", group([300, 310, 320, 300]), T)
    assert not balanced.flagged and balanced.state == "ok" and not balanced.actionable
    idle = assess_leaf("b", group([0.2, 0.0, 0.1, 0.0]), T)
    assert not idle.flagged and idle.state == "idle" and idle.reason.startswith("idle")
    assert idle.imbalance == 0.0  # no ratio of background noise: the CLI and the console both show 0.00
    unknown_speed = [UplinkSeries(u.port, u.spine, 0.0, u.ts, u.tx_gbps) for u in group([0, 0, 0, 0])]
    assert assess_leaf("c", unknown_speed, T).state == "idle"  # an idle port reports no speed
    assert assess_leaf("d", group([100, 0])[:1], T).state == "no data"


def test_every_flow_on_one_uplink_at_partial_load_is_a_collision_with_its_rate() -> None:
    b = assess_leaf("leaf01", group([0, 0, 240, 0]), T, flow_gbps=30.0)
    assert not b.flagged and b.state == "collision" and b.warning and b.actionable
    assert b.flows == (0, 0, 8, 0) and b.collision_rate == 0.75
    assert b.chance_p is not None and abs(b.chance_p - 4 * 0.25**8) < 1e-9
    assert b.collision_words() == "collision rate 75.0 % of ~8 flows (target < 0.5 %)"
    assert "a uniform hash does that 1 time in 16,384" in b.reason
    squeezed = assess_leaf("leaf01", group([0, 0, 398, 0]), T, flow_gbps=50.0)
    assert squeezed.state == "squeezed" and squeezed.flagged  # the urgent state wins


def test_a_spread_a_hash_gives_by_chance_is_no_collision() -> None:
    b = assess_leaf("leaf02", group([90, 30, 60, 60]), T, flow_gbps=30.0)  # 3/1/2/2 flows
    assert b.state == "ok" and b.flows == (3, 1, 2, 2) and b.collision_rate == 0.125
    assert b.chance_p is not None and b.chance_p > 0.5 and "by chance" in b.reason


def test_max_load_chance_against_counting() -> None:
    import itertools

    for flows, bins in ((5, 3), (6, 4), (4, 2)):
        outcomes = list(itertools.product(range(bins), repeat=flows))
        for at_least in range(1, flows + 2):
            counted = sum(1 for o in outcomes if max(o.count(b) for b in range(bins)) >= at_least) / len(outcomes)
            assert abs(max_load_chance(flows, bins, at_least) - counted) < 1e-12
    assert collision_rate((0, 0, 8, 0)) == 0.75 and collision_rate((2, 2, 2, 2)) == 0.0
    assert flows_on([0.0, 14.0, 16.0, 91.0], 30.0) == (0, 0, 1, 3)


def test_a_collision_is_kept_fixed_only_when_it_is_gone_and_never_on_an_idle_group() -> None:
    before = assess_leaf("l", group([0, 0, 240, 0]), T, flow_gbps=30.0)
    spread = assess_leaf("l", group([60, 60, 90, 30]), T, flow_gbps=30.0)
    assert improved(before, spread, T, 0.25)[0]
    still = improved(before, assess_leaf("l", group([0, 0, 240, 0]), T, flow_gbps=30.0), T, 0.25)
    assert still[0] is False and still[1].startswith("still a collision")
    idle = improved(before, assess_leaf("l", group([0, 0, 0, 0]), T, flow_gbps=30.0), T, 0.25)
    assert idle[0] is False and idle[1].startswith("nothing to judge after the change: idle")


def test_a_burst_shorter_than_the_sustain_window_is_not_flagged() -> None:
    ts = tuple(1000.0 + i for i in range(6))
    hot = (100.0, 100.0, 100.0, 395.0, 395.0, 395.0)
    cold = (100.0, 100.0, 100.0, 0.0, 0.0, 0.0)
    members = [UplinkSeries("swp9", "spine01", 400, ts, hot)] + [
        UplinkSeries(f"swp1{k}", f"spine0{k + 2}", 400, ts, cold) for k in range(3)]
    b = assess_leaf("leaf01", members, T)
    assert b.held_s == 3.0 and not b.flagged and "not yet" in assess_leaf(
        "leaf01", [UplinkSeries(m.port, m.spine, 400, ts[3:], m.tx_gbps[3:]) for m in members], T).reason


def test_jobs_across_the_leaf_are_the_ones_hashed_over_its_uplinks() -> None:
    jobs = [JobRecord(0, "1", "a", "u", "t", "R", ("gpu001", "gpu009")),
            JobRecord(0, "2", "b", "u", "t", "R", ("gpu002", "gpu003")),
            JobRecord(0, "3", "c", "u", "t", "R", ("gpu017",))]
    assert jobs_across({"gpu001", "gpu002", "gpu003"}, jobs) == ("1",)


def test_improved_below_threshold_or_by_margin_else_not() -> None:
    before = assess_leaf("l", group([0, 0, 398, 0]), T)
    assert improved(before, assess_leaf("l", group([80, 160, 320, 80]), T), T, 0.25)[0]
    assert improved(before, assess_leaf("l", group([0, 0, 398, 0]), T), T, 0.25) == (
        False, "still imbalanced: max/mean 4.00 -> 4.00, hottest uplink swp11 at 100%")
    half = assess_leaf("l", group([0, 200, 398, 200]), T)
    assert half.imbalanced_now and improved(before, half, T, 0.25)[0]


NVUE = HashConfig("cumulus", ("destination-ip", "destination-port", "ip-protocol", "source-ip", "source-port"),
                  1234, False)


def test_nvue_plan_least_disruptive_first_with_commands_flags_and_rollback() -> None:
    remedies = plan_remedies("leaf01", NVUE, ("5101",))
    assert [r.id for r in remedies] == ["host-qps", "hash-fields", "hash-seed", "adaptive-routing"]
    assert [r.disruption for r in remedies] == sorted(r.disruption for r in remedies)
    qps, fields, seed, ar = remedies
    assert qps.advice_only and "5101" in qps.expected and not qps.restarts_switchd
    assert fields.command_lines == ("nv set system forwarding ecmp-hash ingress-interface on",
                                    "nv config apply -y -m 'fleet ecmp: ecmp-hash ingress-interface on on leaf01'")
    assert fields.rollback_lines[0] == "nv set system forwarding ecmp-hash ingress-interface off"
    assert not fields.restarts_switchd and fields.after is not None
    assert "ingress-interface" in (fields.after.ecmp_fields or ())
    assert seed.restarts_switchd and seed.resets_ports and "- system forwarding hash-seed: 1234" in seed.config_diff
    assert seed.rollback_lines[0] == "nv set system forwarding hash-seed 1234"
    assert ar.restarts_switchd and ar.command_lines[0] == "nv set router adaptive-routing state enabled"
    assert default_remedy(remedies) is fields


def test_sonic_plan_hashes_on_the_destination_qp_and_says_when_fields_are_unknown() -> None:
    unknown = HashConfig("sonic", None, note="no show")
    remedies = plan_remedies("leaf09", unknown)
    assert [r.id for r in remedies] == ["host-qps", "hash-fields"]
    fields = remedies[1]
    assert fields.command_lines == (
        "config switch-hash global ecmp-hash SRC_IP DST_IP IP_PROTOCOL L4_SRC_PORT L4_DST_PORT RDMA_BTH_DEST_QP",)
    assert fields.rollback_lines == ("config switch-hash global ecmp-hash SRC_IP DST_IP IP_PROTOCOL L4_SRC_PORT "
                                     "L4_DST_PORT",)
    assert "did not show its hash fields" in fields.notes[0]
    done = HashConfig("sonic", ("SRC_IP", "RDMA_BTH_DEST_QP"))
    assert [r.id for r in plan_remedies("leaf09", done)] == ["host-qps"]


def test_same_settings_treats_unknown_as_matching() -> None:
    assert HashConfig("sonic", None).same_settings(HashConfig("sonic", ("SRC_IP",)))
    assert not NVUE.same_settings(HashConfig("cumulus", NVUE.ecmp_fields, 99, False))
