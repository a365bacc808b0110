"""The simulator's answers, read back by the collectors' parsers: no problems, no unknown lines.

The incident scenario is used on purpose: links down, weak optics, pause
storms and miswires must still print what the real tools print.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats
from fleet.collectors.parsers.ibstat import parse_ibstat
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.parsers.nvidia_smi import parse_nvidia_smi_query
from fleet.collectors.parsers.rdma_qp import parse_rdma_qp
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.parsers.slurm import parse_squeue_json
from fleet.collectors.parsers.switch_nvue import parse_nvue_counters
from fleet.collectors.parsers.switch_sonic import parse_sonic_counters, parse_sonic_pfc
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, run_collect

T = 130.0  # after the storm began; the flap and the XID have happened


@pytest.fixture(scope="module")
def model() -> FleetModel:
    model = FleetModel(load_scenario("incident"), start_unix=1_760_000_000.0)
    model.now = lambda: T  # type: ignore[method-assign]
    return model


CASES: list[tuple[str, str, Callable[[str], Any]]] = [
    ("gpu011", "ibstat", parse_ibstat),
    ("gpu003", "ethtool -S enp59s0np0", parse_ethtool_stats),
    ("gpu003", "ethtool -m enp59s0np0", parse_ethtool_module),
    ("gpu024", "ethtool -S enp188s0np0", parse_ethtool_stats),
    ("gpu002", "rdma res show qp", parse_rdma_qp),
    ("gpu002", "show_gids", parse_show_gids),
    ("gpu002", "lldpctl -f json", parse_lldp),
    ("gpu007", "nvidia-smi --query-gpu=index,utilization.gpu,temperature.gpu,power.draw --format=csv,noheader,nounits",
     lambda text: parse_nvidia_smi_query(text, ["index", "utilization.gpu", "temperature.gpu", "power.draw"])),
    ("gpu005", "grep -H . /sys/class/infiniband/*/ports/1/counters/* /sys/class/infiniband/*/ports/1/hw_counters/*",
     parse_sysfs),
    ("head01", "squeue --json", parse_squeue_json),
    ("leaf01", "nv show interface swp3 counters -o json", parse_nvue_counters),
    ("leaf09", "show interfaces counters", parse_sonic_counters),
    ("leaf09", "show pfc counters", parse_sonic_pfc),
]  # fmt: skip


@pytest.mark.parametrize(("host", "command", "parse"), CASES, ids=[c[1].split()[0] + "-" + c[0] for c in CASES])
async def test_parsers_read_the_simulator(model: FleetModel, host: str, command: str, parse: Callable[[str], Any]) -> None:
    shell = Shell(Machine(host, model.topology.role_of(host), model, Rendezvous()))
    out, err, status = await run_collect(shell, command)
    assert (status, err) == (0, ""), err
    result = parse(out)
    assert result.problems == ()
    assert getattr(result, "unknown_lines", 0) == 0


async def test_weak_optics_show_in_ethtool_m(model: FleetModel) -> None:
    shell = Shell(Machine("gpu003", "node", model, Rendezvous()))
    out, _, _ = await run_collect(shell, "ethtool -m enp59s0np0")
    module = parse_ethtool_module(out)
    assert module.problems == ()
    assert "-7" in out or "-6" in out or "-8" in out  # Rx power around -7 dBm after 7 dB of loss


@pytest.mark.parametrize("command", ["ibstat", "ibnetdiscover", "perfquery -x"])
async def test_infiniband_fabric_tools(command: str) -> None:
    from sim_helpers import small_model

    from fleet.collectors.parsers.ibnetdiscover import parse_ibnetdiscover
    from fleet.collectors.parsers.perfquery import parse_perfquery

    parsers: dict[str, Callable[[str], Any]] = {
        "ibstat": parse_ibstat, "ibnetdiscover": parse_ibnetdiscover, "perfquery -x": parse_perfquery,
    }  # fmt: skip
    model = small_model(link_layer="ib")
    out, err, status = await run_collect(Shell(Machine("gpu001", "node", model, Rendezvous())), command)
    assert (status, err) == (0, "")
    result = parsers[command](out)
    assert result.problems == () and getattr(result, "unknown_lines", 0) == 0
