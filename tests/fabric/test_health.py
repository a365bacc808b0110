"""Node health classification: each rule on its own, and collection failures first."""

from __future__ import annotations

from fleet.fabric.health import Health, HealthThresholds, classify, summarize_node
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState

OK = HostStatus("gpu001", HostState.OK, 0.0)


def nic(device: str, **metrics: float) -> dict[tuple[str, str, str], float]:
    base = {"port_state": 4.0, "rate_gbps": 400.0, "rx_gbps": 300.0, "tx_gbps": 310.0}
    base.update(metrics)
    return {(m, device, "1"): v for m, v in base.items()}


def healthy_node() -> dict[tuple[str, str, str], float]:
    values: dict[tuple[str, str, str], float] = {}
    for rail in range(8):
        values.update(nic(f"mlx5_{rail}"))
        for lane in range(4):
            values[("optics_rx_power_dbm", f"mlx5_{rail}", f"L{lane}")] = -2.0
    for gpu in range(8):
        values[("gpu_util_pct", f"gpu{gpu}", "")] = 95.0
        values[("gpu_temp_c", f"gpu{gpu}", "")] = 60.0
    values[("host_up", "", "")] = 1.0
    return values


def test_a_healthy_node_is_ok_and_its_busiest_nic_is_named() -> None:
    values = healthy_node()
    values[("tx_gbps", "mlx5_5", "1")] = 390.0
    result = classify(OK, summarize_node(values))
    assert result.health is Health.OK
    assert result.reasons == ()
    assert result.worst_nic == "mlx5_5"


def test_summary_adds_rates_over_nics_and_averages_gpus() -> None:
    values = healthy_node()
    values[("qp_count", "mlx5_0", "")] = 9.0  # device-wide values sit at port ""
    values[("optics_temp_c", "mlx5_0", "")] = 45.0
    summary = summarize_node(values)
    assert summary.nics[0].qp_count == 9.0
    assert summary.rx_gbps == 8 * 300.0
    assert summary.gpu_util_pct == 95.0
    assert summary.worst_rx_dbm == -2.0
    assert len(summary.nics) == 8 and len(summary.gpus) == 8


def test_collection_failures_are_down_with_the_reason() -> None:
    for state in (HostState.UNREACHABLE, HostState.AUTH_FAILED, HostState.HOST_KEY_MISMATCH):
        status = HostStatus("gpu001", state, 0.0, "why")
        result = classify(status, summarize_node(healthy_node()))
        assert result.health is Health.DOWN
        assert result.reasons == (f"{state.value}: why",)


def test_connecting_without_data_is_unknown() -> None:
    result = classify(HostStatus("gpu001", HostState.CONNECTING, 0.0), summarize_node({}))
    assert result.health is Health.UNKNOWN
    assert classify(None, summarize_node({})).reasons == ("no data",)


def test_each_nic_problem_degrades_and_names_the_nic() -> None:
    cases = {
        "port_state": ({("port_state", "mlx5_3", "1"): 1.0}, "port not active"),
        "rate": ({("rate_gbps", "mlx5_3", "1"): 200.0}, "trained at 200"),
        "optics": ({("optics_rx_power_dbm", "mlx5_3", "L2"): -8.5}, "margin 1.5 dB"),
        "optics below peers": ({("optics_rx_power_dbm", "mlx5_3", "L2"): -5.5}, "3.5 dB below the node's other NICs"),
        "pauses": ({("rx_pause_per_s", "mlx5_3", "1"): 5000.0}, "5,000 PFC pauses/s"),
        "ecn": ({("ecn_marked_per_s", "mlx5_3", "1"): 500.0}, "DCQCN not working"),
        "ber": ({("pre_fec_ber", "mlx5_3", "1"): 3e-5}, "pre-FEC BER"),
        "errors": ({("errors_per_s", "mlx5_3", "1"): 2.0}, "errors/s"),
    }
    for name, (change, words) in cases.items():
        values = healthy_node()
        values.update(change)
        result = classify(OK, summarize_node(values))
        assert result.health is Health.DEGRADED, name
        assert result.worst_nic == "mlx5_3", name
        assert any(words in r for r in result.reasons), (name, result.reasons)


def test_error_deltas_split_into_link_errors_and_drops() -> None:
    deltas = {("symbol_error", "mlx5_1", "1"): 3.0, ("out_of_buffer", "mlx5_2", "1"): 50.0}
    summary = summarize_node(healthy_node(), deltas)
    result = classify(OK, summary)
    assert "mlx5_1 +3 link errors" in result.reasons
    assert summary.error_delta == 53.0
    # 50 drops are below the 100-drop threshold: bursts happen
    assert not any("mlx5_2" in r for r in result.reasons)


def test_every_port_down_is_down() -> None:
    values = healthy_node()
    for rail in range(8):
        values[("port_state", f"mlx5_{rail}", "1")] = 1.0
    assert classify(OK, summarize_node(values)).health is Health.DOWN


def test_gpu_problems_degrade() -> None:
    values = healthy_node()
    values[("gpu_xid_last", "gpu3", "")] = 79.0
    values[("gpu_temp_c", "gpu5", "")] = 90.0
    result = classify(OK, summarize_node(values, {("gpu_ecc_volatile_uncorrected", "gpu1", ""): 1.0}))
    assert result.health is Health.DEGRADED
    assert {"gpu3 XID 79", "gpu5 at 90 C", "gpu1 +1 ECC/NVLink errors"} <= set(result.reasons)


def test_a_harmless_xid_is_not_critical() -> None:
    values = healthy_node()
    values[("gpu_xid_last", "gpu3", "")] = 13.0
    assert classify(OK, summarize_node(values)).health is Health.OK


def test_thresholds_are_parameters() -> None:
    values = healthy_node()
    values[("rx_pause_per_s", "mlx5_0", "1")] = 50.0
    assert classify(OK, summarize_node(values)).health is Health.OK
    strict = HealthThresholds(pause_warn_per_s=10.0)
    assert classify(OK, summarize_node(values), strict).health is Health.DEGRADED


def test_host_up_zero_is_down() -> None:
    values = healthy_node()
    values[("host_up", "", "")] = 0.0
    assert classify(OK, summarize_node(values)).health is Health.DOWN
