"""Small NodeView/NicView/SwitchView builders for the network renderer tests.

Values are chosen to look like a ConnectX-7 on a 400G fabric; each test
overrides what it checks with ``dataclasses.replace``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fleet.fabric.counters import IB_SATURATING_COUNTER_BITS
from fleet.simulator.optics_modules import MODULE_TYPES
from fleet.simulator.state import (
    GidView,
    LldpNeighbor,
    NicView,
    NodeView,
    OpticsLane,
    OpticsView,
    QpView,
    SwitchPortView,
    SwitchView,
)
from fleet.simulator.tools import ToolContext
from fleet.simulator.tools.ethtool import mlx5_ethtool_counter_names
from fleet.simulator.tools.rdma import mlx5_hw_counter_names
from fleet.simulator.tools.sysfs import ib_port_counter_names

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def fixture(kind: str, name: str) -> str:
    """A real capture copied into tests/fixtures."""
    return (FIXTURES / kind / name).read_text()


def make_optics(
    lanes: int = 4, rx_mw: float = 0.9, identifier: str = "0x18 (QSFP-DD)"
) -> OpticsView:
    return OpticsView(
        identifier=identifier,
        vendor_name="NVIDIA",
        vendor_pn="MMA4Z00-NS400",
        vendor_sn="MT2330FT0123",
        temp_c=44.5,
        voltage_v=3.2951,
        lanes=tuple(
            OpticsLane(rx_power_mw=rx_mw - 0.01 * i, tx_power_mw=1.1 + 0.01 * i, tx_bias_ma=7.5)
            for i in range(lanes)
        ),
        rx_power_thresholds_dbm=MODULE_TYPES[0].rx_power_dbm,
        tx_power_thresholds_dbm=MODULE_TYPES[0].tx_power_dbm,
        bias_thresholds_ma=MODULE_TYPES[0].bias_ma,
        temp_thresholds_c=MODULE_TYPES[0].temp_c,
        voltage_thresholds_v=MODULE_TYPES[0].voltage_v,
    )


def make_nic(rail: int = 0, *, link_layer: str = "Ethernet", **changes: object) -> NicView:
    """One NIC of rail ``rail`` with every counter the renderers know, numbered so each differs."""
    is_ib = link_layer == "InfiniBand"
    mac = f"b8:3f:d2:a0:{rail:02x}:10"
    # Error counters stay below the maximum of their IBA width (they cannot pass it, and at it
    # they would read as saturated).
    counters = {
        name: (1000 * (i + 1) + rail) % (2 ** IB_SATURATING_COUNTER_BITS.get(name, 64) - 1)
        for i, name in enumerate(ib_port_counter_names())
    }
    hw = {name: 10 * (i + 1) + rail for i, name in enumerate(mlx5_hw_counter_names(link_layer))}
    ethtool = {name: i * 7 + rail for i, name in enumerate(mlx5_ethtool_counter_names())}
    ip = f"10.{rail}.0.1"
    mapped = (
        "0000:0000:0000:0000:0000:ffff:"
        + "".join(f"{int(o):02x}" for o in ip.split(".")[:2])
        + ":"
        + "".join(f"{int(o):02x}" for o in ip.split(".")[2:])
    )
    netdev = f"ibp{24 + rail}s0" if is_ib else f"ens{rail + 1}np0"
    gids = (
        ()
        if is_ib
        else (
            GidView(0, f"fe80:0000:0000:0000:ba3f:d2ff:fea0:{rail:02x}10", "", "v1", netdev),
            GidView(1, f"fe80:0000:0000:0000:ba3f:d2ff:fea0:{rail:02x}10", "", "v2", netdev),
            GidView(2, mapped, ip, "v1", netdev),
            GidView(3, mapped, ip, "v2", netdev),
        )
    )
    nic = NicView(
        name=f"mlx5_{rail}",
        port=1,
        rail=rail,
        netdev=netdev,
        link_layer=link_layer,
        state="ACTIVE",
        phys_state="LinkUp",
        rate_gbps=400,
        width="4X",
        speed_name="NDR" if is_ib else "",
        hca_type="MT4129",
        fw_version="28.39.1002",
        board_id="MT_0000000838",
        node_guid=f"0xa088c20300e1e2{rail:02x}",
        port_guid=f"0xa088c20300e1e2{rail:02x}",
        sys_image_guid=f"0xa088c20300e1e2{rail:02x}",
        lid=100 + rail if is_ib else 0,
        sm_lid=1 if is_ib else 0,
        mac=mac,
        mtu=4096,
        counters=counters,
        hw_counters=hw,
        ethtool=ethtool,
        optics=make_optics(),
        gids=gids,
        qps=(
            QpView(1, 0, "GSI", "RTS", 0, "[ib_core]"),
            QpView(300 + rail, 400 + rail, "RC", "RTS", 4242, "python3", sq_psn=1234, rq_psn=5678),
        ),
        lldp=LldpNeighbor(
            switch=f"leaf{rail + 1:02d}",
            switch_port="swp1",
            chassis_mac=f"9c:63:c0:3a:23:{rail:02x}",
            mgmt_ip=f"192.168.0.{rail + 10}",
            port_descr="swp1",
            system_descr="Cumulus Linux version 5.9.1 running on Nvidia SN5600",
        ),
    )
    return replace(nic, **changes)  # type: ignore[arg-type]


def make_node(nics: int = 8, *, link_layer: str = "Ethernet", name: str = "gpu001") -> NodeView:
    return NodeView(
        name=name,
        hostname_fqdn=f"{name}.cluster.local",
        kernel="5.15.0-105-generic",
        driver_version="535.161.08",
        cuda_version="12.2",
        ofed_version="MLNX_OFED_LINUX-23.10-1.1.9.0",
        mgmt_ip="10.255.0.1",
        nics=tuple(make_nic(r, link_layer=link_layer) for r in range(nics)),
        gpus=(),
    )


def make_switch(name: str = "leaf01", peers: tuple[tuple[str, str], ...] = ()) -> SwitchView:
    """A switch whose port ``swpN`` reaches ``peers[N-1]`` = (system name, its port)."""
    ports = tuple(
        SwitchPortView(
            name=f"swp{i}",
            alias="",
            speed_gbps=400,
            oper_up=True,
            admin_up=True,
            mtu=9216,
            rx_bytes=0,
            tx_bytes=0,
            rx_packets=0,
            tx_packets=0,
            rx_drops=0,
            tx_drops=0,
            rx_errors=0,
            tx_errors=0,
            rx_pfc_pause=(0,) * 8,
            tx_pfc_pause=(0,) * 8,
            ecn_marked=0,
            queue_drops=(0,) * 8,
            rx_bps=0.0,
            tx_bps=0.0,
            lldp=LldpNeighbor(
                switch=peer, switch_port=port, chassis_mac="b8:3f:d2:a0:00:10", mgmt_ip="10.255.0.1"
            ),
        )
        for i, (peer, port) in enumerate(peers, 1)
    )
    return SwitchView(
        name=name,
        os="cumulus",
        role="leaf",
        version="5.9.1",
        mgmt_ip="192.168.0.10",
        chassis_mac="9c:63:c0:3a:23:00",
        ports=ports,
        hash_seed=1,
        ecmp_hash_fields=(),
        adaptive_routing=False,
    )


def node_ctx(
    node: NodeView, *, nodes: tuple[NodeView, ...] = (), switches: tuple[SwitchView, ...] = ()
) -> ToolContext:
    everyone = nodes or (node,)
    return ToolContext(
        hostname=node.name,
        now=1_764_435_600.0,
        node=node,
        all_nodes=lambda: everyone,
        all_switches=lambda: switches,
    )


def switch_ctx(switch: SwitchView, *, nodes: tuple[NodeView, ...] = ()) -> ToolContext:
    return ToolContext(
        hostname=switch.name, now=1_764_435_600.0, switch=switch, all_nodes=lambda: nodes
    )
