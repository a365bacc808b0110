"""Cumulus ``cl-ecmpcalc``: the port the leaf's hash sends a flow out of, the same choice the traffic and
the probes take, and the documented refusals when a hashed field is missing."""

from __future__ import annotations

import itertools

from sim_helpers import small_model

from fleet.fabric.roce import flow_label_sport
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, run_collect
from fleet.simulator.traffic import SwitchConfig, nic_ip, nic_of_ip


async def test_the_calculated_uplink_is_the_spine_a_probe_with_that_flow_label_crosses() -> None:
    model = small_model()
    topology = model.topology
    a, b = topology.nodes[0], topology.nodes[5]  # gpu001 (leaf group 1, Cumulus) and gpu006 (group 2)
    crossed = set()
    for rail, label in itertools.product((0, 3), (1, 77, 4242, 0x9E37, 0xBEEF1)):
        leaf, ingress = model.nic_cable(a, rail, model.effects(10.0))
        shell = Shell(Machine(leaf, "leaf", model, Rendezvous()))
        out, err, status = await run_collect(shell, (
            f"cl-ecmpcalc -i {ingress} -s {nic_ip(topology, a, rail)} -d {nic_ip(topology, b, rail)} -p udp "
            f"--sport {flow_label_sport(label)} --dport 4791"))
        assert status == 0, err
        first, port = out.splitlines()
        assert first == "ecmpcalc: will query hardware"
        spine = next(u.spine for u in topology.uplinks[leaf] if u.leaf_port == port)
        switches = model.probe((a, rail), (b, rail), model.now(), 0x100, flow_label=label).switches
        assert switches[1] == spine, (rail, label, port, switches)
        crossed.add(spine)
    assert len(crossed) == 2  # the labels spread over both spines


async def test_after_a_new_seed_the_answer_is_still_the_probes_path_and_a_missing_field_is_refused() -> None:
    model = small_model()
    a, b = model.topology.nodes[0], model.topology.nodes[5]
    leaf, ingress = model.nic_cable(a, 0, model.effects(10.0))
    shell = Shell(Machine(leaf, "leaf", model, Rendezvous()))
    line = (f"cl-ecmpcalc -i {ingress} -s {nic_ip(model.topology, a, 0)} -d {nic_ip(model.topology, b, 0)} "
            "-p udp --dport 4791 --sport {}")
    model.apply_switch_config(leaf, model.now(), SwitchConfig(hash_seed=12345), restart=False, message="seed")
    for label in (3, 300, 30000, 0xABCDE):
        port = (await run_collect(shell, line.format(flow_label_sport(label))))[0].splitlines()[1]
        spine = next(u.spine for u in model.topology.uplinks[leaf] if u.leaf_port == port)
        assert model.probe((a, 0), (b, 0), model.now(), 0x100, flow_label=label).switches[1] == spine
    _out, err, status = await run_collect(shell, line.split(" --sport")[0].replace(" --dport 4791", ""))
    assert status == 2 and "--sport and --dport required for TCP and UDP frames" in err
    assert nic_of_ip(model.topology, nic_ip(model.topology, b, 6)) == (b, 6)
    assert nic_of_ip(model.topology, "10.9.0.1") is None
