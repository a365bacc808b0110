"""A GPU node's RoCE, PCIe and driver tools: ``mlnx_qos -i``, ``cma_roce_mode``, ``cma_roce_tos``, ``lsmod``,
``ofed_info``, ``lspci -vvv`` / ``-tv``, printed from the node's configuration (``fleet.simulator.qos_state``).

Layouts followed (tests/fixtures): ``mlnx_qos`` as
``qos/cx5-sn2700-blog-mlnx_qos-mce0-dcbx-firmware-pfc3-ets50-tc0-multi-prio.txt``
(newer MLNX_OFED: receive buffer line, ``buffer`` row, only non-empty traffic
classes, ``tsa: ets, bw: N%``, trailing blanks on the PFC rows);
``cma_roce_tos`` a bare number (``roce-sysfs/att-netarbiter-...``); ``lsmod``
(``lsmod/vectorflow-gx-...``: the size right-aligned after the name);
``ofed_info -s`` (``ofed/daocloud-docs-...``); ``lspci -vvv`` with tab
indentation and ``(ok)``/``(downgraded)`` suffixes
(``pcie/gpud-hgx-h100-lspci-vvv-...``) and ``lspci -tv``
(``pcie/stelline-asus-esc8000a-lspci-tv-...``).

The node's PCIe tree is an HGX H100's: each rail's GPU and NIC hang from one
Broadcom PEX890xx switch (downstream ports 00.0 for the NIC, 01.0 for the
GPU) under a root port of its socket (rails 0-3 on bus 00, 4-7 on bus 80). A
NIC "far from its GPU" hangs from a root port of the other socket instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fleet.simulator.qos_state import (
    GPU_PCI_BUSES,
    LOSSLESS_PRIORITY,
    NIC_PCI_BUSES,
    PCIE_GEN5,
    NicQos,
    NodeQos,
)
from fleet.simulator.tools import ToolContext, ToolOutput, register

RECEIVE_BUFFERS = "130944,130944,0,0,0,0,0,0,max_buffer_size=262016"
MODULES_BEFORE_PEERMEM = (
    ("nvidia_uvm", 1527808, ""), ("nvidia_drm", 86016, ""), ("nvidia_modeset", 1314816, "nvidia_drm"),
)  # fmt: skip


# ------------------------------------------------------------------ mlnx_qos


def mlnx_qos(nic: NicQos) -> str:
    """``mlnx_qos -i NETDEV`` of one ConnectX port."""
    lines = ["DCBX mode: OS controlled", f"Priority trust state: {nic.trust}"]
    if nic.trust == "dscp":
        lines.append("dscp2prio mapping:")
        for prio in range(8):
            codes = [d for d in range(63, -1, -1) if nic.dscp_to_priority[d] == prio]
            for start in range(0, len(codes), 8):  # mlnx_qos prints 8 values per line, repeating prio:N
                lines.append(f"\tprio:{prio} dscp:" + "".join(f"{d:02d}," for d in codes[start : start + 8]))
    lines += [f"Receive buffer size (bytes): {RECEIVE_BUFFERS}", "Cable len: 7", "PFC configuration:",
              "\tpriority    0   1   2   3   4   5   6   7",
              "\tenabled     " + "   ".join(str(int(on)) for on in nic.pfc) + "   ",
              "\tbuffer      " + "   ".join("1" if on else "0" for on in nic.pfc) + "   "]
    if nic.ets:
        classes = [(0, "ets, bw: 50%", [p for p in range(8) if p not in (LOSSLESS_PRIORITY, 6)]),
                   (LOSSLESS_PRIORITY, "ets, bw: 50%", [LOSSLESS_PRIORITY]), (6, "strict", [6])]
    else:
        classes = [(tc, "vendor", [1 if tc == 0 else 0 if tc == 1 else tc]) for tc in range(8)]
    for tc, tsa, prios in classes:
        lines.append(f"tc: {tc} ratelimit: unlimited, tsa: {tsa}")
        lines += [f"\t priority:  {p}" for p in prios]
    return "".join(line + "\n" for line in lines)


def _nic_of_netdev(ctx: ToolContext, netdev: str) -> NicQos | None:
    parts = ctx.parts
    if parts is None:
        return None
    rail = parts.rail_of(netdev)
    return None if rail is None else parts.qos().nics[rail]


def _rail_of_device(device: str) -> int | None:
    rail = device.removeprefix("mlx5_")
    return int(rail) if device.startswith("mlx5_") and rail.isdigit() and int(rail) < 8 else None


MLNX_QOS_USAGE = "Usage: mlnx_qos -i <interface> [options]\n"


@register("mlnx_qos")
def mlnx_qos_tool(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``mlnx_qos -i NETDEV`` (the settings are changed by ``fleet.simulator.roce_cli``)."""
    args = argv[1:]
    netdev = args[args.index("-i") + 1] if "-i" in args and args.index("-i") + 1 < len(args) else ""
    if not netdev:
        return ToolOutput("", MLNX_QOS_USAGE, 2)
    nic = _nic_of_netdev(ctx, netdev)
    if nic is None:
        return ToolOutput("", f"Netlink error: {netdev}: No such device\n", 1)
    return ToolOutput(mlnx_qos(nic))


# ------------------------------------------------------------------ RDMA-CM defaults


def roce_mode_words(nic: NicQos) -> str:
    return nic.roce_mode


@register("cma_roce_mode")
def cma_roce_mode(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``cma_roce_mode -d DEV [-p PORT]``: RDMA-CM's default RoCE mode (``-m`` sets it: ``roce_cli``)."""
    args = argv[1:]
    device = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else ""
    rail = _rail_of_device(device)
    if ctx.parts is None or rail is None:
        return ToolOutput("", f"Failed to find device {device}\n", 1)
    return ToolOutput(ctx.parts.qos().nics[rail].roce_mode + "\n")


@register("cma_roce_tos")
def cma_roce_tos(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``cma_roce_tos -d DEV [-p PORT]``: RDMA-CM's default ToS, a bare number (``-t`` sets it: ``roce_cli``)."""
    args = argv[1:]
    device = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else ""
    rail = _rail_of_device(device)
    if ctx.parts is None or rail is None:
        return ToolOutput("", f"Failed to find device {device}\n", 1)
    return ToolOutput(f"{ctx.parts.qos().nics[rail].roce_tos}\n")


# ------------------------------------------------------------------ modules and drivers


def lsmod(node: NodeQos) -> str:
    peer = ["nvidia_peermem"] if node.peermem else []
    rows: list[tuple[str, int, str]] = [
        *MODULES_BEFORE_PEERMEM,
        *((name, 16384, "") for name in peer),
        ("nvidia", 104153088, ",".join(["nvidia_uvm", "nvidia_modeset", *peer])),
        ("rdma_ucm", 28672, ""),
        ("rdma_cm", 122880, "rdma_ucm"),
        ("ib_ipoib", 135168, ""),
        ("ib_umad", 40960, ""),
        ("mlx5_ib", 561152, ""),
        ("ib_uverbs", 212992, ",".join([*peer, "rdma_ucm", "mlx5_ib"])),
        ("ib_core", 528384, ",".join(["rdma_cm", "ib_ipoib", *peer, "ib_umad", "rdma_ucm", "ib_uverbs",
                                      "mlx5_ib"])),
        ("mlx5_core", 3153920, "mlx5_ib"),
        ("mlxfw", 36864, "mlx5_core"),
        ("mlx_compat", 12288, "rdma_cm,ib_ipoib,ib_umad,ib_core,rdma_ucm,ib_uverbs,mlx5_ib,mlx5_core"),
    ]
    lines = ["Module                  Size  Used by"]
    for name, size, users in rows:
        count = len(users.split(",")) if users else 0
        lines.append(f"{name:<19} {size:>8}  {count}{' ' + users if users else ''}")
    return "".join(line + "\n" for line in lines)


@register("lsmod")
def lsmod_tool(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    if ctx.parts is None:
        return ToolOutput("", "sh: 1: lsmod: not found\n", 127)
    return ToolOutput(lsmod(ctx.parts.qos()))


@register("ofed_info")
def ofed_info(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ofed_info -s``: the one-line version (the full listing is not simulated)."""
    if ctx.parts is None:
        return ToolOutput("", "sh: 1: ofed_info: not found\n", 127)
    if argv[1:] != ["-s"]:
        return ToolOutput("", "Usage: ofed_info [-s|-n|-l|--packages]\n", 1)
    return ToolOutput(f"{ctx.parts.qos().ofed}:\n")


# ------------------------------------------------------------------ PCIe


@dataclass
class PciDev:
    bus: int
    dev: int
    fn: int
    kind: str
    """``root``, ``upstream``, ``downstream``, ``nic``, ``gpu``, ``host`` (root complex)."""
    name: str
    secondary: int | None = None
    numa: int = 0
    link: tuple[float, int] = PCIE_GEN5
    cap: tuple[float, int] = PCIE_GEN5
    acs_on: bool = False
    children: list[PciDev] = field(default_factory=list)

    @property
    def bdf(self) -> str:
        return f"{self.bus:02x}:{self.dev:02x}.{self.fn}"

    @property
    def devfn(self) -> str:
        return f"{self.dev:02x}.{self.fn}"


ROOT_PORT = "PCI bridge: Intel Corporation Device 352a (rev 04) (prog-if 00 [Normal decode])"
SWITCH_PORT = "PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])"
NIC_NAME = "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
GPU_NAME = "3D controller: NVIDIA Corporation Device 2330 (rev a1)"
HOST_BRIDGE = "Host bridge: Intel Corporation Device 09a2 (rev 20)"


def switch_buses(rail: int) -> tuple[int, int]:
    """(upstream port bus, downstream ports bus) of a rail's PCIe switch."""
    return 0xE0 + 2 * rail, 0xE1 + 2 * rail


def pci_tree(node: NodeQos) -> list[PciDev]:
    """The node's two root buses (socket 0 on bus 00, socket 1 on bus 80) with every device under them."""
    roots = [PciDev(0x00, 0, 0, "host", HOST_BRIDGE, numa=0), PciDev(0x80, 0, 0, "host", HOST_BRIDGE, numa=1)]
    ports: dict[int, list[PciDev]] = {0x00: [], 0x80: []}
    spare: dict[int, int] = {0x00: 7, 0x80: 7}
    for rail in range(8):
        socket = 0 if rail < 4 else 1
        root_bus = 0x00 if socket == 0 else 0x80
        up_bus, down_bus = switch_buses(rail)
        nic = node.nics[rail]
        nic_dev = PciDev(NIC_PCI_BUSES[rail], 0, 0, "nic", NIC_NAME, numa=socket, link=nic.pcie)
        gpu_dev = PciDev(GPU_PCI_BUSES[rail], 0, 0, "gpu", GPU_NAME, numa=socket, link=node.gpu_pcie[rail])
        gpu_port = PciDev(down_bus, 1, 0, "downstream", SWITCH_PORT, GPU_PCI_BUSES[rail], socket,
                          acs_on=rail in node.acs_gpus, children=[gpu_dev])
        downstream = [gpu_port]
        if nic.far:
            other = 0x80 if socket == 0 else 0x00
            nic_dev.numa = 1 - socket
            far_root = PciDev(other, spare[other], 1, "root", ROOT_PORT, NIC_PCI_BUSES[rail], 1 - socket,
                              children=[nic_dev])
            spare[other] += 1
            ports[other].append(far_root)
        else:
            downstream.insert(0, PciDev(down_bus, 0, 0, "downstream", SWITCH_PORT, NIC_PCI_BUSES[rail], socket,
                                        children=[nic_dev]))
        upstream = PciDev(up_bus, 0, 0, "upstream", SWITCH_PORT, down_bus, socket, children=downstream)
        ports[root_bus].append(PciDev(root_bus, rail % 4 + 1, 1, "root", ROOT_PORT, up_bus, socket,
                                      children=[upstream]))
    for root in roots:
        root.children = sorted(ports[root.bus], key=lambda d: (d.dev, d.fn))
    return roots


def _walk(devices: list[PciDev]) -> Iterator[PciDev]:
    for device in devices:
        yield device
        yield from _walk(device.children)


def _subordinate(device: PciDev) -> int:
    return max([device.secondary or device.bus] + [_subordinate(c) for c in device.children])


def _bus_range(device: PciDev) -> str:
    last = _subordinate(device)
    return f"{device.secondary:02x}" if last == device.secondary else f"{device.secondary:02x}-{last:02x}"


def _device_lines(device: PciDev) -> list[str]:
    if device.secondary is None:
        return [f"{device.devfn}  {device.name.split(': ', 1)[1].split(' (prog-if')[0]}"]
    head = f"{device.devfn}-[{_bus_range(device)}]--"
    if not device.children:
        return [head]
    child = _bus_lines(device.children)
    return [head + child[0]] + [" " * len(head) + line for line in child[1:]]


def _bus_lines(children: list[PciDev], heads: list[list[str]] | None = None) -> list[str]:
    blocks = heads if heads is not None else [_device_lines(c) for c in children]
    if len(blocks) == 1:
        return ["--" + blocks[0][0]] + ["  " + line for line in blocks[0][1:]]
    out: list[str] = []
    for index, block in enumerate(blocks):
        last = index == len(blocks) - 1
        out.append(("\\-" if last else "+-") + block[0])
        out += [("  " if last else "| ") + line for line in block[1:]]
    return out


def lspci_tree(node: NodeQos) -> str:
    """``lspci -tv``: both root buses, socket 1 (bus 80) first as lspci sorts domains."""
    roots = sorted(pci_tree(node), key=lambda r: -r.bus)
    blocks = [[f"[0000:{r.bus:02x}]-" + line if i == 0 else " " * 10 + line
               for i, line in enumerate(_bus_lines(r.children))] for r in roots]
    lines = _bus_lines([], blocks)
    out = ["-" + lines[0]] + [" " + line for line in lines[1:]]
    return "".join(line + "\n" for line in out)


def _link_status(link: tuple[float, int], cap: tuple[float, int]) -> str:
    speed = "downgraded" if link[0] < cap[0] else "ok"
    width = "downgraded" if link[1] < cap[1] else "ok"
    return f"Speed {link[0]:g}GT/s ({speed}), Width x{link[1]} ({width})"


PORT_TYPES = {"root": "Root Port (Slot+)", "upstream": "Upstream Port", "downstream": "Downstream Port (Slot+)",
              "nic": "Endpoint", "gpu": "Endpoint"}


def _device_block(device: PciDev) -> list[str]:
    lines = [f"{device.bdf} {device.name}"]
    if device.kind in ("nic", "gpu"):
        subsystem = "Mellanox Technologies Device 0021" if device.kind == "nic" else "NVIDIA Corporation Device 16c1"
        lines.append(f"\tSubsystem: {subsystem}")
    lines += ["\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- "
              "DisINTx+", "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- "
              ">SERR- <PERR- INTx-", "\tLatency: 0", f"\tNUMA node: {device.numa}"]
    if device.kind == "host":
        return lines
    if device.secondary is not None:
        lines.append(f"\tBus: primary={device.bus:02x}, secondary={device.secondary:02x}, "
                     f"subordinate={_subordinate(device):02x}, sec-latency=0")
    port = 0 if device.kind in ("nic", "gpu", "upstream") else device.dev
    lines += [
        f"\tCapabilities: [68] Express (v2) {PORT_TYPES[device.kind]}, MSI 00",
        "\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited",
        "\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+",
        "\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-",
        "\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes",
        f"\t\tLnkCap:\tPort #{port}, Speed {device.cap[0]:g}GT/s, Width x{device.cap[1]}, ASPM not supported",
        "\t\t\tClockPM- Surprise- LLActRep+ BwNot+ ASPMOptComp+",
        "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+",
        "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
        f"\t\tLnkSta:\t{_link_status(device.link, device.cap)}",
        "\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-",
        "\tCapabilities: [100 v1] Advanced Error Reporting",
        "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
        "\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-",
    ]
    if device.kind in ("root", "downstream"):
        on = "+" if device.acs_on else "-"
        lines += ["\tCapabilities: [148 v1] Access Control Services",
                  "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+",
                  f"\t\tACSCtl:\tSrcValid{on} TransBlk- ReqRedir{on} CmpltRedir{on} UpstreamFwd{on} "
                  "EgressCtrl- DirectTrans-"]
    if device.kind == "nic":
        lines.append("\tKernel driver in use: mlx5_core")
    elif device.kind == "gpu":
        lines.append("\tKernel driver in use: nvidia")
    else:
        lines.append("\tKernel driver in use: pcieport")
    return lines


def lspci_verbose(node: NodeQos) -> str:
    """``lspci -vvv``: every device in address order, each block followed by a blank line."""
    devices = sorted(_walk(pci_tree(node)), key=lambda d: (d.bus, d.dev, d.fn))
    return "".join("\n".join(_device_block(d)) + "\n\n" for d in devices)


def acs_bridge(node: NodeQos, bdf: str) -> int | None:
    """The rail whose GPU hangs from the switch port ``bdf`` (``0000:e1:01.0``), None for another device."""
    wanted = bdf.lower().removeprefix("0000:")
    return next((rail for rail in range(8) if f"{switch_buses(rail)[1]:02x}:01.0" == wanted), None)


@register("lspci")
def lspci(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``lspci -vvv`` (also ``-vv``) and ``lspci -tv``."""
    if ctx.parts is None:
        return ToolOutput("", "sh: 1: lspci: not found\n", 127)
    node = ctx.parts.qos()
    args = argv[1:]
    if args in (["-tv"], ["-vt"], ["-t", "-v"]):
        return ToolOutput(lspci_tree(node))
    if args in (["-vvv"], ["-vv"]):
        return ToolOutput(lspci_verbose(node))
    return ToolOutput("", "lspci: this simulated lspci prints -vvv and -tv only\n", 1)
