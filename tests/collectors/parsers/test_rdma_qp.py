"""rdma resource show qp: upstream and MLNX text, -dd driver QPs, -j JSON (broken ones too)."""

from __future__ import annotations

import json
from pathlib import Path

from fleet.collectors.parsers.rdma_qp import parse_rdma_qp

FIXTURES = Path(__file__).parents[2] / "fixtures" / "rdma"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_upstream_kernel_qps_bracketed_owner() -> None:
    r = parse_rdma_qp(_read("iproute2-rdma-res-show-qp-kernel-qps-mlx5-hns.txt"))
    assert r.problems == () and r.unknown_lines == 0 and not r.json
    assert [q.device for q in r.qps] == ["mlx5_0", "mlx5_1", "mlx5_2", "hns_0", "hns_1", "hns_2", "hns_3"]
    q = r.qps[3]
    assert (q.port, q.lqpn, q.type, q.state, q.sq_psn, q.comm, q.pid, q.kernel) == (1, 1, "GSI", "RTS", 0, "ib_core", None, True)


def test_mlnx_ofed_owner_without_brackets() -> None:
    r = parse_rdma_qp(_read("cn-notes-rdma-resource-show-qp-mlnx-ofed.txt"))
    assert r.problems == () and len(r.qps) == 8
    assert {q.comm for q in r.qps} == {"ib_core"} and all(q.kernel for q in r.qps)
    assert [(q.lqpn, q.type) for q in r.qps if q.device == "mlx5_1"] == [(1, "GSI"), (2309, "UD")]
    assert r.count_by_device()[("mlx5_3", 1)] == 2


def test_dd_driver_qp_with_subtype() -> None:
    r = parse_rdma_qp(_read("cmeiohas-rdma-res-show-qp-dd-mlx5-umr.txt"))
    assert r.problems == () and len(r.qps) == 4
    umr = r.qps[1]
    assert (umr.device, umr.lqpn, umr.type, umr.subtype, umr.state, umr.comm) == (
        "ibp8s0f1", 465, "DRIVER", "REG_UMR", "RTS", "mlx5_ib",
    )  # fmt: skip
    assert [q.type for q in r.qps] == ["UD", "DRIVER", "SMI", "GSI"]


def test_user_qp_with_pid_and_all_fields() -> None:
    line = "link mlx5_0/1 lqpn 1234 rqpn 77 type RC state RTS rq-psn 5 sq-psn 6 path-mig-state MIGRATED pdn 3 pid 4242 comm ib_send_bw\n"
    (q,) = parse_rdma_qp(line).qps
    assert (q.rqpn, q.rq_psn, q.sq_psn, q.path_mig_state, q.pdn, q.pid, q.comm, q.kernel) == (
        77, 5, 6, "MIGRATED", 3, 4242, "ib_send_bw", False,
    )  # fmt: skip


def test_json_list() -> None:
    doc = [
        {"ifindex": 0, "ifname": "mlx5_0", "port": 1, "lqpn": 1, "type": "GSI", "state": "RTS", "sq-psn": 0, "comm": "ib_core"},
        {"ifindex": 0, "ifname": "mlx5_0", "port": 1, "lqpn": 4711, "rqpn": 4712, "type": "RC", "state": "RTS",
         "rq-psn": 9, "sq-psn": 8, "pdn": 5, "pid": 999, "comm": "python3"},
    ]  # fmt: skip
    r = parse_rdma_qp(json.dumps(doc))
    assert r.json and r.problems == ()
    assert [(q.lqpn, q.kernel) for q in r.qps] == [(1, True), (4711, False)]
    assert (r.qps[1].rqpn, r.qps[1].pid, r.qps[1].comm) == (4712, 999, "python3")


def test_pretty_dd_json_with_anonymous_driver_object_is_repaired() -> None:
    r = parse_rdma_qp(_read("hns-rdma-res-show-qp-jp-dd-after-fix.txt"))
    assert r.json and r.unknown_lines == 0
    assert [p.reason for p in r.problems] == [
        "output is not valid JSON; salvaging object by object",
        "non-standard JSON (anonymous driver object) repaired",
    ]
    (q,) = r.qps
    assert (q.device, q.port, q.lqpn, q.type, q.comm) == ("hns_2", 1, 1, "GSI", "ib_core")
    assert q.attributes == {
        "drv_sq_wqe_cnt": "128", "drv_sq_max_gs": "2", "drv_rq_wqe_cnt": "512",
        "drv_rq_max_gs": "1", "drv_ext_sge_sge_cnt": "256",
    }  # fmt: skip


def test_broken_json_and_assertion_keep_the_qp_and_list_the_rest() -> None:
    r = parse_rdma_qp(_read("hns-rdma-res-show-qp-jp-dd-before-fix-broken.txt"))
    (q,) = r.qps
    assert (q.device, q.lqpn, q.type, q.state) == ("hns_1", 1, "GSI", "RTS")
    assert r.unknown_lines == 6  # four stray driver fields, the assertion, "Aborted (core dumped)"
    texts = [p.text for p in r.problems]
    assert '"drv_sq_wqe_cnt": 128,' in texts and "Aborted (core dumped)" in texts
    assert any("jsonw_end: Assertion" in t for t in texts)


def test_newer_version_extra_fields_are_kept() -> None:
    line = "link mlx5_0/1 lqpn 9 type RC state RTS sq-psn 0 comm [ib_core] ece 0x0 drv_new_field 7\n    drv_cont 3\n"
    (q,) = parse_rdma_qp(line).qps
    assert q.attributes == {"ece": "0x0", "drv_new_field": "7", "drv_cont": "3"}


def test_statistics_lines_are_not_qps() -> None:
    r = parse_rdma_qp(_read("cn-notes-rdma-statistic-show-4x-mlx5-errors.txt"))
    assert r.qps == () and r.unknown_lines == 4
