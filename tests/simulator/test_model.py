"""The model: deterministic per seed, counters monotonic and consistent with the traffic model's rates."""

from __future__ import annotations

import itertools

import pytest
from sim_helpers import START, small_model

from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import builtin_scenarios, load_scenario
from fleet.simulator.traffic import PKT_BYTES


def test_same_seed_same_numbers() -> None:
    a, b = small_model(seed=5), small_model(seed=5)
    for t in (0.0, 12.5, 3600.0):
        assert a.node_view("gpu003", t) == b.node_view("gpu003", t)
        assert a.switch_view("leaf01", t) == b.switch_view("leaf01", t)
        assert a.switch_view("spine02", t) == b.switch_view("spine02", t)


def test_other_seed_other_numbers() -> None:
    a, b = small_model(seed=5), small_model(seed=6)
    assert a.node_view("gpu003", 10.0).nics[0].counters != b.node_view("gpu003", 10.0).nics[0].counters


def test_identity_is_an_h100_node_with_cx7() -> None:
    view = small_model().node_view("gpu001", 1.0)
    assert [n.name for n in view.nics] == [f"mlx5_{i}" for i in range(8)]
    assert {n.hca_type for n in view.nics} == {"MT4129"}
    assert {n.fw_version for n in view.nics} == {"28.39.1002"}
    assert {n.rate_gbps for n in view.nics} == {400}
    assert len(view.gpus) == 8 and view.gpus[0].name == "NVIDIA H100 80GB HBM3"
    optics = view.nics[0].optics
    assert optics is not None
    for lane in optics.lanes:
        import math

        assert -1.5 <= 10 * math.log10(lane.rx_power_mw) <= 2.5
    assert view.mgmt_ip.startswith("127.")


def _counter_series(model: FleetModel, times: list[float]) -> list[dict[str, int]]:
    series = []
    for t in times:
        nic = model.node_view("gpu002", t).nics[1]
        series.append({**nic.counters, **nic.hw_counters, **nic.ethtool})
    return series


def test_counters_never_decrease() -> None:
    model = small_model('[[faults]]\nkind = "link_flap"\ntarget = "gpu002:mlx5_1"\nperiod = 20\nat = 5\n')
    times = [0.0, 0.5, 1.0, 4.9, 5.0, 5.1, 9.0, 30.0, 31.0, 300.0, 3600.0]
    series = _counter_series(model, times)
    for before, after in itertools.pairwise(series):
        for name, value in before.items():
            assert after[name] >= value, name


@pytest.mark.parametrize("interval_s", [1.0, 10.0, 60.0])
def test_counters_follow_the_model_rates(interval_s: float) -> None:
    model = small_model()
    t0 = 100.0
    a = model.node_view("gpu002", t0).nics[1]
    b = model.node_view("gpu002", t0 + interval_s).nics[1]
    _, solution = model.solution(t0)
    tx_gbps = solution.actual[("gpu002", "mlx5_1")]
    assert tx_gbps == pytest.approx(0.7 * 400, rel=1e-6)  # a healthy ring runs at the offered load
    measured_gbps = (b.counters["port_xmit_data"] - a.counters["port_xmit_data"]) * 4 * 8 / interval_s / 1e9
    assert measured_gbps == pytest.approx(tx_gbps, rel=0.05)  # the seeded wobble is at most 4 %
    packets = b.counters["port_xmit_packets"] - a.counters["port_xmit_packets"]
    assert packets == pytest.approx(tx_gbps * 1e9 / 8 / PKT_BYTES * interval_s, rel=0.05)
    bits = b.ethtool["rx_bits_phy"] - a.ethtool["rx_bits_phy"]
    assert bits == pytest.approx(400e9 * interval_s, rel=1e-6)


def test_idle_node_moves_no_rdma_data() -> None:
    model = small_model()
    a = model.node_view("gpu008", 10.0).nics[0]
    b = model.node_view("gpu008", 20.0).nics[0]
    assert b.counters["port_xmit_data"] == a.counters["port_xmit_data"]
    assert model.node_view("gpu008", 10.0).gpus[0].util_pct == 0
    assert model.node_view("gpu001", 10.0).gpus[0].util_pct > 90


def test_saturating_counters_stick_at_their_width() -> None:
    model = small_model('[[faults]]\nkind = "high_ber"\ntarget = "gpu002:mlx5_1"\nber = 0.002\n')
    nic = model.node_view("gpu002", 3600.0).nics[1]
    assert nic.counters["symbol_error"] == 0xFFFF
    assert nic.ethtool["rx_pcs_symbol_err_phy"] > 0xFFFF


def test_jobs_view() -> None:
    jobs = small_model().jobs_view(0.0)
    assert [(j.job_id, j.account, j.nodes, j.node_count, j.state) for j in jobs] == [
        (101, "acme", "gpu[001-006]", 6, "RUNNING")
    ]
    assert jobs[0].start_time < START


def test_topology_names_and_cabling() -> None:
    model = small_model()
    topology = model.topology
    assert topology.leaves[:2] == ("leaf01", "leaf02") and topology.leaves[8] == "leaf09"
    assert topology.designed_cable("gpu006", 2).switch == "leaf11"
    assert topology.designed_cable("gpu006", 2).port == "Ethernet4"  # SONiC: 4 lanes per port
    assert topology.designed_cable("gpu002", 0).port == "swp2"
    assert topology.cabling_csv().splitlines()[:2] == ["node,nic,switch,port", "gpu001,mlx5_0,leaf01,swp1"]
    leaf = model.switch_view("leaf01", 1.0)
    assert [p.name for p in leaf.ports] == ["swp1", "swp2", "swp3", "swp4", "swp5", "swp6"]
    assert leaf.ports[4].description == "uplink to spine01"


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_every_builtin_scenario_keeps_counters_monotonic(name: str) -> None:
    """Across each fault's start (and the storm's escalation), no counter of any machine goes back."""
    model = FleetModel(load_scenario(name), start_unix=START)
    times = sorted({0.0, 1.0, 600.0, *(t for f in model.scenario.faults for t in (f.at, f.at + 9.0))})
    previous: dict[str, dict[str, int]] = {}
    for t in times:
        current: dict[str, dict[str, int]] = {}
        for node in model.topology.nodes:
            for nic in model.node_view(node, t).nics:
                current[f"{node}:{nic.name}"] = {**nic.counters, **nic.hw_counters, **nic.ethtool}
        for switch in model.topology.switches:
            for port in model.switch_view(switch, t).ports:
                current[f"{switch}:{port.name}"] = {
                    "rx_bytes": port.rx_bytes, "tx_bytes": port.tx_bytes, "ecn": port.ecn_marked,
                    "rx_pause": sum(port.rx_pfc_pause), "tx_pause": sum(port.tx_pfc_pause),
                }  # fmt: skip
        for key, values in previous.items():
            for counter, value in values.items():
                assert current[key][counter] >= value, (name, t, key, counter)
        previous = current


def test_a_roce_ports_guid_is_gid0s_interface_identifier() -> None:
    """ibstat on a real ConnectX-7 Ethernet port: MAC 94:6d:ae:c2:b6:90, Port GUID 0x966daefffec2b690 (the
    modified EUI-64 that GID[0] carries); the Node GUID is the device's own."""
    from fleet.simulator.model import FleetModel, port_guid
    from fleet.simulator.scenario import load_scenario

    assert port_guid("94:6d:ae:c2:b6:90") == "0x966daefffec2b690"
    model = FleetModel(load_scenario("healthy"), start_unix=0.0)
    nic = model.node_view("gpu001", 1.0).nics[0]
    assert nic.port_guid != nic.node_guid
    assert nic.gids[0].gid.replace(":", "").endswith(nic.port_guid.removeprefix("0x"))
