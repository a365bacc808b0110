"""rdma statistic show: one long line per port, qp counters, JSON, newer fields."""

from __future__ import annotations

import json
from pathlib import Path

from fleet.collectors.parsers.rdma_statistic import parse_rdma_statistic

FIXTURES = Path(__file__).parents[2] / "fixtures" / "rdma"


def test_four_mlx5_ports_with_errors_on_mlx5_0() -> None:
    r = parse_rdma_statistic((FIXTURES / "cn-notes-rdma-statistic-show-4x-mlx5-errors.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    assert [(p.device, p.port) for p in r.ports] == [("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_2", 1), ("mlx5_3", 1)]
    c = r.ports[0].counters
    assert len(c) == 29 and r.ports[0].attributes == {}
    assert (c["out_of_buffer"], c["resp_cqe_error"], c["req_cqe_error"]) == (135, 1009, 22)
    assert (c["resp_cqe_flush_error"], c["req_cqe_flush_error"], c["np_cnp_sent"]) == (998, 11, 0)
    assert all(v == 0 for v in r.ports[3].counters.values())


def test_qp_counters_with_identity_fields_and_continuation() -> None:
    text = "link mlx5_2/1 cntn 4 qp-type RC pid 30818 comm ib_send_bw rx_write_requests 0 out_of_sequence 3\n    LQPN: <178>\n"
    (p,) = parse_rdma_statistic(text).ports
    assert p.counters == {"rx_write_requests": 0, "out_of_sequence": 3}
    assert p.attributes == {"cntn": "4", "qp-type": "RC", "pid": "30818", "comm": "ib_send_bw", "LQPN": "<178>"}


def test_json() -> None:
    doc = [{"ifindex": 0, "ifname": "mlx5_0", "port": 1, "out_of_buffer": 5, "np_cnp_sent": 7}]
    r = parse_rdma_statistic(json.dumps(doc))
    assert r.json and r.problems == ()
    assert r.ports[0].device == "mlx5_0" and r.ports[0].counters == {"out_of_buffer": 5, "np_cnp_sent": 7}


def test_newer_version_section_label_and_new_counters_are_kept() -> None:
    text = "link mlx5_0/1 out_of_buffer 1 cc_rx_ce_pkts 4\n    Optional-set: cc_tx_cnp_pkts 2\n"
    (p,) = parse_rdma_statistic(text).ports
    assert p.counters == {"out_of_buffer": 1, "cc_rx_ce_pkts": 4, "cc_tx_cnp_pkts": 2}


def test_qp_listing_is_not_statistics() -> None:
    r = parse_rdma_statistic((FIXTURES / "iproute2-rdma-res-show-qp-kernel-qps-mlx5-hns.txt").read_text())
    assert r.ports == () and r.unknown_lines == 7
