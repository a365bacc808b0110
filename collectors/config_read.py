"""Read every node's and switch's RoCE, PCIe and driver configuration over SSH, on demand.

Why on demand and not in the agent stream: the configuration changes when
someone changes it, not every second; ``fleet check`` (and the console's
Config screen, baselines, acceptance) ask for it. Each node costs two SSH
commands (everything that needs no netdev name, then ``mlnx_qos`` and the
RDMA-CM tools per RoCE NIC); each switch one (SONiC) or two (NVUE: the port
views need the port list). A host that cannot be read is named with its
reason and never stops the others.

Pure reading and parsing here; judging is ``fleet.fabric.config_checks``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fleet.collectors.commands import Command, Glob, command
from fleet.collectors.inventory import CablingRow, Inventory, InventoryHost
from fleet.collectors.parsers.ibv_devinfo import parse_ibv_devinfo
from fleet.collectors.parsers.lsmod import parse_lsmod
from fleet.collectors.parsers.lspci import (
    LspciTree,
    LspciVerbose,
    normalize_bdf,
    parse_lspci_tree,
    parse_lspci_verbose,
)
from fleet.collectors.parsers.mlnx_qos import parse_mlnx_qos
from fleet.collectors.parsers.nvidia_smi import parse_nvidia_smi_query
from fleet.collectors.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from fleet.collectors.parsers.nvue_qos import parse_nvue_show
from fleet.collectors.parsers.ofed_info import parse_ofed_info
from fleet.collectors.parsers.roce_sysfs import (
    parse_cma_roce_mode,
    parse_cma_roce_tos,
    parse_roce_sysfs,
)
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.parsers.sonic_qos import (
    parse_sonic_blocks,
    parse_sonic_config_table,
    parse_sonic_ecn_queues,
    parse_sonic_interfaces_status,
    parse_sonic_pfc_priority,
    parse_sonic_pfcwd_config,
)
from fleet.collectors.parsers.switch_tables import parse_switch_table
from fleet.collectors.probes.nic_checks import netdevs_of
from fleet.collectors.sections import sectioned, split_sections
from fleet.collectors.sshpool import RunResult, SshPool
from fleet.fabric.roce_config import (
    PATH_RANK,
    FleetConfig,
    GpuConfig,
    LinkEnds,
    NicConfig,
    NodeConfig,
    PcieLinkState,
    RailPair,
    SwitchConfig,
    SwitchPortConfig,
)

LOSSLESS_PRIORITY = 3
"""The priority whose ECN/DCQCN switches are read (every priority's are, this one is kept)."""
GPU_QUERY = ("index", "pci.bus_id", "driver_version")
Progress = Callable[[str, str], None]
"""Told each host as it is read: (host, "" or the reason it could not be)."""


def node_command() -> Command:
    """Everything a node's checks need that no netdev name is needed for, in one SSH channel."""
    return sectioned([
        ("devinfo", command("ibv_devinfo")),
        ("gids", command("show_gids")),
        ("net", command("ls", Glob("/sys/class/infiniband/*/device/net"))),
        ("sysfs", command("grep", "-H", ".", Glob("/sys/class/net/*/mtu"),
                          Glob("/sys/class/net/*/ecn/roce_np/enable/*"), Glob("/sys/class/net/*/ecn/roce_rp/enable/*"),
                          Glob("/sys/class/infiniband/*/tc/1/traffic_class"))),
        ("lsmod", command("lsmod")),
        ("ofed", command("ofed_info", "-s")),
        ("kernel", command("uname", "-r")),
        ("gpus", command("nvidia-smi", f"--query-gpu={','.join(GPU_QUERY)}", "--format=csv,noheader")),
        ("topo", command("nvidia-smi", "topo", "-m")),
        ("lspci", command("lspci", "-vvv")),
        ("tree", command("lspci", "-tv")),
    ])  # fmt: skip


def nic_command(netdevs: Mapping[str, str]) -> Command | None:
    """``mlnx_qos`` of every RoCE netdev and RDMA-CM's defaults of its device (``netdevs``: device -> netdev)."""
    parts: list[tuple[str, Command]] = []
    for device, netdev in sorted(netdevs.items()):
        parts += [(f"qos:{device}", command("mlnx_qos", "-i", netdev)),
                  (f"mode:{device}", command("cma_roce_mode", "-d", device, "-p", "1")),
                  (f"tos:{device}", command("cma_roce_tos", "-d", device, "-p", "1"))]
    return sectioned(parts) if parts else None


def _bdf_of_netdev(netdev: str) -> str:
    """``enp12s0np0`` / ``enp12s0f1np1`` -> ``0000:0c:00.0`` / ``0000:0c:00.1`` (systemd's predictable names:
    ``enp<bus>s<slot>[f<function>]``); "" for another name."""
    if not netdev.startswith("enp") or "s" not in netdev[3:]:
        return ""
    bus_text, _, rest = netdev[3:].partition("s")
    slot_text = ""
    for char in rest:
        if not char.isdigit():
            break
        slot_text += char
    rest = rest[len(slot_text):]
    function = rest[1:].split("n", 1)[0] if rest.startswith("f") else "0"
    if not (bus_text.isdigit() and slot_text.isdigit() and function.isdigit()):
        return ""
    return f"0000:{int(bus_text):02x}:{int(slot_text):02x}.{int(function)}"


def _link(pci: LspciVerbose, bdf: str) -> PcieLinkState | None:
    device = pci.device(bdf) if bdf else None
    if device is None or device.link_status is None or device.link_cap is None:
        return None
    return PcieLinkState(device.link_status.speed_gts, device.link_status.width, device.link_cap.speed_gts,
                         device.link_cap.width)


def _rails(topo_text: str, nics: Sequence[NicConfig], gpus: Sequence[GpuConfig], pci: LspciVerbose,
           tree: LspciTree) -> tuple[RailPair, ...]:
    """Each NIC with the GPU behind its own PCIe switch (PIX/PXB; ties: the GPU of the NIC's rail number, then
    the lowest index); a NIC near no GPU is paired with its rail's GPU (mlx5_5 with GPU5), else the nearest."""
    topo = parse_nvidia_smi_topo(topo_text)
    label_of = {d.device: d.label for d in topo.devices if d.kind == "nic"}
    links = {(link.src, link.dst): link.connection for link in topo.links}
    gpu_bdf = {g.index: g.bdf for g in gpus}
    pairs: list[RailPair] = []
    for nic in nics:
        label = label_of.get(nic.nic)
        if label is None:
            continue
        rail = nic.nic.removeprefix("mlx5_")
        paths = {g.index: links.get((f"GPU{g.index}", label), links.get((label, f"GPU{g.index}"), "")) for g in gpus}
        known = {g: p for g, p in paths.items() if p in PATH_RANK}
        if not known:
            continue
        close = [g for g in known if known[g] in ("PIX", "PXB")]
        if not close and rail.isdigit() and int(rail) in known:
            gpu = int(rail)
        else:
            gpu = min(close or known, key=lambda g: (PATH_RANK[known[g]], str(g) != rail, g))
        bridges = tree.bridges_between(nic.bdf, gpu_bdf[gpu]) if nic.bdf and gpu_bdf.get(gpu) else ()
        acs = {b: d.acs_enabled for b in bridges if (d := pci.device(b)) is not None and d.acs_enabled}
        pairs.append(RailPair(nic.nic, gpu, known[gpu], bridges, acs))
    return tuple(pairs)


def _failed(result: RunResult) -> str:
    return f"{result.state.value}: {result.reason}" if result.exit_status is None else ""


async def read_node(pool: SshPool, node: str, timeout_s: float) -> NodeConfig:
    """One node's configuration; ``reason`` set when it could not be read at all."""
    first = await pool.run(node, node_command(), timeout_s)
    if (why := _failed(first)):
        return NodeConfig(node, reason=why)
    parts = split_sections(first.stdout)
    devinfo = parse_ibv_devinfo(parts.get("devinfo", ""))
    gids = parse_show_gids(parts.get("gids", ""))
    netdevs = netdevs_of(parts.get("net", ""))
    sysfs = parse_roce_sysfs(parts.get("sysfs", ""))
    unread: list[str] = []
    roce = {d.hca_id: netdevs.get(d.hca_id, "") for d in devinfo.devices
            if any(p.link_layer == "Ethernet" for p in d.ports) and netdevs.get(d.hca_id)}
    second_parts: dict[str, str] = {}
    nic_cmd = nic_command(roce)
    if nic_cmd is not None:
        second = await pool.run(node, nic_cmd, timeout_s)
        if (why := _failed(second)):
            unread.append(f"mlnx_qos / cma_roce_*: {why}")
        second_parts = split_sections(second.stdout)
    pci = parse_lspci_verbose(parts.get("lspci", ""))
    tree = parse_lspci_tree(parts.get("tree", ""))
    nics: list[NicConfig] = []
    for device in devinfo.devices:
        port = device.ports[0] if device.ports else None
        netdev = netdevs.get(device.hca_id, "")
        link_layer = port.link_layer if port else ""
        nic_unread: list[str] = []
        qos = parse_mlnx_qos(second_parts[f"qos:{device.hca_id}"]) if f"qos:{device.hca_id}" in second_parts else None
        if link_layer == "Ethernet" and (qos is None or not qos.trust):
            nic_unread.append("mlnx_qos gave nothing")
        mode = parse_cma_roce_mode(second_parts.get(f"mode:{device.hca_id}", "")).mode
        tos = parse_cma_roce_tos(second_parts.get(f"tos:{device.hca_id}", "")).tos
        tsa = {}
        if qos is not None:
            for prio in range(8):
                tc = qos.tc_of(prio)
                if tc is not None:
                    tsa[prio] = tc.tsa
        bdf = _bdf_of_netdev(netdev)
        np_flags = {p: on for p in range(8) if (on := sysfs.ecn_enabled(netdev, "roce_np", p)) is not None}
        rp_flags = {p: on for p in range(8) if (on := sysfs.ecn_enabled(netdev, "roce_rp", p)) is not None}
        nics.append(NicConfig(
            node=node, nic=device.hca_id, netdev=netdev, link_layer=link_layer,
            trust=qos.trust if qos else "", pfc=qos.pfc_enabled if qos else None,
            dscp_to_priority=dict(qos.dscp_to_priority) if qos else {}, tc_tsa=tsa,
            ecn_np=np_flags, ecn_rp=rp_flags, roce_mode=mode, roce_tos=tos,
            traffic_class=sysfs.traffic_class(device.hca_id), netdev_mtu=sysfs.mtu(netdev) if netdev else None,
            active_mtu=port.active_mtu_bytes if port else None,
            gid_index=gids.roce_v2_index(device.hca_id, port.port if port else 1) if link_layer == "Ethernet" else None,
            firmware=device.fw_ver, bdf=bdf, pcie=_link(pci, bdf), unread=tuple(nic_unread),
        ))  # fmt: skip
    query = parse_nvidia_smi_query(parts.get("gpus", ""), GPU_QUERY)
    gpus = tuple(GpuConfig(node, g.index, normalize_bdf(g.pci_bus_id or ""),
                           _link(pci, normalize_bdf(g.pci_bus_id or "")))
                 for g in query.gpus if g.index is not None)
    drivers = {g.driver_version for g in query.gpus if g.driver_version}
    modules = parse_lsmod(parts.get("lsmod", ""))
    peermem: str | None = None
    if modules.modules:
        peermem = next((m for m in ("nvidia_peermem", "nv_peer_mem") if modules.loaded(m)), "")
    else:
        unread.append("lsmod gave nothing")
    ofed = parse_ofed_info(parts.get("ofed", "")).version
    if not pci.devices:
        unread.append("lspci -vvv gave no device")
    return NodeConfig(
        node, "", tuple(nics), gpus, _rails(parts.get("topo", ""), nics, gpus, pci, tree), peermem,
        ofed or "rdma-core (no ofed_info)", ",".join(sorted(drivers)), parts.get("kernel", "").strip(),
        tuple(unread))


# ------------------------------------------------------------------ switches


def _nvue_first() -> Command:
    return sectioned([("interfaces", command("nv", "show", "interface")), ("roce", command("nv", "show", "qos", "roce"))])


def _nvue_ports(ports: Iterable[str]) -> Command | None:
    parts: list[tuple[str, Command]] = []
    for port in ports:
        parts += [(f"status:{port}", command("nv", "show", "interface", port, "qos", "roce", "status")),
                  (f"wd:{port}", command("nv", "show", "interface", port, "qos", "pfc-watchdog"))]
    return sectioned(parts) if parts else None


def sonic_command() -> Command:
    return sectioned([
        ("status", command("show", "interfaces", "status")),
        ("pfc", command("show", "pfc", "priority")),
        ("pfcwd", command("show", "pfcwd", "config")),
        ("ecn", command("show", "ecn")),
        ("ecnq", command("ecnconfig", "-q", str(LOSSLESS_PRIORITY))),
        ("buffer", command("show", "buffer", "configuration")),
        ("portqos", command("sonic-cfggen", "-d", "--var-json", "PORT_QOS_MAP")),
        ("dscp", command("sonic-cfggen", "-d", "--var-json", "DSCP_TO_TC_MAP")),
        ("lldp", command("show", "lldp", "table")),
    ])  # fmt: skip


def _role(peer_host: str, nodes: set[str], switches: set[str]) -> str:
    return "host" if peer_host in nodes else "uplink" if peer_host in switches else ""


async def read_switch(pool: SshPool, host: InventoryHost, plan: Mapping[tuple[str, str], str], nodes: set[str],
                      switches: set[str], timeout_s: float) -> SwitchConfig:
    """One switch's RoCE QoS; ``plan``: (switch, port) -> the planned peer, used where LLDP names none."""
    if host.os == "sonic":
        return await _read_sonic(pool, host.name, plan, nodes, switches, timeout_s)
    return await _read_nvue(pool, host.name, plan, nodes, switches, timeout_s)


async def _read_nvue(pool: SshPool, name: str, plan: Mapping[tuple[str, str], str], nodes: set[str],
                     switches: set[str], timeout_s: float) -> SwitchConfig:
    first = await pool.run(name, _nvue_first(), timeout_s)
    if (why := _failed(first)):
        return SwitchConfig(name, "cumulus", reason=why)
    parts = split_sections(first.stdout)
    table = parse_switch_table(parts.get("interfaces", ""))
    peers: dict[str, str] = {}
    mtus: dict[str, int | None] = {}
    for row in table.rows:
        port = row.get("Interface", "")
        if row.get("Type") != "swp" or not port:
            continue
        host = row.get("Remote Host", "")
        peers[port] = f"{host}:{row.get('Remote Port', '')}" if host else plan.get((name, port), "")
        mtu = row.get("MTU", "")
        mtus[port] = int(mtu) if mtu.isdigit() else None
    roce = parse_nvue_show(parts.get("roce", ""))
    checked = [p for p, peer in peers.items() if _role(peer.split(":")[0], nodes, switches)]
    port_command = _nvue_ports(checked)
    second = await pool.run(name, port_command, timeout_s) if port_command is not None else None
    unread = [f"port views: {why}"] if second is not None and (why := _failed(second)) else []
    port_parts = split_sections(second.stdout) if second is not None else {}
    ports = []
    for port, peer in peers.items():
        status = parse_nvue_show(port_parts.get(f"status:{port}", ""))
        watchdog = parse_nvue_show(port_parts.get(f"wd:{port}", ""))
        state = watchdog.get("state")
        ports.append(SwitchPortConfig(port, peer, _role(peer.split(":")[0], nodes, switches), status.pfc_priorities,
                                      mtus.get(port), None if not state else state == "enabled"))
    pools = [p.get("name", "") for p in roce.pools()]
    lossless = [p for p in pools if "roce" in p or "lossless" in p]
    return SwitchConfig(
        name, "cumulus", "", roce.trust, roce.dscp_to_switch_priority(), roce.ecn_traffic_classes,
        roce.ecn_min_threshold_bytes, roce.ecn_max_threshold_bytes,
        None if not roce.settings else bool(lossless), ", ".join(lossless), tuple(ports), tuple(unread))


async def _read_sonic(pool: SshPool, name: str, plan: Mapping[tuple[str, str], str], nodes: set[str],
                      switches: set[str], timeout_s: float) -> SwitchConfig:
    result = await pool.run(name, sonic_command(), timeout_s)
    if (why := _failed(result)):
        return SwitchConfig(name, "sonic", reason=why)
    parts = split_sections(result.stdout)
    status = parse_sonic_interfaces_status(parts.get("status", ""))
    pfc = parse_sonic_pfc_priority(parts.get("pfc", ""))
    watchdog = {p.port for p in parse_sonic_pfcwd_config(parts.get("pfcwd", "")).ports}
    lldp = {row.get("LocalPort", ""): row for row in parse_switch_table(parts.get("lldp", "")).rows}
    port_qos = parse_sonic_config_table(parts.get("portqos", "")).entries
    maps = parse_sonic_config_table(parts.get("dscp", "")).entries
    ports = []
    for port in status.ports:
        row = lldp.get(port.port, {})
        host = row.get("RemoteDevice", "")
        peer = f"{host}:{row.get('RemotePortID', '')}" if host else plan.get((name, port.port), "")
        ports.append(SwitchPortConfig(port.port, peer, _role(peer.split(":")[0], nodes, switches),
                                      pfc.ports.get(port.port), port.mtu, port.port in watchdog))
    checked = [p for p in ports if p.checked]
    bound = {port_qos.get(p.port, {}).get("dscp_to_tc_map", "") for p in checked} if port_qos else set()
    trust = "" if not port_qos else "dscp" if bound and "" not in bound else "pcp"
    map_name = next(iter(sorted(b for b in bound if b)), "")
    mapping = {int(k): int(v) for k, v in maps.get(map_name, {}).items() if k.isdigit() and v.isdigit()}
    profile = parse_sonic_blocks(parts.get("ecn", "")).of_kind("Profile")
    lossless = next((p for n, p in profile.items() if "LOSSLESS" in n.upper()), {})
    queues = parse_sonic_ecn_queues(parts.get("ecnq", "")).queues
    tcs = tuple(q for q, on in sorted(queues.items()) if on) if queues else None
    buffers = parse_sonic_blocks(parts.get("buffer", ""))
    lossless_pools = [n for n in buffers.of_kind("Pool") if "lossless" in n]
    min_th = lossless.get("green_min_threshold", "")
    max_th = lossless.get("green_max_threshold", "")
    return SwitchConfig(
        name, "sonic", "", trust, mapping, tcs, int(min_th) if min_th.isdigit() else None,
        int(max_th) if max_th.isdigit() else None, None if not buffers.blocks else bool(lossless_pools),
        ", ".join(lossless_pools), tuple(ports))


# ------------------------------------------------------------------ the fleet


def _links(nodes: Sequence[NodeConfig], lldp: Mapping[str, Mapping[str, tuple[str, str]]],
           cabling: Sequence[CablingRow]) -> tuple[LinkEnds, ...]:
    """Each NIC's cable: LLDP first (what is plugged in), else the cabling plan."""
    plan = {(row.node, row.nic): (row.switch, row.port) for row in cabling}
    links = []
    for node in nodes:
        for nic in node.nics:
            found = lldp.get(node.node, {}).get(nic.netdev) or plan.get((node.node, nic.nic))
            if found and found[0]:
                links.append(LinkEnds(node.node, nic.nic, found[0], found[1]))
    return tuple(links)


@dataclass(frozen=True, slots=True)
class ReadSettings:
    timeout_s: float = 60.0
    """Per SSH command (lspci -vvv of a large node takes a while)."""


async def read_fleet(pool: SshPool, inventory: Inventory, nodes: Sequence[str], switches: Sequence[str],
                     settings: ReadSettings | None = None, on_host: Progress | None = None) -> FleetConfig:
    """The configuration of ``nodes`` and ``switches``, all read at once (each host alone on its connection)."""
    settings = settings or ReadSettings()
    node_names, switch_names = set(nodes), {h.name for h in inventory.switches}
    plan_peers = {(row.switch, row.port): f"{row.node}:{row.nic}" for row in inventory.cabling}
    lldp: dict[str, dict[str, tuple[str, str]]] = {}

    async def one_node(name: str) -> NodeConfig:
        config = await read_node(pool, name, settings.timeout_s)
        if on_host is not None:
            on_host(name, config.reason)
        return config

    async def one_switch(name: str) -> SwitchConfig:
        config = await read_switch(pool, inventory.host(name), plan_peers, {h.name for h in inventory.nodes},
                                   switch_names, settings.timeout_s)
        if on_host is not None:
            on_host(name, config.reason)
        return config

    node_configs, switch_configs = await asyncio.gather(
        asyncio.gather(*(one_node(n) for n in nodes)), asyncio.gather(*(one_switch(s) for s in switches)))
    for config in switch_configs:
        for port in config.ports:
            host, _, nic = port.peer.partition(":")
            if host in node_names:
                lldp.setdefault(host, {})[_netdev_of(node_configs, host, nic)] = (config.switch, port.port)
    return FleetConfig(tuple(node_configs), tuple(switch_configs), _links(node_configs, lldp, inventory.cabling))


async def read_host(pool: SshPool, inventory: Inventory, name: str, timeout_s: float) -> NodeConfig | SwitchConfig:
    """One node's or switch's configuration alone (``fleet check fix`` reads a host again after a change)."""
    host = inventory.host(name)
    if host.role == "node":
        return await read_node(pool, name, timeout_s)
    plan_peers = {(row.switch, row.port): f"{row.node}:{row.nic}" for row in inventory.cabling}
    return await read_switch(pool, host, plan_peers, {h.name for h in inventory.nodes},
                             {h.name for h in inventory.switches}, timeout_s)


def _netdev_of(nodes: Sequence[NodeConfig], node: str, name: str) -> str:
    """LLDP names a NIC by its netdev (what the host announces); the plan by its RDMA device."""
    for config in nodes:
        if config.node == node:
            for nic in config.nics:
                if name in (nic.netdev, nic.nic):
                    return nic.netdev
    return name
