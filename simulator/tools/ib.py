"""InfiniBand diagnostics of a simulated node: ibstat, ibstatus, ibv_devinfo, perfquery, ...

Every layout follows the tool's source, cited per function (rdma-core
``infiniband-diags/ibstat.c``, ``libibverbs/examples/devinfo.c``, the
``ibstatus`` shell script, ``perfquery.c``, ``ibnetdiscover.c``,
``iblinkinfo.c``, ``ibqueryerrors.c``) and was checked against the real
captures in ``tests/fixtures/ibstat``, ``rdma``, ``perfquery`` and
``topology``. The fabric-wide tools (``ibnetdiscover``, ``iblinkinfo``,
``ibqueryerrors``) walk ``ctx.all_nodes()`` / ``ctx.all_switches()`` and answer
only where the NICs run the InfiniBand link layer, as on a real RoCE host
where no subnet manager can be reached.
"""

from __future__ import annotations

import ipaddress
import os
import re
import time
from dataclasses import dataclass

from fleet.simulator.state import NicView, NodeView, SwitchPortView, SwitchView
from fleet.simulator.tools import ToolContext, ToolOutput, register

PORT_STATE_NUM: dict[str, int] = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4}
IBSTAT_STATE: dict[str, str] = {
    "DOWN": "Down",
    "INIT": "Initializing",
    "ARMED": "Armed",
    "ACTIVE": "Active",
}
PHYS_STATE_NUM: dict[str, int] = {
    "Sleep": 1,
    "Polling": 2,
    "Disabled": 3,
    "PortConfigurationTraining": 4,
    "LinkUp": 5,
    "LinkErrorRecovery": 6,
    "PhyTest": 7,
}
# Per-lane signalling of each IB speed name: (nominal Gb/s per lane for the
# rate string, the exact lane rate iblinkinfo prints).
_LANE_SPEEDS: tuple[tuple[str, float, str], ...] = (
    ("SDR", 2.5, "2.5 Gbps"),
    ("DDR", 5.0, "5.0 Gbps"),
    ("QDR", 10.0, "10.0 Gbps"),
    ("FDR", 14.0, "14.0625 Gbps"),
    ("EDR", 25.0, "25.78125 Gbps"),
    ("HDR", 50.0, "53.125 Gbps"),
    ("NDR", 100.0, "106.25 Gbps"),
    ("XDR", 200.0, "212.5 Gbps"),
)
_IB_MTU_ENUM: dict[int, int] = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
# Capability masks as ConnectX-7 reports them (tests/fixtures/ibstat/gpud-h100-*).
_CAPMASK_IB = 0xA751E848
_CAPMASK_ETH = 0x00010000


def width_lanes(width: str) -> int:
    """Lanes of an IB width string: "4X" -> 4."""
    digits = re.sub(r"\D", "", width)
    return int(digits) if digits else 1


def speed_name(nic: NicView) -> str:
    """IB speed name of the trained rate; Ethernet ports map onto IB names as the kernel does."""
    if nic.speed_name:
        return nic.speed_name
    return speed_name_for(nic.rate_gbps, width_lanes(nic.width))


def speed_name_for(rate_gbps: float, lanes: int) -> str:
    """The IB speed whose per-lane rate gives ``rate_gbps`` over ``lanes`` lanes."""
    per_lane = rate_gbps / max(lanes, 1)
    best = min(_LANE_SPEEDS, key=lambda s: abs(s[1] - per_lane))
    return best[0]


def lane_speed_text(name: str) -> str:
    """iblinkinfo's per-lane speed text for an IB speed name ("NDR" -> "106.25 Gbps")."""
    for speed, _, text in _LANE_SPEEDS:
        if speed == name:
            return text
    return "2.5 Gbps"


def sysfs_rate(nic: NicView) -> str:
    """The kernel's ``ports/N/rate`` string: "400 Gb/sec (4X NDR)"."""
    return f"{nic.rate_gbps} Gb/sec ({nic.width} {speed_name(nic)})"


def sysfs_state(nic: NicView) -> str:
    """``ports/N/state``: "4: ACTIVE"."""
    return f"{PORT_STATE_NUM.get(nic.state, 0)}: {nic.state}"


def sysfs_phys_state(nic: NicView) -> str:
    """``ports/N/phys_state``: "5: LinkUp"."""
    return f"{PHYS_STATE_NUM.get(nic.phys_state, 0)}: {nic.phys_state}"


def guid_int(guid: str) -> int:
    """A GUID in any of its printed forms ("0xa088..", "a088:c203:..") as an integer."""
    return int(guid.replace(":", "").removeprefix("0x"), 16)


def guid_colon(guid: str) -> str:
    """libibverbs/sysfs form of a GUID: "a088:c203:00e1:e2f4"."""
    hexed = f"{guid_int(guid):016x}"
    return ":".join(hexed[i : i + 4] for i in range(0, 16, 4))


def default_gid(nic: NicView) -> str:
    """GID index 0 of the port: link-local from the port GUID (IB) or the MAC (RoCE)."""
    for gid in nic.gids:
        if gid.index == 0:
            return gid.gid
    if nic.link_layer == "InfiniBand":
        hexed = f"{guid_int(nic.port_guid):016x}"
    else:
        octets = [int(o, 16) for o in nic.mac.split(":")]
        eui = [octets[0] ^ 0x02, *octets[1:3], 0xFF, 0xFE, *octets[3:6]]
        hexed = "".join(f"{o:02x}" for o in eui)
    tail = ":".join(hexed[i : i + 4] for i in range(0, 16, 4))
    return f"fe80:0000:0000:0000:{tail}"


def vendor_part_id(nic: NicView) -> int:
    """PCI device id from the HCA type: "MT4129" -> 4129."""
    digits = re.sub(r"\D", "", nic.hca_type)
    return int(digits) if digits else 0


def _nics_sorted(node: NodeView) -> list[NicView]:
    """umad lists devices in directory order, which sorts names as strings (mlx5_10 < mlx5_2)."""
    return sorted(node.nics, key=lambda n: n.name)


def _no_node(tool: str) -> ToolOutput:
    return ToolOutput("", f"sh: 1: {tool}: not found\n", 127)


# --- ibstat -----------------------------------------------------------------


def _ibstat_port(nic: NicView, alone: bool) -> list[str]:
    """port_dump() of ibstat.c: tab-indented inside a CA block, flush left when alone."""
    pre, hdrpre = ("", "") if alone else ("\t\t", "\t")
    capmask = _CAPMASK_IB if nic.link_layer == "InfiniBand" else _CAPMASK_ETH
    return [
        f"{hdrpre}Port {nic.port}:",
        f"{pre}State: {IBSTAT_STATE.get(nic.state, '???')}",
        f"{pre}Physical state: {nic.phys_state}",
        f"{pre}Rate: {nic.rate_gbps}",
        f"{pre}Base lid: {nic.lid}",
        f"{pre}LMC: 0",
        f"{pre}SM lid: {nic.sm_lid}",
        f"{pre}Capability mask: 0x{capmask:08x}",
        f"{pre}Port GUID: 0x{guid_int(nic.port_guid):016x}",
        f"{pre}Link layer: {nic.link_layer}",
    ]


def _ibstat_ca(nic: NicView, no_ports: bool) -> list[str]:
    """ca_dump() of ibstat.c."""
    lines = [
        f"CA '{nic.name}'",
        f"\tCA type: {nic.hca_type}",
        "\tNumber of ports: 1",
        f"\tFirmware version: {nic.fw_version}",
        "\tHardware version: 0",
        f"\tNode GUID: 0x{guid_int(nic.node_guid):016x}",
        f"\tSystem image GUID: 0x{guid_int(nic.sys_image_guid):016x}",
    ]
    if not no_ports:
        lines += _ibstat_port(nic, alone=False)
    return lines


def _ibpanic(tool: str, message: str) -> ToolOutput:
    """ibexit()/IBPANIC of infiniband-diags: the message goes to stdout, exit status -1."""
    return ToolOutput(f"{tool}: iberror: failed: {message}\n", "", 255)


_IBSTAT_USAGE = (
    "Usage: ibstat [options] <ca_name> [portnum]\n"
    "\nOptions:\n"
    "  --list_of_cas, -l       list all IB devices\n"
    "  --short, -s             short output\n"
    "  --port_list, -p         show port list\n"
    "  --help, -h              help message\n"
    "\nExamples:\n"
    "  ibstat -l       # list all IB devices\n"
    "  ibstat mthca0 2 # stat port 2 of 'mthca0'\n"
)


@register("ibstat")
def ibstat(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ibstat [-l|-s|-p] [ca [port]]`` as infiniband-diags/ibstat.c prints it."""
    node = ctx.node
    if node is None:
        return _no_node(argv[0])
    list_only = short = list_ports = False
    args: list[str] = []
    for arg in argv[1:]:
        if arg in ("-l", "--list_of_cas"):
            list_only = True
        elif arg in ("-s", "--short"):
            short = True
        elif arg in ("-p", "--port_list"):
            list_ports = True
        elif arg in ("-h", "--help"):
            return ToolOutput("", _IBSTAT_USAGE, 0)
        elif arg.startswith("-"):
            return ToolOutput(
                "", f"ibstat: invalid option -- '{arg.lstrip('-')[:1]}'\n" + _IBSTAT_USAGE, 255
            )
        else:
            args.append(arg)
    nics = _nics_sorted(node)
    if args:
        # ibstat.c matches with strncmp(node, arg, strlen(node)): "mlx5_10" finds "mlx5_1".
        found = [n for n in nics if args[0].startswith(n.name)]
        if not found:
            return _ibpanic("ibstat", f"'{args[0]}' IB device can't be found")
        nics = found[:1]
    if list_ports:
        return ToolOutput("".join(f"0x{guid_int(n.port_guid):016x}\n" for n in nics))
    lines: list[str] = []
    for nic in nics:
        if list_only:
            lines.append(nic.name)
        elif len(args) > 1:
            portnum = _strtol(args[1])
            if portnum != nic.port:
                warn = f"ibwarn: [{os.getpid()}] ca_stat: CA: '{nic.name}' has no port number {portnum} - max (1)\n"
                out = "\n".join(lines) + ("\n" if lines else "")
                panic = _ibpanic("ibstat", f"stat of IB device '{nic.name}' failed")
                return ToolOutput(out + panic.stdout, warn, 255)
            lines.append(f"CA: '{nic.name}'")
            lines += _ibstat_port(nic, alone=True)
        else:
            lines += _ibstat_ca(nic, no_ports=short)
    return ToolOutput("".join(line + "\n" for line in lines))


def _strtol(text: str) -> int:
    """strtol(text, NULL, 0): leading integer in any C base, 0 when none."""
    match = re.match(r"\s*([+-]?(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*))", text)
    return int(match.group(1), 0) if match else 0


# --- ibstatus ---------------------------------------------------------------


@register("ibstatus")
def ibstatus(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ibstatus [devname[:port]]...`` (infiniband-diags/scripts/ibstatus; tabs as its echo prints them)."""
    node = ctx.node
    if node is None:
        return _no_node(argv[0])
    if argv[1:2] == ["-h"]:
        return ToolOutput(_IBSTATUS_USAGE, "", 255)
    nics = _nics_sorted(node)
    out: list[str] = []
    if len(argv) == 1:
        for nic in nics:
            out += _ibstatus_port(nic.name, str(nic.port), nic)
        return ToolOutput("".join(line + "\n" for line in out))
    for arg in argv[1:]:
        name, _, port = arg.partition(":")
        mine = [n for n in nics if n.name == name]
        if not mine:
            out.append(
                f"Fatal error:  device '{name}': sys files not found (/sys/class/infiniband/{name}/ports)"
            )
            return ToolOutput("".join(line + "\n" for line in out), "", 255)
        for nic in mine:
            if not port or port == str(nic.port):
                out += _ibstatus_port(name, str(nic.port), nic)
            else:  # a port directory that does not exist: every read falls back
                out += _ibstatus_port(name, port, None)
    return ToolOutput("".join(line + "\n" for line in out))


_IBSTATUS_USAGE = (
    "Usage:  ibstatus  [-h] [devname[:portnum]]\n"
    "\t-h:\tthis help screen\n"
    "\tExamples:\n"
    "\t\tibstatus mthca1\t\t# shows status of all ports of 'mthca1'\n"
    "\t\tibstatus mthca0:2\t# shows status port number 2 of 'mthca0'\n"
    "\t\tibstatus\t\t# default: shows status of all 'mthca0' ports\n"
)


def _ibstatus_port(dev: str, port: str, nic: NicView | None) -> list[str]:
    """port_status(): each value read from sysfs, "unknown" (link layer: "IB") when unreadable."""
    if nic is None:
        gid = lid = sm_lid = state = phys = rate = "unknown"
        link_layer = "IB"
    else:
        # gids/0 exists for IB ports and for RoCE ports that have a GID table
        gid = default_gid(nic) if nic.gids or nic.link_layer == "InfiniBand" else "unknown"
        lid, sm_lid = f"0x{nic.lid:x}", f"0x{nic.sm_lid:x}"
        state, phys, rate = sysfs_state(nic), sysfs_phys_state(nic), sysfs_rate(nic)
        link_layer = nic.link_layer
    return [
        f"Infiniband device '{dev}' port {port} status:",
        f"\tdefault gid:\t {gid}",
        f"\tbase lid:\t {lid}",
        f"\tsm lid:\t\t {sm_lid}",
        f"\tstate:\t\t {state}",
        f"\tphys state:\t {phys}",
        f"\trate:\t\t {rate}",
        f"\tlink_layer:\t {link_layer}",
        "",
    ]


# --- ibv_devinfo --------------------------------------------------------------

_IBV_PORT_STATE = {
    "DOWN": "PORT_DOWN",
    "INIT": "PORT_INIT",
    "ARMED": "PORT_ARMED",
    "ACTIVE": "PORT_ACTIVE",
}
_IBV_USAGE = (
    "Usage: ibv_devinfo             print the ca attributes\n"
    "\n"
    "Options:\n"
    "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n"
    "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n"
    "  -l, --list             print only the IB devices names\n"
    "  -v, --verbose          print all the attributes of the IB device(s)\n"
)
# Port attributes a ConnectX-7 reports for ``ibv_devinfo -v`` (rdma-core devinfo.c print_hca_cap).
_IBV_SPEED = {
    "SDR": "2.5 Gbps (1)",
    "DDR": "5.0 Gbps (2)",
    "QDR": "10.0 Gbps (4)",
    "FDR10": "10.0 Gbps (8)",
    "FDR": "14.0 Gbps (16)",
    "EDR": "25.0 Gbps (32)",
    "HDR": "50.0 Gbps (64)",
    "NDR": "100.0 Gbps (128)",
    "XDR": "200.0 Gbps (256)",
}
_IBV_WIDTH = {1: "1X (1)", 4: "4X (2)", 8: "8X (4)", 12: "12X (8)", 2: "2X (16)"}


def _ibv_port(nic: NicView, verbose: bool) -> list[str]:
    mtu = _IB_MTU_ENUM.get(nic.mtu, 5)
    lines = [
        f"\t\tport:\t{nic.port}",
        f"\t\t\tstate:\t\t\t{_IBV_PORT_STATE.get(nic.state, 'invalid state')} ({PORT_STATE_NUM.get(nic.state, 0)})",
        "\t\t\tmax_mtu:\t\t4096 (5)",
        f"\t\t\tactive_mtu:\t\t{nic.mtu} ({mtu})",
        f"\t\t\tsm_lid:\t\t\t{nic.sm_lid}",
        f"\t\t\tport_lid:\t\t{nic.lid}",
        "\t\t\tport_lmc:\t\t0x00",
        f"\t\t\tlink_layer:\t\t{nic.link_layer}",
    ]
    if verbose:
        is_ib = nic.link_layer == "InfiniBand"
        lines += [
            "\t\t\tmax_msg_sz:\t\t0x40000000",
            f"\t\t\tport_cap_flags:\t\t0x{(_CAPMASK_IB if is_ib else _CAPMASK_ETH):08x}",
            "\t\t\tport_cap_flags2:\t0x0000",
            f"\t\t\tmax_vl_num:\t\t{'4 (3)' if is_ib else 'invalid value (0)'}",
            "\t\t\tbad_pkey_cntr:\t\t0x0",
            "\t\t\tqkey_viol_cntr:\t\t0x0",
            "\t\t\tsm_sl:\t\t\t0",
            f"\t\t\tpkey_tbl_len:\t\t{128 if is_ib else 1}",
            f"\t\t\tgid_tbl_len:\t\t{8 if is_ib else 255}",
            "\t\t\tsubnet_timeout:\t\t18" if is_ib else "\t\t\tsubnet_timeout:\t\t0",
            "\t\t\tinit_type_reply:\t0",
            f"\t\t\tactive_width:\t\t{_IBV_WIDTH.get(width_lanes(nic.width), '4X (2)')}",
            f"\t\t\tactive_speed:\t\t{_IBV_SPEED.get(speed_name(nic), 'invalid speed (0)')}",
            f"\t\t\tphys_state:\t\t{nic.phys_state.upper().replace('LINKUP', 'LINK_UP')} "
            f"({PHYS_STATE_NUM.get(nic.phys_state, 0)})",
        ]
        gids = sorted(nic.gids, key=lambda g: g.index) or []
        if not gids and is_ib:
            lines.append(f"\t\t\tGID[  0]:\t\t{default_gid(nic)}")
        for gid in gids:
            # devinfo.c: RoCE v2 GIDs through inet_ntop, the others as raw groups.
            text = _gid_compact(gid.gid) if gid.roce_version == "v2" else gid.gid
            kind = "" if is_ib else f", RoCE {gid.roce_version}"
            lines.append(f"\t\t\tGID[{gid.index:3d}]:\t\t{text}{kind}")
    lines.append("")
    return lines


def _gid_compact(gid: str) -> str:
    """inet_ntop(AF_INET6) of a GID: "fe80::ba3f:d2ff:fea0:10", "::ffff:10.0.0.1"."""
    address = ipaddress.IPv6Address(bytes.fromhex(gid.replace(":", "")))
    if address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    return str(address)


def _ibv_hca(nic: NicView, verbose: bool) -> list[str]:
    lines = [
        f"hca_id:\t{nic.name}",
        "\ttransport:\t\t\tInfiniBand (0)",
        f"\tfw_ver:\t\t\t\t{nic.fw_version}",
        f"\tnode_guid:\t\t\t{guid_colon(nic.node_guid)}",
        f"\tsys_image_guid:\t\t\t{guid_colon(nic.sys_image_guid)}",
        "\tvendor_id:\t\t\t0x02c9",
        f"\tvendor_part_id:\t\t\t{vendor_part_id(nic)}",
        "\thw_ver:\t\t\t\t0x0",
        f"\tboard_id:\t\t\t{nic.board_id}",
        "\tphys_port_cnt:\t\t\t1",
    ]
    if verbose:
        lines += _IBV_DEVICE_VERBOSE
    return lines


# Device attributes of a ConnectX-7 as ``ibv_devinfo -v`` prints them, in
# devinfo.c's order (device_cap_flags names from print_device_cap_flags).
_IBV_DEVICE_VERBOSE: list[str] = [
    "\tmax_mr_size:\t\t\t0xffffffffffffffff",
    "\tpage_size_cap:\t\t\t0xfffffffffffff000",
    "\tmax_qp:\t\t\t\t131072",
    "\tmax_qp_wr:\t\t\t32768",
    "\tdevice_cap_flags:\t\t0x21361c36",
    "\t\t\t\t\tBAD_PKEY_CNTR",
    "\t\t\t\t\tBAD_QKEY_CNTR",
    "\t\t\t\t\tAUTO_PATH_MIG",
    "\t\t\t\t\tCHANGE_PHY_PORT",
    "\t\t\t\t\tPORT_ACTIVE_EVENT",
    "\t\t\t\t\tSYS_IMAGE_GUID",
    "\t\t\t\t\tRC_RNR_NAK_GEN",
    "\t\t\t\t\tMEM_WINDOW",
    "\t\t\t\t\tUD_IP_CSUM",
    "\t\t\t\t\tXRC",
    "\t\t\t\t\tMEM_MGT_EXTENSIONS",
    "\t\t\t\t\tMEM_WINDOW_TYPE_2B",
    "\t\t\t\t\tMANAGED_FLOW_STEERING",
    "\tmax_sge:\t\t\t30",
    "\tmax_sge_rd:\t\t\t30",
    "\tmax_cq:\t\t\t\t16777216",
    "\tmax_cqe:\t\t\t4194303",
    "\tmax_mr:\t\t\t\t16777216",
    "\tmax_pd:\t\t\t\t8388608",
    "\tmax_qp_rd_atom:\t\t\t16",
    "\tmax_ee_rd_atom:\t\t\t0",
    "\tmax_res_rd_atom:\t\t2097152",
    "\tmax_qp_init_rd_atom:\t\t16",
    "\tmax_ee_init_rd_atom:\t\t0",
    "\tatomic_cap:\t\t\tATOMIC_HCA (1)",
    "\tmax_ee:\t\t\t\t0",
    "\tmax_rdd:\t\t\t0",
    "\tmax_mw:\t\t\t\t16777216",
    "\tmax_raw_ipv6_qp:\t\t0",
    "\tmax_raw_ethy_qp:\t\t0",
    "\tmax_mcast_grp:\t\t\t2097152",
    "\tmax_mcast_qp_attach:\t\t240",
    "\tmax_total_mcast_qp_attach:\t503316480",
    "\tmax_ah:\t\t\t\t2147483647",
    "\tmax_fmr:\t\t\t0",
    "\tmax_srq:\t\t\t8388608",
    "\tmax_srq_wr:\t\t\t32767",
    "\tmax_srq_sge:\t\t\t31",
    "\tmax_pkeys:\t\t\t128",
    "\tlocal_ca_ack_delay:\t\t16",
    "\tgeneral_odp_caps:",
    "\t\t\t\t\tODP_SUPPORT",
    "\t\t\t\t\tODP_SUPPORT_IMPLICIT",
    "\trc_odp_caps:",
    "\t\t\t\t\tSUPPORT_SEND",
    "\t\t\t\t\tSUPPORT_RECV",
    "\t\t\t\t\tSUPPORT_WRITE",
    "\t\t\t\t\tSUPPORT_READ",
    "\t\t\t\t\tSUPPORT_ATOMIC",
    "\t\t\t\t\tSUPPORT_SRQ",
    "\tuc_odp_caps:",
    "\t\t\t\t\tNO SUPPORT",
    "\tud_odp_caps:",
    "\t\t\t\t\tSUPPORT_SEND",
    "\txrc_odp_caps:",
    "\t\t\t\t\tSUPPORT_SEND",
    "\t\t\t\t\tSUPPORT_WRITE",
    "\t\t\t\t\tSUPPORT_READ",
    "\t\t\t\t\tSUPPORT_ATOMIC",
    "\t\t\t\t\tSUPPORT_SRQ",
    "\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff",
    "\thca_core_clock:\t\t\t1000000kHZ",
    "\traw packet caps:",
    "\t\t\t\t\tC-VLAN stripping offload",
    "\t\t\t\t\tScatter FCS offload",
    "\t\t\t\t\tIP csum offload",
    "\t\t\t\t\tDelay drop",
    "\tdevice_cap_flags_ex:\t\t0x30000055A1C36",
    "\t\t\t\t\tRAW_SCATTER_FCS",
    "\t\t\t\t\tPCI_WRITE_END_PADDING",
    "\ttso_caps:",
    "\tmax_tso:\t\t\t262144",
    "\tsupported_qp:",
    "\t\t\t\t\tSUPPORT_RAW_PACKET",
    "\trss_caps:",
    "\t\tmax_rwq_indirection_tables:\t\t\t1048576",
    "\t\tmax_rwq_indirection_table_size:\t\t\t2048",
    "\t\trx_hash_function:\t\t\t\t0x1",
    "\t\trx_hash_fields_mask:\t\t\t\t0x800000FF",
    "\t\tsupported_qp:",
    "\t\t\t\t\tSUPPORT_RAW_PACKET",
    "\tmax_wq_type_rq:\t\t\t8388608",
    "\tpacket_pacing_caps:",
    "\t\tqp_rate_limit_min:\t1kbps",
    "\t\tqp_rate_limit_max:\t400000000kbps",
    "\t\tsupported_qp:",
    "\t\t\t\t\tSUPPORT_RAW_PACKET",
    "\t\t\t\t\tSUPPORT_UD",
    "\ttag matching not supported",
    "",
    "\tcq moderation caps:",
    "\t\tmax_cq_count:\t65535",
    "\t\tmax_cq_period:\t4095 us",
    "",
    "\tmaximum available device memory:\t131072Bytes",
    "",
]


@register("ibv_devinfo")
def ibv_devinfo(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ibv_devinfo [-d dev] [-i port] [-l] [-v]`` (rdma-core libibverbs/examples/devinfo.c)."""
    node = ctx.node
    if node is None:
        return _no_node(argv[0])
    devname: str | None = None
    port = 0
    verbose = False
    args = _split_short_opts(argv[1:], with_value="di")
    i = 0
    while i < len(args):
        opt = args[i]
        value = args[i + 1] if i + 1 < len(args) else None
        if opt in ("-d", "--ib-dev") or opt.startswith("--ib-dev="):
            devname = opt.split("=", 1)[1] if "=" in opt else value
            i += 1 if "=" in opt else 2
            if devname is None:
                return ToolOutput(
                    "", "ibv_devinfo: option requires an argument -- 'd'\n" + _IBV_USAGE, 255
                )
            continue
        if opt in ("-i", "--ib-port") or opt.startswith("--ib-port="):
            raw = opt.split("=", 1)[1] if "=" in opt else value
            i += 1 if "=" in opt else 2
            port = _strtol(raw or "")
            if port <= 0:
                return ToolOutput(_IBV_USAGE, "", 1)
            continue
        if opt in ("-v", "--verbose"):
            verbose = True
        elif opt in ("-l", "--list"):
            names = [n.name for n in node.nics]
            plural = "s" if len(names) != 1 else ""
            body = "".join(f"\t{n}\n" for n in names)
            return ToolOutput(f"{len(names)} HCA{plural} found:\n{body}\n")
        else:
            return ToolOutput(_IBV_USAGE, "", 255)
        i += 1
    nics = list(node.nics)
    if devname is not None:
        nics = [n for n in nics if n.name == devname]
        if not nics:
            return ToolOutput("", f"IB device '{devname}' wasn't found\n", 255)
    if not nics:
        return ToolOutput("", "No IB devices found\n", 255)
    lines: list[str] = []
    status = 0
    stderr = ""
    for nic in nics:
        if port and port > 1:
            stderr += "Invalid port requested for device\n"
            status |= 4
            continue
        lines += _ibv_hca(nic, verbose)
        lines += _ibv_port(nic, verbose)
    return ToolOutput("".join(line + "\n" for line in lines), stderr, status)


def _split_short_opts(args: list[str], with_value: str) -> list[str]:
    """getopt-style: "-vd" -> "-v", "-d"; "-dmlx5_0" -> "-d", "mlx5_0"."""
    out: list[str] = []
    for arg in args:
        if arg.startswith("--") or not arg.startswith("-") or len(arg) <= 2:
            out.append(arg)
            continue
        rest = arg[1:]
        while rest:
            letter, rest = rest[0], rest[1:]
            out.append(f"-{letter}")
            if letter in with_value and rest:
                out.append(rest)
                rest = ""
    return out


# --- perfquery ----------------------------------------------------------------

# (perfquery label, sysfs counter) of the PortCountersExtended block of ``perfquery -x``
# as in tests/fixtures/perfquery/*-perfquery-x-*.txt.
_PERFQUERY_X_FIELDS: tuple[tuple[str, str], ...] = (
    ("PortXmitData", "port_xmit_data"),
    ("PortRcvData", "port_rcv_data"),
    ("PortXmitPkts", "port_xmit_packets"),
    ("PortRcvPkts", "port_rcv_packets"),
    ("PortUnicastXmitPkts", "unicast_xmit_packets"),
    ("PortUnicastRcvPkts", "unicast_rcv_packets"),
    ("PortMulticastXmitPkts", "multicast_xmit_packets"),
    ("PortMulticastRcvPkts", "multicast_rcv_packets"),
)
_PERFQUERY_ERR_FIELDS: tuple[tuple[str, str], ...] = (
    ("SymbolErrorCounter", "symbol_error"),
    ("LinkErrorRecoveryCounter", "link_error_recovery"),
    ("LinkDownedCounter", "link_downed"),
    ("PortRcvErrors", "port_rcv_errors"),
    ("PortRcvRemotePhysicalErrors", "port_rcv_remote_physical_errors"),
    ("PortRcvSwitchRelayErrors", "port_rcv_switch_relay_errors"),
    ("PortXmitDiscards", "port_xmit_discards"),
    ("PortXmitConstraintErrors", "port_xmit_constraint_errors"),
    ("PortRcvConstraintErrors", "port_rcv_constraint_errors"),
    ("LocalLinkIntegrityErrors", "local_link_integrity_errors"),
    ("ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors"),
    ("VL15Dropped", "VL15_dropped"),
    ("PortXmitWait", "port_xmit_wait"),
    ("QP1Dropped", "QP1_dropped"),
)


def _mad_line(label: str, value: str) -> str:
    """libibmad's dump: label and colon padded with dots to 33 columns, then the value."""
    return f"{label}:".ljust(33, ".") + value


def perfquery_x_block(lid: int, port: int, counters: dict[str, int]) -> list[str]:
    """The ``perfquery -x`` block of one port from sysfs-named counters."""
    lines = [
        f"# Port extended counters: Lid {lid} port {port} (CapMask: 0x5300 CapMask2: 0x0000002)",
        _mad_line("PortSelect", str(port)),
        _mad_line("CounterSelect", "0x0000"),
    ]
    lines += [_mad_line(label, str(counters.get(key, 0))) for label, key in _PERFQUERY_X_FIELDS]
    lines.append(_mad_line("CounterSelect2", "0x00000000"))
    lines += [_mad_line(label, str(counters.get(key, 0))) for label, key in _PERFQUERY_ERR_FIELDS]
    return lines


@register("perfquery")
def perfquery(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``perfquery -x [-C ca] [-P port] [lid [port]]``: extended port counters over MADs.

    Only an InfiniBand port can answer; on a RoCE-only host the MAD query of
    the local port fails the way perfquery reports it.
    """
    node = ctx.node
    if node is None:
        return _no_node(argv[0])
    extended = False
    ca: str | None = None
    ca_port: int | None = None
    positional: list[str] = []
    args = _split_short_opts(argv[1:], with_value="CP")
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-x", "--extended"):
            extended = True
        elif arg in ("-C", "--Ca") and i + 1 < len(args):
            ca = args[i + 1]
            i += 1
        elif arg in ("-P", "--Port") and i + 1 < len(args):
            ca_port = _strtol(args[i + 1])
            i += 1
        elif arg.startswith("-"):
            return ToolOutput("", f"perfquery: invalid option -- '{arg.lstrip('-')[:1]}'\n", 255)
        else:
            positional.append(arg)
        i += 1
    ib_nics = [n for n in node.nics if n.link_layer == "InfiniBand"]
    if ca is not None:
        ib_nics = [n for n in ib_nics if n.name == ca] or []
        if not [n for n in node.nics if n.name == ca]:
            return _ibpanic("perfquery", f"Failed to open '{ca}' port '{ca_port or 0}'")
    pid = os.getpid()
    if not ib_nics or not ib_nics[0].lid:
        stderr = (
            f"ibwarn: [{pid}] _do_madrpc: send failed; Invalid argument\n"
            f"ibwarn: [{pid}] mad_rpc: _do_madrpc failed; dport (Lid 0)\n"
        )
        return ToolOutput("perfquery: iberror: failed: can't resolve self port\n", stderr, 255)
    local = ib_nics[0]
    target_lid = _strtol(positional[0]) if positional else local.lid
    target_port = _strtol(positional[1]) if len(positional) > 1 else local.port
    target = _nic_by_lid(ctx, target_lid)
    if target is None:
        stderr = (
            f"ibwarn: [{pid}] _do_madrpc: recv failed: Connection timed out\n"
            f"ibwarn: [{pid}] mad_rpc: _do_madrpc failed; dport (Lid {target_lid})\n"
        )
        return ToolOutput("perfquery: iberror: failed: classportinfo query\n", stderr, 255)
    if not extended:
        return ToolOutput(
            "".join(
                line + "\n" for line in _perfquery_basic(target_lid, target_port, target.counters)
            )
        )
    return ToolOutput(
        "".join(line + "\n" for line in perfquery_x_block(target_lid, target_port, target.counters))
    )


def _perfquery_basic(lid: int, port: int, counters: dict[str, int]) -> list[str]:
    """Plain ``perfquery``: the PortCounters attribute, whose data counters are 32 bits and saturate."""
    cap = 0xFFFFFFFF
    errors = dict(_PERFQUERY_ERR_FIELDS)
    lines = [
        f"# Port counters: Lid {lid} port {port} (CapMask: 0x5300)",
        _mad_line("PortSelect", str(port)),
        _mad_line("CounterSelect", "0x0000"),
    ]
    for label in (
        "SymbolErrorCounter",
        "LinkErrorRecoveryCounter",
        "LinkDownedCounter",
        "PortRcvErrors",
        "PortRcvRemotePhysicalErrors",
        "PortRcvSwitchRelayErrors",
        "PortXmitDiscards",
        "PortXmitConstraintErrors",
        "PortRcvConstraintErrors",
    ):
        lines.append(_mad_line(label, str(counters.get(errors[label], 0))))
    lines.append(_mad_line("CounterSelect2", "0x00"))
    for label in (
        "LocalLinkIntegrityErrors",
        "ExcessiveBufferOverrunErrors",
        "QP1Dropped",
        "VL15Dropped",
    ):
        lines.append(_mad_line(label, str(counters.get(errors[label], 0))))
    for label, key in (*_PERFQUERY_X_FIELDS[:4], ("PortXmitWait", "port_xmit_wait")):
        lines.append(_mad_line(label, str(min(counters.get(key, 0), cap))))
    return lines


def _has_lid(nodes: tuple[NodeView, ...], lid: int) -> bool:
    return any(
        nic.lid == lid for node in nodes for nic in node.nics if nic.link_layer == "InfiniBand"
    )


def _nic_by_lid(ctx: ToolContext, lid: int) -> NicView | None:
    """The IB port with ``lid``: this node's own first (cheap), then the whole fabric's."""
    nodes: tuple[NodeView, ...] = (ctx.node,) if ctx.node else ()
    if not _has_lid(nodes, lid):
        nodes = ctx.all_nodes()
    for node in nodes:
        for nic in node.nics:
            if nic.link_layer == "InfiniBand" and nic.lid == lid:
                return nic
    return None


# --- the fabric as the subnet manager sees it ---------------------------------


@dataclass(frozen=True, slots=True)
class _Ca:
    node: str
    nic: NicView

    @property
    def desc(self) -> str:
        """Node description as mlx5 sets it: "<hostname> <device>"."""
        return f"{self.node} {self.nic.name}"


@dataclass(frozen=True, slots=True)
class _Sw:
    view: SwitchView
    guid: int
    lid: int

    @property
    def desc(self) -> str:
        return f"MF0;{self.view.name}:MQM9700/U1"


@dataclass(frozen=True, slots=True)
class _End:
    """One end of a link: a CA port or a switch port."""

    kind: str  # "CA" | "SW"
    name: str  # node or switch name
    lid: int
    port: int
    guid: int
    desc: str


@dataclass(frozen=True, slots=True)
class _Fabric:
    cas: tuple[_Ca, ...]
    switches: tuple[_Sw, ...]
    links: dict[tuple[str, int], _End]  # (node-or-switch name : nic, port) -> peer end
    ca_ends: dict[tuple[str, str], _End]


def switch_guid(view: SwitchView) -> int:
    """Mellanox switch GUIDs embed the chassis MAC with 0x0300 in the middle."""
    octets = view.chassis_mac.split(":")
    return int("".join(octets[:3]) + "0300" + "".join(octets[3:]), 16)


def switch_port_number(view: SwitchView, port: SwitchPortView) -> int:
    """Physical port number: "swp12" -> 12; otherwise the position in the port list."""
    match = re.search(r"(\d+)$", port.name)
    if match and port.name.startswith("swp"):
        return int(match.group(1))
    return view.ports.index(port) + 1


def _fabric(ctx: ToolContext) -> _Fabric:
    cas = tuple(
        _Ca(node.name, nic)
        for node in ctx.all_nodes()
        for nic in node.nics
        if nic.link_layer == "InfiniBand"
    )
    max_lid = max((ca.nic.lid for ca in cas), default=0)
    switches = tuple(
        _Sw(view, switch_guid(view), max_lid + 1 + i)
        for i, view in enumerate(sorted(ctx.all_switches(), key=lambda s: s.name))
    )
    by_name = {sw.view.name: sw for sw in switches}
    ca_ends: dict[tuple[str, str], _End] = {}
    links: dict[tuple[str, int], _End] = {}
    for ca in cas:
        end = _End("CA", ca.node, ca.nic.lid, ca.nic.port, guid_int(ca.nic.port_guid), ca.desc)
        ca_ends[(ca.node, ca.nic.name)] = end
        peer = ca.nic.lldp
        if peer is None or peer.switch not in by_name or ca.nic.phys_state != "LinkUp":
            continue
        sw = by_name[peer.switch]
        sw_port = next((p for p in sw.view.ports if p.name == peer.switch_port), None)
        if sw_port is None:
            continue
        sw_end = _End(
            "SW", sw.view.name, sw.lid, switch_port_number(sw.view, sw_port), sw.guid, sw.desc
        )
        links[(f"{ca.node}:{ca.nic.name}", ca.nic.port)] = sw_end
        links[(sw.view.name, sw_end.port)] = end
    for sw in switches:
        for port in sw.view.ports:
            peer = port.lldp
            if peer is None or peer.switch not in by_name or not port.oper_up:
                continue
            other = by_name[peer.switch]
            other_port = next((p for p in other.view.ports if p.name == peer.switch_port), None)
            if other_port is None:
                continue
            links[(sw.view.name, switch_port_number(sw.view, port))] = _End(
                "SW",
                other.view.name,
                other.lid,
                switch_port_number(other.view, other_port),
                other.guid,
                other.desc,
            )
    return _Fabric(cas, switches, links, ca_ends)


def _switch_port_speed(port: SwitchPortView) -> str:
    return speed_name_for(port.speed_gbps, 4)


def _require_ib(ctx: ToolContext, tool: str) -> ToolOutput | None:
    """The fabric tools need an InfiniBand port on this node; RoCE hosts get umad's error."""
    node = ctx.node
    if node is None:
        return _no_node(tool)
    if not any(n.link_layer == "InfiniBand" and n.state == "ACTIVE" for n in node.nics):
        pid = os.getpid()
        stderr = (
            f"ibwarn: [{pid}] _do_madrpc: send failed; Invalid argument\n"
            f"ibwarn: [{pid}] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\n"
        )
        return ToolOutput("", stderr + f"{tool}: iberror: failed: discover failed\n", 255)
    return None


@register("ibnetdiscover")
def ibnetdiscover(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ibnetdiscover [-p]``: the topology file, or with ``-p`` one line per port (ibnetdiscover.c)."""
    refused = _require_ib(ctx, argv[0])
    if refused is not None:
        return refused
    fabric = _fabric(ctx)
    if "-p" in argv[1:] or "--ports" in argv[1:]:
        return ToolOutput("".join(line + "\n" for line in _ports_report(fabric)))
    return ToolOutput("".join(line + "\n" for line in _topology_file(ctx, fabric)))


def _ports_report(fabric: _Fabric) -> list[str]:
    """dump_ports_report() (infiniband-diags/ibnetdiscover.c): "CA   134  1 0x... 4x EDR - SW ... ( 'a' - 'b' )"."""
    lines: list[str] = []
    for ca in fabric.cas:
        end = fabric.ca_ends[(ca.node, ca.nic.name)]
        head = f"CA {end.lid:5d} {end.port:2d} 0x{end.guid:016x} {width_lanes(ca.nic.width)}x"
        peer = fabric.links.get((f"{ca.node}:{ca.nic.name}", ca.nic.port))
        if peer is None:
            lines.append(f"{head} ???{'':36s}'{ca.desc}'")
        else:
            lines.append(
                f"{head} {speed_name(ca.nic)} - {peer.kind} {peer.lid:5d} {peer.port:2d} 0x{peer.guid:016x}"
                f" ( '{ca.desc}' - '{peer.desc}' )"
            )
    for sw in fabric.switches:
        # dump_ports_report() walks a node's ports from the highest number down
        for port in sorted(sw.view.ports, key=lambda p: -switch_port_number(sw.view, p)):
            number = switch_port_number(sw.view, port)
            head = f"SW {sw.lid:5d} {number:2d} 0x{sw.guid:016x} 4x"
            peer = fabric.links.get((sw.view.name, number))
            if peer is None:
                lines.append(f"{head} ???{'':36s}'{sw.desc}'")
            else:
                lines.append(
                    f"{head} {_switch_port_speed(port)} - {peer.kind} {peer.lid:5d} {peer.port:2d}"
                    f" 0x{peer.guid:016x} ( '{sw.desc}' - '{peer.desc}' )"
                )
    return lines


def _topology_file(ctx: ToolContext, fabric: _Fabric) -> list[str]:
    """dump_topology() of ibnetdiscover.c: out_switch/out_switch_port per switch, then out_ca/out_ca_port."""
    local = next(n for n in (ctx.node.nics if ctx.node else ()) if n.link_layer == "InfiniBand")
    when = time.gmtime(ctx.now)  # ctime(): day of month padded with a blank
    stamp = (
        time.strftime("%a %b ", when) + f"{when.tm_mday:2d}" + time.strftime(" %H:%M:%S %Y", when)
    )
    lines = [
        "#",
        f"# Topology file: generated on {stamp}",
        "#",
        f"# Initiated from node {guid_int(local.node_guid):016x} port {guid_int(local.port_guid):016x}",
    ]
    for sw in fabric.switches:
        nports = max((switch_port_number(sw.view, p) for p in sw.view.ports), default=0)
        lines += [
            "",
            "vendid=0x2c9",
            "devid=0xd2f2",
            f"sysimgguid=0x{sw.guid:x}",
            f"switchguid=0x{sw.guid:x}({sw.guid:x})",
            f'Switch\t{nports} "S-{sw.guid:016x}"\t\t# "{sw.desc}" enhanced port 0 lid {sw.lid} lmc 0',
        ]
        for port in sw.view.ports:
            number = switch_port_number(sw.view, port)
            peer = fabric.links.get((sw.view.name, number))
            if peer is None:
                continue
            prefix = "H" if peer.kind == "CA" else "S"
            guid_note = f"({peer.guid:x}) " if peer.kind == "CA" else ""
            lines.append(
                f'[{number}]\t"{prefix}-{peer.guid:016x}"[{peer.port}]{guid_note}'
                f'\t\t# "{peer.desc}" lid {peer.lid} 4x{_switch_port_speed(port)}'
            )
    for ca in fabric.cas:
        end = fabric.ca_ends[(ca.node, ca.nic.name)]
        lines += [
            "",
            "vendid=0x2c9",
            f"devid=0x{vendor_part_id(ca.nic):x}",
            f"sysimgguid=0x{guid_int(ca.nic.sys_image_guid):x}",
            f"caguid=0x{guid_int(ca.nic.node_guid):x}",
            f'Ca\t1 "H-{guid_int(ca.nic.node_guid):016x}"\t\t# "{ca.desc}"',
        ]
        peer = fabric.links.get((f"{ca.node}:{ca.nic.name}", ca.nic.port))
        if peer is not None:
            lines.append(
                f'[{ca.nic.port}]({end.guid:x}) \t"S-{peer.guid:016x}"[{peer.port}]'
                f'\t\t# lid {end.lid} lmc 0 "{peer.desc}" lid {peer.lid} '
                f"{width_lanes(ca.nic.width)}x{speed_name(ca.nic)}"
            )
    return lines


@register("iblinkinfo")
def iblinkinfo(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``iblinkinfo``: CA sections then switch sections, one line per port.

    print_port() of infiniband-diags/iblinkinfo.c; a link trained below what
    both ends support carries get_max_msg()'s "(Could be 4X Could be 106.25 Gbps)".
    """
    refused = _require_ib(ctx, argv[0])
    if refused is not None:
        return refused
    fabric = _fabric(ctx)
    lines: list[str] = []
    for ca in fabric.cas:
        end = fabric.ca_ends[(ca.node, ca.nic.name)]
        lines.append(f"CA: {ca.desc}:")
        peer = fabric.links.get((f"{ca.node}:{ca.nic.name}", ca.nic.port))
        up = peer is not None and ca.nic.state != "DOWN"
        width, speed = ca.nic.width, speed_name(ca.nic)
        link = _link_text(width, speed, ca.nic.state, ca.nic.phys_state, up)
        note = _max_note(width, speed, _peer_port_speed(fabric, peer)) if up else ("", "")
        lines.append(
            f"      0x{end.guid:016x} {end.lid:6d} {end.port:4d}[  ] =="
            + link
            + _peer_text(peer if up else None, note)
        )
    for sw in fabric.switches:
        lines.append(f"Switch: 0x{sw.guid:016x} {sw.desc}:")
        for port in sw.view.ports:
            number = switch_port_number(sw.view, port)
            peer = fabric.links.get((sw.view.name, number))
            nic = _ca_nic(fabric, peer)
            up = peer is not None and port.oper_up and (nic is None or nic.state != "DOWN")
            state = (nic.state if nic is not None else "ACTIVE") if up else "DOWN"
            phys = "LinkUp" if up else ("Polling" if port.admin_up else "Disabled")
            width = nic.width if nic is not None else "4X"
            speed = speed_name(nic) if nic is not None else _switch_port_speed(port)
            link = _link_text(width, speed, state, phys, up)
            note = _max_note(width, speed, _switch_port_speed(port)) if up else ("", "")
            lines.append(
                f"{sw.lid:12d} {number:4d}[  ] ==" + link + _peer_text(peer if up else None, note)
            )
    return ToolOutput("".join(line + "\n" for line in lines))


def _ca_nic(fabric: _Fabric, end: _End | None) -> NicView | None:
    """The NIC behind a CA end of a link (its trained width and speed rule the link)."""
    if end is None or end.kind != "CA":
        return None
    for ca in fabric.cas:
        if ca.node == end.name and guid_int(ca.nic.port_guid) == end.guid:
            return ca.nic
    return None


def _peer_port_speed(fabric: _Fabric, peer: _End | None) -> str:
    """IB speed name the switch port at ``peer`` is configured for ("" when not a switch)."""
    if peer is None or peer.kind != "SW":
        return ""
    for sw in fabric.switches:
        if sw.view.name == peer.name:
            for port in sw.view.ports:
                if switch_port_number(sw.view, port) == peer.port:
                    return _switch_port_speed(port)
    return ""


_SPEED_ORDER = [name for name, _, _ in _LANE_SPEEDS]


def _max_note(width: str, speed: str, supported_speed: str) -> tuple[str, str]:
    """get_max_msg(): (width_msg, speed_msg) of a link trained below what both ends support."""
    width_msg = "Could be 4X" if width_lanes(width) < 4 else ""
    speed_msg = ""
    if supported_speed and _SPEED_ORDER.index(speed) < _SPEED_ORDER.index(supported_speed):
        speed_msg = f"Could be {lane_speed_text(supported_speed)}"
    return width_msg, speed_msg


def _link_text(width: str, speed: str, state: str, phys: str, up: bool) -> str:
    """ "( 4X      25.78125 Gbps Active/  LinkUp)" or "(                Down/ Polling)"."""
    state_text = IBSTAT_STATE.get(state, "???")
    if up:
        return f"({width:>3} {lane_speed_text(speed):>18} {state_text:>6}/{phys:>8})"
    return f"({'':>14}{state_text:>6}/{phys:>8})"


def _peer_text(peer: _End | None, note: tuple[str, str] = ("", "")) -> str:
    """ "==>  %6d %4d[  ] \"desc\" (%s %s)" with get_max_msg()'s notes, or the unconnected form."""
    if peer is None:
        return '==>             [  ] "" ( )'
    return f'==>{peer.lid:8d} {peer.port:4d}[  ] "{peer.desc}" ({note[0]} {note[1]})'


# Error counters ibqueryerrors checks, in its report order (tests/fixtures/perfquery/linux-rdma-ibqueryerrors-*).
_QUERYERRORS_FIELDS = tuple(
    pair for pair in _PERFQUERY_ERR_FIELDS if pair[0] not in ("QP1Dropped",)
)


@register("ibqueryerrors")
def ibqueryerrors(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ibqueryerrors``: every port with a non-zero error counter, then the summary (ibqueryerrors.c)."""
    refused = _require_ib(ctx, argv[0])
    if refused is not None:
        return refused
    fabric = _fabric(ctx)
    lines: list[str] = []
    bad_nodes = ports_checked = bad_ports = 0
    for ca in fabric.cas:
        ports_checked += 1
        errors = _error_text(ca.nic.counters)
        if errors:
            bad_nodes += 1
            bad_ports += 1
            lines.append(f'Errors for "{ca.desc}"')
            lines.append(f"   GUID 0x{guid_int(ca.nic.port_guid):x} port {ca.nic.port}: {errors}")
    for sw in fabric.switches:
        port_lines: list[str] = []
        for port in sw.view.ports:
            ports_checked += 1
            counters = {"port_rcv_errors": port.rx_errors, "port_xmit_discards": port.tx_drops}
            errors = _error_text(counters)
            if errors:
                bad_ports += 1
                port_lines.append(
                    f"   GUID 0x{sw.guid:x} port {switch_port_number(sw.view, port)}: {errors}"
                )
        if port_lines:
            bad_nodes += 1
            lines.append(f'Errors for 0x{sw.guid:x} "{sw.desc}"')
            lines += port_lines
    nodes = len(fabric.cas) + len(fabric.switches)
    lines += [
        "",
        f"## Summary: {nodes} nodes checked, {bad_nodes} bad nodes found",
        f"##          {ports_checked} ports checked, {bad_ports} ports have errors beyond threshold",
        "## Thresholds:",
        "## Suppressed:",
    ]
    return ToolOutput("".join(line + "\n" for line in lines))


def _error_text(counters: dict[str, int]) -> str:
    return " ".join(
        f"[{label} == {counters[key]}]"
        for label, key in _QUERYERRORS_FIELDS
        if counters.get(key, 0) > 0
    )
