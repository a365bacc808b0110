"""Every fault kind changes the outputs it should, and no others.

Each test compares a model with one fault against the same model without it,
at the same instant. gpu007 and gpu008 run no job and sit behind other leaves
than the faults' targets, so their views must never change; the job's nodes
change only where the fault's physics reaches them.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from sim_helpers import small_model

from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell
from fleet.simulator.state import NicView, NodeView

T = 60.0  # seconds after start; faults start at 10
BYSTANDERS = ("gpu007", "gpu008")


def fault(kind: str, target: str, **params: object) -> str:
    lines = ["[[faults]]", f'kind = "{kind}"']
    lines.append(f"target = {target}" if target.startswith("[") else f'target = "{target}"')
    lines += [f"{k} = {v}" for k, v in params.items()]
    lines.append("at = 10")
    return "\n".join(lines) + "\n"


def pair(text: str) -> tuple[FleetModel, FleetModel]:
    return small_model(), small_model(text)


def nic(model: FleetModel, node: str, rail: int, t: float = T) -> NicView:
    return model.node_view(node, t).nics[rail]


def assert_bystanders_unchanged(base: FleetModel, faulty: FleetModel, t: float = T) -> None:
    for node in BYSTANDERS:
        assert base.node_view(node, t) == faulty.node_view(node, t), node


def without_nic(view: NodeView, rail: int) -> NodeView:
    return replace(view, nics=view.nics[:rail] + view.nics[rail + 1 :])


def delta(model: FleetModel, node: str, rail: int, table: str, name: str, a: float = 30.0, b: float = T) -> int:
    first = getattr(nic(model, node, rail, a), table)[name]
    second = getattr(nic(model, node, rail, b), table)[name]
    return int(second - first)


def test_before_the_fault_nothing_differs() -> None:
    base, faulty = pair(fault("link_down", "gpu002:mlx5_1"))
    for node in ("gpu001", "gpu002", "gpu007"):
        assert base.node_view(node, 5.0) == faulty.node_view(node, 5.0)


def test_link_down() -> None:
    base, faulty = pair(fault("link_down", "gpu002:mlx5_1"))
    down = nic(faulty, "gpu002", 1)
    assert (down.state, down.phys_state, down.lldp) == ("DOWN", "Polling", None)
    assert down.counters["link_downed"] == nic(base, "gpu002", 1).counters["link_downed"] + 1
    assert all(q.state == "ERR" for q in down.qps if q.type == "RC")
    # the job's collectives stall: every node of the job stops sending, on every rail
    assert delta(faulty, "gpu004", 5, "counters", "port_xmit_data") == 0
    assert delta(base, "gpu004", 5, "counters", "port_xmit_data") > 0
    assert faulty.node_view("gpu004", T).gpus[0].util_pct < base.node_view("gpu004", T).gpus[0].util_pct
    assert faulty.switch_view("leaf02", T).ports[1].oper_up is False
    assert nic(faulty, "gpu002", 0).optics == nic(base, "gpu002", 0).optics
    assert_bystanders_unchanged(base, faulty)


def test_link_flap() -> None:
    base, faulty = pair(fault("link_flap", "gpu002:mlx5_1", period=20))
    assert nic(faulty, "gpu002", 1, 11.0).state == "DOWN"  # first down window: 10..15 s
    assert nic(faulty, "gpu002", 1, 16.0).state == "ACTIVE"
    assert nic(faulty, "gpu002", 1, 71.0).counters["link_downed"] == 4  # windows at 10, 30, 50, 70
    assert nic(faulty, "gpu002", 1, 71.0).ethtool["link_down_events_phy"] == 4
    assert delta(faulty, "gpu001", 0, "counters", "port_xmit_data") < delta(base, "gpu001", 0, "counters", "port_xmit_data")
    assert_bystanders_unchanged(base, faulty)


def carrier_changes(model: FleetModel, node: str, netdev: str, t: float) -> int:
    """``cat /sys/class/net/<netdev>/carrier_changes`` on the simulated node at ``t``."""
    model.now = lambda: t  # type: ignore[method-assign]
    answer = Shell(Machine(node, "node", model, Rendezvous())).run_now(f"cat /sys/class/net/{netdev}/carrier_changes")
    assert answer is not None
    chunks, status = answer
    assert status == 0, chunks
    return int("".join(text for stream, text in chunks if stream == 1))


def test_link_flap_raises_the_netdev_carrier_changes_by_two_per_flap() -> None:
    """Every carrier loss and return, as the kernel counts them (sysfs-class-net): 1 for the first up at
    boot, then 2 per flap, the return missing while the link is down; the leaf's end counts the same."""
    base, faulty = pair(fault("link_flap", "gpu002:mlx5_1", period=20))
    netdev = faulty.netdev(1)
    times = (9.0, 11.0, 16.0, 31.0, 36.0, 71.0, 76.0)  # down windows: 10..15, 30..35, 50..55, 70..75 s
    changes = [carrier_changes(faulty, "gpu002", netdev, t) for t in times]
    assert changes == [1, 2, 3, 4, 5, 8, 9]
    downs = [nic(faulty, "gpu002", 1, t).ethtool["link_down_events_phy"] for t in times]
    assert [c - 2 * d for c, d in zip(changes, downs, strict=True)] == [1, 0, 1, 0, 1, 0, 1]  # up: 1, down: 0
    leaf, port = faulty.nic_cable("gpu002", 1, faulty.effects(76.0))
    switch_port = next(p for p in faulty.switch_view(leaf, 76.0).ports if p.name == port)
    assert switch_port.carrier_transitions == changes[-1]
    assert [carrier_changes(base, "gpu002", netdev, t) for t in (9.0, 76.0)] == [1, 1]
    assert carrier_changes(faulty, "gpu001", faulty.netdev(1), 76.0) == 1  # a bystander NIC


def test_a_link_down_fault_is_one_loss_and_one_return_of_carrier() -> None:
    faulty = small_model('[[faults]]\nkind = "link_down"\ntarget = "gpu002:mlx5_1"\nat = 10\nuntil = 20\n')
    assert [carrier_changes(faulty, "gpu002", faulty.netdev(1), t) for t in (9.0, 15.0, 25.0)] == [1, 2, 3]


def test_light_below_loss_of_signal_is_a_link_down_event_and_its_return_another_carrier_change() -> None:
    """An attenuation that darkens the link takes it down like a pulled cable: the PHY counts a
    link-down event and the netdev a carrier loss; when the light comes back, the return. A 6 dB loss
    that leaves the light above loss of signal counts nothing, and no count ever goes back."""
    faulty = small_model('[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu002:mlx5_1"\ndb = 30\nat = 10\n'
                         'until = 20\n\n[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu002:mlx5_1"\n'
                         'db = 30\nat = 30\n\n[[faults]]\nkind = "optics_attenuation"\n'
                         'target = "gpu002:mlx5_2"\ndb = 6\nat = 10\n')
    times = (9.0, 15.0, 25.0, 35.0)
    dark = [nic(faulty, "gpu002", 1, t) for t in times]
    assert [view.state for view in dark] == ["ACTIVE", "DOWN", "ACTIVE", "DOWN"]
    assert [view.ethtool["link_down_events_phy"] for view in dark] == [0, 1, 1, 2]
    assert [carrier_changes(faulty, "gpu002", faulty.netdev(1), t) for t in times] == [1, 2, 3, 4]
    dim = [nic(faulty, "gpu002", 2, t) for t in times]
    assert {view.state for view in dim} == {"ACTIVE"}
    assert {view.ethtool["link_down_events_phy"] for view in dim} == {0}
    assert [carrier_changes(faulty, "gpu002", faulty.netdev(2), t) for t in times] == [1, 1, 1, 1]


def _rx_dbm(view: NicView) -> float:
    assert view.optics is not None
    return sum(10 * math.log10(lane.rx_power_mw) for lane in view.optics.lanes) / len(view.optics.lanes)


def test_optics_attenuation() -> None:
    base, faulty = pair(fault("optics_attenuation", "gpu002:mlx5_1", db=7.0))
    assert _rx_dbm(nic(faulty, "gpu002", 1)) == pytest.approx(_rx_dbm(nic(base, "gpu002", 1)) - 7.0, abs=0.05)
    base_optics, faulty_optics = nic(base, "gpu002", 1).optics, nic(faulty, "gpu002", 1).optics
    assert base_optics is not None and faulty_optics is not None
    assert [x.tx_power_mw for x in faulty_optics.lanes] == [x.tx_power_mw for x in base_optics.lanes]
    corrected = delta(faulty, "gpu002", 1, "ethtool", "rx_corrected_bits_phy")
    assert corrected > 100 * delta(base, "gpu002", 1, "ethtool", "rx_corrected_bits_phy")
    # FEC still corrects everything at 7 dB: the job, and every other view, is untouched
    assert without_nic(faulty.node_view("gpu002", T), 1) == without_nic(base.node_view("gpu002", T), 1)
    for node in ("gpu001", "gpu004", *BYSTANDERS):
        assert faulty.node_view(node, T) == base.node_view(node, T)


def test_optics_attenuation_beyond_loss_of_signal_takes_the_link_down() -> None:
    _, faulty = pair(fault("optics_attenuation", "gpu002:mlx5_1", db=20.0))
    assert nic(faulty, "gpu002", 1).state == "DOWN"


def test_high_ber_inside_the_fec_limit_loses_nothing() -> None:
    """RS(544,514) corrects a pre-FEC BER of 2e-4 (inside its 2.4e-4 limit) to ~1e-13 of codewords."""
    base, faulty = pair(fault("high_ber", "gpu002:mlx5_1", ber=0.0002))
    corrected = delta(faulty, "gpu002", 1, "ethtool", "rx_corrected_bits_phy")
    assert corrected > 1000 * delta(base, "gpu002", 1, "ethtool", "rx_corrected_bits_phy")
    assert delta(faulty, "gpu002", 1, "ethtool", "rx_pcs_symbol_err_phy") == 0
    assert delta(faulty, "gpu002", 1, "hw_counters", "out_of_sequence") == 0


def test_high_ber() -> None:
    base, faulty = pair(fault("high_ber", "gpu002:mlx5_1", ber=0.001))
    assert delta(faulty, "gpu002", 1, "ethtool", "rx_pcs_symbol_err_phy") > 0
    assert delta(base, "gpu002", 1, "ethtool", "rx_pcs_symbol_err_phy") == 0
    assert delta(faulty, "gpu002", 1, "counters", "port_rcv_errors", 10.5, 11.5) > 0
    assert nic(faulty, "gpu002", 1).counters["port_rcv_errors"] == 0xFFFF  # 16 bits, saturated
    assert delta(faulty, "gpu002", 1, "hw_counters", "out_of_sequence") > 0  # losses upstream
    assert_bystanders_unchanged(base, faulty)


def test_degraded_rate() -> None:
    base, faulty = pair(fault("degraded_rate", "gpu002:mlx5_1", gbps=200))
    slow = nic(faulty, "gpu002", 1)
    assert (slow.rate_gbps, slow.speed_name) == (200, "HDR")
    assert nic(faulty, "gpu002", 0).rate_gbps == 400
    # 280 Gb/s offered through a 200 Gb/s link: the whole job slows to 200/280
    ratio = delta(faulty, "gpu005", 3, "counters", "port_xmit_data") / delta(base, "gpu005", 3, "counters", "port_xmit_data")
    assert ratio == pytest.approx(200 / 280, rel=0.05)
    assert_bystanders_unchanged(base, faulty)


def test_miswire() -> None:
    base, faulty = pair(fault("miswire", '["gpu001:mlx5_0", "gpu001:mlx5_1"]'))
    a, b = nic(faulty, "gpu001", 0), nic(faulty, "gpu001", 1)
    assert a.lldp is not None and b.lldp is not None
    assert (a.lldp.switch, a.lldp.switch_port) == ("leaf02", "swp1")
    assert (b.lldp.switch, b.lldp.switch_port) == ("leaf01", "swp1")
    assert faulty.switch_view("leaf01", T).ports[0].description == "gpu001:mlx5_1"
    # rail 0 traffic of gpu001 now reaches the rail-1 leaf and must cross a spine
    assert sum(p.tx_bytes for p in faulty.switch_view("leaf02", T).ports[4:]) > sum(
        p.tx_bytes for p in base.switch_view("leaf02", T).ports[4:]
    )
    assert base.topology.cabling_plan == faulty.topology.cabling_plan  # the plan is as designed
    assert_bystanders_unchanged(base, faulty)


def test_pfc_storm() -> None:
    base, faulty = pair(fault("pfc_storm", "gpu002:mlx5_1"))
    assert delta(faulty, "gpu002", 1, "ethtool", "tx_prio3_pause", 11.0, 17.0) > 500_000
    assert nic(faulty, "gpu002", 1, 12.0).ethtool["tx_pause_storm_warning_events"] == 1
    assert nic(faulty, "gpu002", 1, 12.0).ethtool["tx_pause_storm_error_events"] == 0
    late = nic(faulty, "gpu002", 1)
    assert late.ethtool["tx_pause_storm_error_events"] == 1
    assert delta(faulty, "gpu002", 1, "ethtool", "tx_prio3_pause") == 0  # pause disabled by the watchdog
    assert delta(faulty, "gpu002", 1, "ethtool", "rx_discards_phy") > 0  # drops follow
    # the storm spreads over the leaf's shared buffer to its other NICs before escalation
    assert delta(faulty, "gpu003", 1, "ethtool", "rx_prio3_pause", 11.0, 17.0) > delta(
        base, "gpu003", 1, "ethtool", "rx_prio3_pause", 11.0, 17.0
    )
    assert_bystanders_unchanged(base, faulty)


def test_ecn_disabled_on_a_nic() -> None:
    base, faulty = pair(fault("ecn_disabled", "gpu002:mlx5_1"))
    assert delta(base, "gpu002", 1, "hw_counters", "np_cnp_sent") > 0
    assert delta(faulty, "gpu002", 1, "hw_counters", "np_cnp_sent") == 0
    assert delta(faulty, "gpu001", 1, "hw_counters", "rp_cnp_handled") == 0
    pauses = delta(faulty, "gpu001", 1, "ethtool", "rx_prio3_pause")
    assert pauses > 10 * max(1, delta(base, "gpu001", 1, "ethtool", "rx_prio3_pause"))
    assert nic(faulty, "gpu003", 1) == nic(base, "gpu003", 1)
    assert_bystanders_unchanged(base, faulty)


def test_ecn_disabled_on_a_switch() -> None:
    base, faulty = pair(fault("ecn_disabled", "leaf02"))
    marked = lambda m, t: sum(p.ecn_marked for p in m.switch_view("leaf02", t).ports)  # noqa: E731
    assert marked(base, T) > marked(base, 30.0)
    assert marked(faulty, T) == marked(faulty, 30.0)
    assert faulty.switch_view("leaf01", T) == base.switch_view("leaf01", T)
    assert_bystanders_unchanged(base, faulty)


def test_ecmp_collision() -> None:
    base, faulty = pair(fault("ecmp_collision", "leaf01"))
    def uplink_gbps(model: FleetModel) -> list[float]:
        return [p.tx_bps / 1e9 for p in model.switch_view("leaf01", T).ports[4:]]
    assert sorted(uplink_gbps(faulty))[0] == 0.0
    assert max(uplink_gbps(faulty)) > max(uplink_gbps(base))
    assert faulty.switch_view("leaf02", T) == base.switch_view("leaf02", T)
    assert_bystanders_unchanged(base, faulty)


def test_spine_loss_is_silent_on_the_switch() -> None:
    base, faulty = pair(fault("spine_loss", "spine01", rate=0.01))
    assert sum(delta(faulty, n, r, "hw_counters", "out_of_sequence") for n in ("gpu001", "gpu005") for r in range(8)) > 0
    spine = faulty.switch_view("spine01", T)
    assert all(p.tx_drops == 0 and p.rx_drops == 0 and p.rx_errors == 0 for p in spine.ports)
    assert_bystanders_unchanged(base, faulty)


def test_qp_exhaustion() -> None:
    base, faulty = pair(fault("qp_exhaustion", "gpu002:mlx5_1", qps=500))
    assert len(nic(faulty, "gpu002", 1).qps) == len(nic(base, "gpu002", 1).qps) + 500
    assert delta(faulty, "gpu002", 1, "hw_counters", "out_of_buffer") > 0
    assert nic(faulty, "gpu002", 0) == nic(base, "gpu002", 0)
    assert_bystanders_unchanged(base, faulty)


def test_gpu_xid() -> None:
    base, faulty = pair(fault("gpu_xid", "gpu002:gpu3", xid=79))
    gpu = faulty.node_view("gpu002", T).gpus[3]
    assert (gpu.xid_last, gpu.xid_count, gpu.util_pct) == (79, 1, 0)
    assert faulty.node_view("gpu002", 5.0).gpus[3].xid_count == 0
    assert faulty.node_view("gpu002", T).gpus[2] == base.node_view("gpu002", T).gpus[2]
    assert faulty.node_view("gpu002", T).nics == base.node_view("gpu002", T).nics
    assert_bystanders_unchanged(base, faulty)


def test_gpu_thermal() -> None:
    base, faulty = pair(fault("gpu_thermal", "gpu002:gpu5", temp_c=94))
    hot = faulty.node_view("gpu002", T).gpus[5]
    assert hot.temp_c == 94 and hot.throttle_reasons & 0x60 and hot.sm_clock_mhz < hot.max_sm_clock_mhz
    # a straggler paces the whole job
    assert delta(faulty, "gpu004", 0, "counters", "port_xmit_data") < delta(base, "gpu004", 0, "counters", "port_xmit_data")
    assert_bystanders_unchanged(base, faulty)


@pytest.mark.parametrize(
    ("kind", "params", "expected"),
    [
        ("node_unreachable", {}, (True, False, 0.0)),
        ("node_hang", {}, (False, True, 0.0)),
        ("slow_node", {"delay": 1.5}, (False, False, 1.5)),
    ],
)
def test_ssh_behaviour_faults_change_no_view(kind: str, params: dict[str, float], expected: tuple[bool, bool, float]) -> None:
    base, faulty = pair(fault(kind, "gpu002", **params))
    behaviour = faulty.behaviour("gpu002", T)
    assert (behaviour.unreachable, behaviour.hung, behaviour.delay_s) == expected
    assert faulty.behaviour("gpu002", 5.0) == base.behaviour("gpu002", T)
    for node in ("gpu002", "gpu003", *BYSTANDERS):
        assert faulty.node_view(node, T) == base.node_view(node, T)


def test_flow_labels_probe_every_spine_and_find_the_lossy_one() -> None:
    _, faulty = pair(fault("spine_loss", "spine01", rate=0.01))
    seen: dict[str, set[bool]] = {}
    for label in range(1, 33):
        estimate = faulty.probe(("gpu004", 2), ("gpu008", 2), T, 0x500, flow_label=label)
        spine = estimate.switches[1]
        seen.setdefault(spine, set()).add(estimate.loss > 0)
    assert seen == {"spine01": {True}, "spine02": {False}}


def test_a_flap_that_ends_counts_only_the_downs_that_began_before_its_end() -> None:
    from fleet.simulator.faults import link_down_events
    from fleet.simulator.scenario import FaultSpec, load_scenario
    from fleet.simulator.topology import Topology

    topology = Topology(load_scenario("healthy").fabric, {})
    flap = FaultSpec("link_flap", "gpu001:mlx5_0", at=20.0, until=80.0, params={"period": 20.0})
    counts = [link_down_events([flap], topology, ("gpu001", "mlx5_0"), t) for t in (19.0, 20.0, 79.9, 80.0, 200.0)]
    assert counts == [0, 1, 3, 3, 3]  # downs at 20, 40, 60; none at 80, when the fault is over
