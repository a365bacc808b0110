"""Small hand-built views for the renderer tests (GPU, node, switch, job).

Plain functions, not fixtures: each test builds exactly the view it checks.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fleet.simulator.state import (
    GpuView,
    JobView,
    LldpNeighbor,
    NicView,
    NodeView,
    SwitchPortView,
    SwitchView,
)
from fleet.simulator.tools import ToolContext

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NOW = 1_780_000_000.25  # 2026-05-28T20:26:40.250Z


def fixture(tool: str, name: str) -> str:
    return (FIXTURES / tool / name).read_text()


def make_gpu(index: int, **changes: object) -> GpuView:
    bus = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB][index % 8]
    gpu = GpuView(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-0000{index:04x}-1111-2222-3333-444455556666",
        pci_bus_id=f"00000000:{bus:02X}:00.0",
        util_pct=97,
        mem_used_mib=70123,
        mem_total_mib=81559,
        temp_c=61,
        power_w=612.3456,
        power_limit_w=700.0,
        sm_clock_mhz=1980,
        max_sm_clock_mhz=1980,
        throttle_reasons=0,
        ecc_volatile_uncorrected=0,
        ecc_aggregate_uncorrected=2,
        xid_last=0,
        xid_count=0,
        pcie_replay=5,
        nvlink_crc_errors=tuple(range(18)),
        nvlink_replay_errors=tuple(2 * i for i in range(18)),
        nvlink_recovery_errors=(0,) * 18,
    )
    return replace(gpu, **changes)  # type: ignore[arg-type]


def make_nic(index: int) -> NicView:
    return NicView(
        name=f"mlx5_{index}",
        port=1,
        rail=index,
        netdev=f"ens{index}np0",
        link_layer="Ethernet",
        state="ACTIVE",
        phys_state="LinkUp",
        rate_gbps=400,
        width="4X",
        speed_name="",
        hca_type="MT4129",
        fw_version="28.39.1002",
        board_id="MT_0000000838",
        node_guid=f"0xa088c20300e1e2{index:02x}",
        port_guid=f"0xa088c20300e1e2{index:02x}",
        sys_image_guid=f"0xa088c20300e1e2{index:02x}",
        lid=0,
        sm_lid=0,
        mac=f"b8:3f:d2:aa:bb:{index:02x}",
        mtu=4096,
        counters={},
        hw_counters={},
        ethtool={},
        optics=None,
        gids=(),
        qps=(),
        lldp=None,
    )


def make_node(n_gpus: int = 8, n_nics: int = 8, **changes: object) -> NodeView:
    node = NodeView(
        name="gpu001",
        hostname_fqdn="gpu001.cluster.local",
        kernel="5.15.0-105-generic",
        driver_version="535.161.08",
        cuda_version="12.2",
        ofed_version="MLNX_OFED_LINUX-23.10-1.1.9.0",
        mgmt_ip="10.0.0.11",
        nics=tuple(make_nic(i) for i in range(n_nics)),
        gpus=tuple(make_gpu(i) for i in range(n_gpus)),
    )
    return replace(node, **changes)  # type: ignore[arg-type]


def make_port(name: str, **changes: object) -> SwitchPortView:
    port = SwitchPortView(
        name=name,
        alias="etp1",
        speed_gbps=400,
        oper_up=True,
        admin_up=True,
        mtu=9216,
        rx_bytes=123_456_789_012,
        tx_bytes=98_765_432_109,
        rx_packets=29_876_543,
        tx_packets=23_456_789,
        rx_drops=7,
        tx_drops=91_786,
        rx_errors=3,
        tx_errors=0,
        rx_pfc_pause=(0, 0, 0, 12_345, 0, 0, 0, 0),
        tx_pfc_pause=(0, 0, 0, 678, 0, 0, 0, 0),
        ecn_marked=4_321,
        queue_drops=(0, 0, 0, 91_786, 0, 0, 0, 0),
        rx_bps=166_931_200_000.0,  # bits/s, as the model gives them
        tx_bps=136_480.0,
        lldp=LldpNeighbor(
            switch="gpu003",
            switch_port="ens2np0",
            chassis_mac="b8:3f:d2:aa:bb:02",
            mgmt_ip="10.0.0.13",
            port_descr="mlx5_2",
            system_descr="Ubuntu 22.04.4 LTS",
        ),
    )
    return replace(port, **changes)  # type: ignore[arg-type]


def make_switch(
    os: str = "cumulus", names: tuple[str, ...] = ("swp1", "swp2"), **changes: object
) -> SwitchView:
    switch = SwitchView(
        name="leaf01",
        os=os,
        role="leaf",
        version="5.9.1" if os == "cumulus" else "SONiC.202311",
        mgmt_ip="10.0.1.1",
        chassis_mac="1c:34:da:00:00:01",
        ports=tuple(make_port(n) for n in names),
        hash_seed=42,
        ecmp_hash_fields=(
            "destination-ip",
            "source-ip",
            "ip-protocol",
            "source-port",
            "destination-port",
        ),
        adaptive_routing=False,
    )
    return replace(switch, **changes)  # type: ignore[arg-type]


def make_job(job_id: int = 1001, **changes: object) -> JobView:
    job = JobView(
        job_id=job_id,
        name="llama-pretrain",
        user="alice",
        account="acme",
        partition="gpu",
        state="RUNNING",
        nodes="gpu[001-008]",
        node_count=8,
        start_time=NOW - 3 * 3600 - 25 * 60 - 7,
        time_limit_min=2 * 24 * 60,
    )
    return replace(job, **changes)  # type: ignore[arg-type]


def node_ctx(node: NodeView) -> ToolContext:
    return ToolContext(hostname=node.name, now=NOW, node=node)


def switch_ctx(switch: SwitchView) -> ToolContext:
    return ToolContext(hostname=switch.name, now=NOW, switch=switch)


def head_ctx(*jobs: JobView) -> ToolContext:
    return ToolContext(hostname="head01", now=NOW, jobs=lambda: tuple(jobs))
