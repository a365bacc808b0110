"""A node without RDMA devices or an NVIDIA driver shows what it is, and the fleet fills in visibly."""

from __future__ import annotations

from fleet.console.snapshot import Snapshot
from fleet.console.view_model import build_view
from fleet.fabric.health import Health
from fleet.fabric.node_hardware import hardware_info
from fleet.fabric.records import HostRecord, HostStatus
from fleet.fabric.states import HostState

CPU_NODE = hardware_info((), None, 64, 512 << 30, "eno1 up 25 Gb/s")
GPU_NODE_NO_RDMA = hardware_info((), "535.183.01", 224, 2 << 40, "eno1 up 25 Gb/s")


def _snapshot(statuses: dict[str, HostState], info: dict[str, dict[str, str]],
              values: dict[str, dict[tuple[str, str, str], float]] | None = None) -> Snapshot:
    hosts = tuple(HostRecord(name, "node", info=info.get(name, {})) for name in statuses)
    return Snapshot(moment_ts=100.0, live=True, hosts=hosts,
                    statuses={name: HostStatus(name, state, 90.0) for name, state in statuses.items()},
                    values=values or {}, error_deltas={}, jobs=(), events=(), ports=(), newest_sample_ts=99.0,
                    node_names=tuple(statuses))


def test_a_cpu_node_is_ok_and_says_what_it_is() -> None:
    view = build_view(_snapshot({"login01": HostState.OK, "gpu001": HostState.OK},
                                {"login01": CPU_NODE}))
    rows = {row.name: row for row in view.rows}
    assert rows["login01"].health is Health.OK
    assert rows["login01"].state == "no RDMA devices, no NVIDIA driver"
    assert rows["gpu001"].state == "no data", "facts not read yet: nothing to say but that"


def test_a_gpu_node_without_rdma_is_judged_by_its_gpus_and_says_so() -> None:
    values = {"gpu002": {("gpu_temp_c", "gpu0", ""): 60.0, ("gpu_util_pct", "gpu0", ""): 90.0}}
    view = build_view(_snapshot({"gpu002": HostState.OK}, {"gpu002": GPU_NODE_NO_RDMA}, values))
    row = view.rows[0]
    assert (row.health, row.state) == (Health.OK, "no RDMA devices")


def test_a_collection_failure_still_tells_the_story() -> None:
    view = build_view(_snapshot({"login01": HostState.UNREACHABLE}, {"login01": CPU_NODE}))
    assert (view.rows[0].health, view.rows[0].state) == (Health.DOWN, "unreachable")


def test_connecting_counts_nodes_until_their_first_answer() -> None:
    view = build_view(_snapshot({"gpu001": HostState.CONNECTING, "gpu002": HostState.CONNECTING,
                                 "gpu003": HostState.OK}, {}))
    assert view.summary.connecting == 2
    assert {row.state for row in view.rows if row.name != "gpu003"} == {"connecting"}
