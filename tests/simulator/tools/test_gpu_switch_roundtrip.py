"""parse(render(view)) gives back the view's numbers: renderers and collectors' parsers agree."""

from __future__ import annotations

import pytest
from builders_gpu import (
    head_ctx,
    make_gpu,
    make_job,
    make_node,
    make_port,
    make_switch,
    node_ctx,
    switch_ctx,
)

from fleet.collectors.parsers.nccl import parse_nccl
from fleet.collectors.parsers.nvidia_smi import parse_nvidia_smi_query
from fleet.collectors.parsers.nvidia_smi_nvlink import parse_nvidia_smi_nvlink
from fleet.collectors.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from fleet.collectors.parsers.perftest import parse_perftest
from fleet.collectors.parsers.slurm import parse_scontrol_job, parse_squeue, parse_squeue_json
from fleet.collectors.parsers.switch_nvue import parse_nvue_counters
from fleet.collectors.parsers.switch_sonic import (
    parse_sonic_counters,
    parse_sonic_pfc,
    parse_sonic_queue,
)
from fleet.simulator.tools.nccl_format import NcclParams, NcclRank, format_all_reduce_perf, make_row
from fleet.simulator.tools.nvidia_smi import nvidia_smi
from fleet.simulator.tools.nvue import nv
from fleet.simulator.tools.perftest_format import (
    BwRow,
    LatRow,
    PerftestEndpoint,
    PerftestParams,
    format_bw_client,
    format_lat_client,
    format_server,
)
from fleet.simulator.tools.slurm import scontrol, squeue
from fleet.simulator.tools.sonic import show

QUERY = (
    "index,uuid,name,pci.bus_id,utilization.gpu,memory.used,memory.total,temperature.gpu,"
    "power.draw,power.limit,clocks.sm,clocks.max.sm,clocks_event_reasons.active,"
    "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,pcie.replay_counter"
)


@pytest.mark.parametrize("fmt", ["csv", "csv,noheader,nounits"])
def test_nvidia_smi_query(fmt: str) -> None:
    node = make_node(gpus=(make_gpu(0), make_gpu(1, util_pct=0, throttle_reasons=0x8, temp_c=88)))
    out = nvidia_smi(
        node_ctx(node), ["nvidia-smi", f"--query-gpu={QUERY}", f"--format={fmt}"]
    ).stdout
    columns = QUERY.split(",") if "noheader" in fmt else None
    parsed = parse_nvidia_smi_query(out, columns)
    assert not parsed.problems
    for gpu, got in zip(node.gpus, parsed.gpus, strict=True):
        assert got.index == gpu.index and got.uuid == gpu.uuid and got.name == gpu.name
        assert got.pci_bus_id == gpu.pci_bus_id
        assert got.utilization_gpu_pct == gpu.util_pct
        assert (got.mem_used_mib, got.memory_total_mib) == (gpu.mem_used_mib, gpu.mem_total_mib)
        assert got.temperature_gpu_c == gpu.temp_c
        assert got.power_w == pytest.approx(gpu.power_w, abs=0.005)
        assert got.power_limit_w == gpu.power_limit_w
        assert (got.clocks_sm_mhz, got.clocks_max_sm_mhz) == (
            gpu.sm_clock_mhz,
            gpu.max_sm_clock_mhz,
        )
        assert got.clocks_event_reasons == gpu.throttle_reasons
        assert got.ecc_uncorrected_volatile == gpu.ecc_volatile_uncorrected
        assert got.ecc_uncorrected_aggregate == gpu.ecc_aggregate_uncorrected
        assert got.pcie_replays == gpu.pcie_replay


def test_nvidia_smi_topo() -> None:
    out = nvidia_smi(node_ctx(make_node()), ["nvidia-smi", "topo", "-m"]).stdout
    parsed = parse_nvidia_smi_topo(out)
    assert not parsed.problems
    assert [d.label for d in parsed.devices] == [f"GPU{i}" for i in range(8)] + [
        f"NIC{i}" for i in range(8)
    ]
    nics = {d.label: d.device for d in parsed.devices if d.kind == "nic"}
    assert nics["NIC3"] == "mlx5_3"
    links = {(link.src, link.dst): link.connection for link in parsed.links}
    assert links[("GPU0", "GPU1")] == "NV18" and links[("GPU2", "NIC2")] == "PIX"
    assert links[("GPU0", "NIC7")] == "SYS"
    gpu4 = next(d for d in parsed.devices if d.label == "GPU4")
    assert (gpu4.cpu_affinity, gpu4.numa_affinity) == ("56-111,168-223", "1")


def test_nvidia_smi_nvlink_errors() -> None:
    node = make_node(gpus=(make_gpu(0), make_gpu(1, nvlink_crc_errors=(7,) * 18)))
    parsed = parse_nvidia_smi_nvlink(
        nvidia_smi(node_ctx(node), ["nvidia-smi", "nvlink", "-e"]).stdout
    )
    assert not parsed.problems
    assert [g.index for g in parsed.gpus] == [0, 1]
    for gpu, got in zip(node.gpus, parsed.gpus, strict=True):
        assert len(got.links) == 18
        for link in got.links:
            errors = dict(link.errors)
            assert errors["crc_errors"] == gpu.nvlink_crc_errors[link.link]
            assert errors["replay_errors"] == gpu.nvlink_replay_errors[link.link]
            assert errors["recovery_errors"] == gpu.nvlink_recovery_errors[link.link]


ROCE = PerftestParams(
    device="mlx5_3",
    link_type="Ethernet",
    mtu_bytes=4096,
    gid_index=3,
    local=(PerftestEndpoint(0, 0x1A2, 0x123456, 0x2000, 0x7F0000001000, "::ffff:10.1.3.1"),),
    remote=(PerftestEndpoint(0, 0x2B3, 0x654321, 0x3000, 0x7F0000002000, "::ffff:10.1.3.2"),),
    report_gbits=True,
)


def test_perftest_latency() -> None:
    rows = [
        LatRow(2, 1000, 1.61, 4.02, 1.66, 1.68, 0.05, 1.92, 4.02),
        LatRow(4096, 1000, 2.9, 7.1, 3.0, 3.02, 0.1, 3.4, 7.1),
    ]
    parsed = parse_perftest(format_lat_client("ib_send_lat", ROCE, rows))
    assert not parsed.problems
    assert (parsed.test_type, parsed.role, parsed.device, parsed.link_type) == (
        "lat",
        "client",
        "mlx5_3",
        "Ethernet",
    )
    assert (parsed.mtu_bytes, parsed.gid_index, parsed.tx_depth) == (4096, 3, 1)
    got = [
        (
            r.bytes,
            r.iterations,
            r.t_min_usec,
            r.t_max_usec,
            r.t_typical_usec,
            r.t_avg_usec,
            r.t_stdev_usec,
            r.p99_usec,
            r.p999_usec,
        )
        for r in parsed.lat_rows
    ]
    want = [
        (
            r.size_bytes,
            r.iterations,
            r.t_min_usec,
            r.t_max_usec,
            r.t_typical_usec,
            r.t_avg_usec,
            r.t_stdev_usec,
            r.p99_usec,
            r.p999_usec,
        )
        for r in rows
    ]
    assert got == want


@pytest.mark.parametrize("gbits", [True, False])
def test_perftest_bandwidth(gbits: bool) -> None:
    rows = [BwRow(65536, 5000, 391.2, 390.5, 0.744), BwRow(1048576, 5000, 392.0, 391.9, 0.0467)]
    params = PerftestParams(
        **{**{f: getattr(ROCE, f) for f in ROCE.__slots__}, "report_gbits": gbits}
    )
    parsed = parse_perftest(format_bw_client("ib_write_bw", params, rows))
    assert not parsed.problems
    assert parsed.bw_unit == ("Gb/sec" if gbits else "MB/sec")
    assert parsed.local is not None and parsed.local.qpn == "0x01a2"
    for got, want in zip(parsed.bw_rows, rows, strict=True):
        assert got.bytes == want.size_bytes
        assert got.bw_avg_gbps == pytest.approx(want.bw_avg_gbps, rel=1e-3)
        assert got.bw_peak_gbps == pytest.approx(want.bw_peak_gbps, rel=1e-3)
        assert got.msg_rate_mpps == want.msg_rate_mpps


def test_perftest_server_role() -> None:
    parsed = parse_perftest(format_server("ib_send_lat", ROCE, lat_rows=[]))
    assert parsed.role == "server" and parsed.tx_depth is None


def test_nccl() -> None:
    ranks = tuple(
        NcclRank(
            r,
            3000 + r,
            f"gpu00{1 + r // 8}",
            r % 8,
            f"00000000:{0x18 + r:02X}:00.0",
            "NVIDIA H100 80GB HBM3",
        )
        for r in range(16)
    )
    rows = [
        make_row(1 << s, 16, 20.0 + (1 << s) / 4e5, 21.0 + (1 << s) / 4e5) for s in range(3, 34, 2)
    ]
    text = format_all_reduce_perf(
        NcclParams(n_gpus=1, min_bytes=8, max_bytes=1 << 33, ranks=ranks), rows
    )
    parsed = parse_nccl(text)
    assert not parsed.problems
    assert (parsed.n_gpus, parsed.min_bytes, parsed.max_bytes) == (1, 8, 1 << 33)
    assert [r.host for r in parsed.ranks] == [r.host for r in ranks]
    assert parsed.ranks[1].pci_bus_id == "0000:19:00"
    for got, want in zip(parsed.rows, rows, strict=True):
        assert (got.size_bytes, got.count_elements) == (want.size_bytes, want.count)
        assert got.oop_busbw_gbytes_s == pytest.approx(want.out_busbw_gbs, abs=0.005)
        assert got.ip_busbw_gbytes_s == pytest.approx(want.in_busbw_gbs, abs=0.005)
    assert parsed.out_of_bounds == 0 and parsed.out_of_bounds_ok
    assert parsed.avg_busbw_gbytes_s is not None


def test_squeue_json_and_tables() -> None:
    jobs = (make_job(1001), make_job(1002, state="PENDING", user="bob", nodes="", node_count=2))
    ctx = head_ctx(*jobs)
    parsed = parse_squeue_json(squeue(ctx, ["squeue", "--json"]).stdout)
    assert not parsed.problems and parsed.plugin == "data_parser/v0.0.40"
    first = parsed.jobs[0]
    assert (first.job_id, first.user_name, first.account, first.job_state) == (
        1001,
        "alice",
        "acme",
        "RUNNING",
    )
    assert first.nodes == tuple(f"gpu{i:03d}" for i in range(1, 9))
    assert (first.time_limit_min, first.start_time_s) == (2880, int(jobs[0].start_time))
    assert parsed.jobs[1].job_state == "PENDING" and parsed.jobs[1].state_reason == "Resources"
    fmt = "%i %u %a %T %D %R"
    table = parse_squeue(
        squeue(ctx, ["squeue", "-h", "-o", fmt]).stdout,
        ["JOBID", "USER", "ACCOUNT", "STATE", "NODES", "NODELIST(REASON)"],
    )
    assert [(r.job_id, r.user, r.account, r.state, r.node_count) for r in table.jobs] == [
        ("1001", "alice", "acme", "RUNNING", 8),
        ("1002", "bob", "acme", "PENDING", 2),
    ]
    assert table.jobs[0].nodes == first.nodes and table.jobs[1].reason == "Resources"
    default = parse_squeue(squeue(ctx, ["squeue"]).stdout)
    assert not default.problems and default.jobs[0].nodelist == "gpu[001-008]"


def test_scontrol_show_job() -> None:
    job = make_job()
    parsed = parse_scontrol_job(scontrol(head_ctx(job), ["scontrol", "show", "job", "1001"]).stdout)
    assert not parsed.problems and len(parsed.jobs) == 1
    got = parsed.jobs[0]
    assert (got.job_id, got.user, got.account, got.job_state) == (
        "1001",
        "alice",
        "acme",
        "RUNNING",
    )
    assert got.nodes == tuple(f"gpu{i:03d}" for i in range(1, 9)) and got.num_nodes == 8
    assert got.time_limit == "2-00:00:00"


def test_nvue_counters_text_and_json() -> None:
    port = make_port("swp7")
    switch = make_switch(ports=(port,))
    for args in (
        ["nv", "show", "interface", "swp7", "counters"],
        ["nv", "show", "interface", "swp7", "counters", "-o", "json"],
    ):
        parsed = parse_nvue_counters(nv(switch_ctx(switch), args).stdout)
        assert not parsed.problems
        values = {(c.section, c.name, c.column): c.value for c in parsed.counters}
        if "json" in args:
            assert values[("", "in-bytes", "")] == port.rx_bytes
            assert values[("", "out-drops", "")] == port.tx_drops
        else:
            assert values[("Detailed Counters", "Total Octets", "Receive")] == port.rx_bytes
            assert values[("Detailed Counters", "Total Packets", "Transmit")] == port.tx_packets
            assert values[("Drop Counters", "Total Drops", "Transmit")] == port.tx_drops
            assert values[("Error Counters", "Total Errors", "Receive")] == port.rx_errors


def test_sonic_counters_pfc_queue() -> None:
    ports = (make_port("Ethernet0"), make_port("Ethernet8", tx_bps=1.5e9, rx_bps=0.0))
    ctx = switch_ctx(make_switch(os="sonic", ports=ports))
    counters = parse_sonic_counters(show(ctx, ["show", "interfaces", "counters"]).stdout)
    assert not counters.problems
    for port, got in zip(ports, counters.ports, strict=True):
        assert (got.interface, got.state, got.rx_ok, got.tx_ok) == (
            port.name,
            "U",
            port.rx_packets,
            port.tx_packets,
        )
        assert (got.rx_drp, got.tx_drp, got.rx_err) == (
            port.rx_drops,
            port.tx_drops,
            port.rx_errors,
        )
        assert got.tx_bytes_per_s == pytest.approx(port.tx_bps / 8, rel=1e-3)  # model: bits/s
    pfc = parse_sonic_pfc(show(ctx, ["show", "pfc", "counters"]).stdout)
    assert not pfc.problems
    rx = {r.interface: r.pfc_frames for r in pfc.rows if r.direction == "rx"}
    tx = {r.interface: r.pfc_frames for r in pfc.rows if r.direction == "tx"}
    assert rx["Ethernet0"] == ports[0].rx_pfc_pause and tx["Ethernet8"] == ports[1].tx_pfc_pause
    queue = parse_sonic_queue(show(ctx, ["show", "queue", "counters"]).stdout)
    assert not queue.problems
    drops = {(r.interface, r.queue): r.drop_pkts for r in queue.rows}
    assert drops[("Ethernet8", "UC3")] == ports[1].queue_drops[3]
    assert len(queue.rows) == 2 * 16
