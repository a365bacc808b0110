"""Decoding agent lines into typed values and HostSamples with the catalogue's metric names."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_harness import run_agent

from fleet.collectors.agent_reader import AgentLineError, decode_agent_line, host_sample
from fleet.fabric.samples import METRICS


@pytest.fixture(scope="module")
def real_line(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_agent(tmp_path_factory.mktemp("agent"), "--optics-every", "1")[0]


def test_real_line_to_host_sample(real_line: dict[str, Any]) -> None:
    line = decode_agent_line(json.dumps(real_line))
    assert line.seq == 0 and line.gpu_error == "" and len(line.gpus) == 2
    sample = host_sample(line, host="gpu001", optics=lambda text: {("optics_temp_c", ""): 33.76})
    values = sample.values
    assert sample.host == "gpu001" and sample.ts == real_line["ts"]
    assert values[("tx_bytes", "mlx5_0", "1")] == 2880761508848 * 4
    assert values[("rx_bytes", "mlx5_1", "1")] == 205128687774249 * 4
    assert values[("tx_packets", "mlx5_0", "1")] == 10907922116
    assert values[("port_xmit_wait", "mlx5_1", "1")] == 4294967295
    assert values[("port_state", "mlx5_0", "1")] == 4 and values[("rate_gbps", "mlx5_bond_0", "1")] == 200
    assert values[("np_cnp_sent", "mlx5_bond_0", "1")] == 1052612505
    assert values[("rx_discards_phy", "mlx5_bond_0", "1")] == 0
    assert ("rx_packets", "mlx5_bond_0", "1") not in values, "the netdev's rx_packets is not the IB port's"
    assert values[("optics_temp_c", "mlx5_bond_0", "")] == 33.76
    assert values[("qp_count", "mlx5_0", "")] == 12
    assert values[("gpu_power_w", "gpu0", "")] == 612.412
    assert values[("gpu_xid_last", "gpu0", "")] == 79
    assert ("gpu_ecc_volatile_uncorrected", "gpu1", "") not in values  # NOT_SUPPORTED: no value
    assert ("lifespan", "mlx5_0", "1") not in values  # a config file, not a metric
    assert {metric for metric, _, _ in values} <= set(METRICS)


def test_other_major_schema_is_refused(real_line: dict[str, Any]) -> None:
    for other in ("fleet-agent/1", "fleet-agent/3"):
        with pytest.raises(AgentLineError, match=f"schema {other} is not supported: this fleet reads fleet-agent/2"):
            decode_agent_line(json.dumps({**real_line, "schema": other}))
    assert decode_agent_line(json.dumps({**real_line, "schema": "fleet-agent/2.3", "new_field": [1]})).seq == 0


@pytest.mark.parametrize(("text", "reason"), [
    ("{", "not JSON"),
    ("[1]", "expected a JSON object"),
    ('{"schema": "node_exporter"}', "not a fleet agent line"),
])
def test_garbage_is_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(AgentLineError, match=reason):
        decode_agent_line(text)


def test_wrong_types_name_the_field(real_line: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(real_line))
    broken["ports"][1]["counters"]["port_xmit_data"] = "12"
    with pytest.raises(AgentLineError, match=r"ports\[1\]\.counters\.port_xmit_data: expected an integer"):
        decode_agent_line(json.dumps(broken))
    broken = {**real_line, "seq": 1.5}
    with pytest.raises(AgentLineError, match="seq: expected int"):
        decode_agent_line(json.dumps(broken))
    missing = {key: value for key, value in real_line.items() if key != "host"}
    with pytest.raises(AgentLineError, match="host: missing"):
        decode_agent_line(json.dumps(missing))


def test_lost_gpu_keeps_its_error(real_line: dict[str, Any]) -> None:
    line = decode_agent_line(json.dumps({**real_line, "gpus": [{"index": 3, "error": "NVML_ERROR_GPU_IS_LOST"}]}))
    assert line.gpus[0].error == "NVML_ERROR_GPU_IS_LOST"
    assert all(value is None for value in line.gpus[0].values.values())
    assert not [key for key in host_sample(line).values if key[1] == "gpu3"]
