"""Node configuration changes: ``mlnx_qos`` with settings, ``cma_roce_mode -m``, ``cma_roce_tos -t``,
``ip link set ... mtu``, ``modprobe``, ``setpci`` on ACS, and ``echo VALUE > /sys/...`` writes.

Each writes the setting into the model's :class:`~fleet.simulator.qos_state.QosState` at the
time it runs (the traffic model follows: PFC back on means pauses again instead of drops), and
answers as the real tool does: ``mlnx_qos`` prints the port's new state, ``cma_roce_*`` print the
value, the others print nothing. Option syntax follows the tools' usage texts (MLNX_OFED
``mlnx_qos --help``, ``cma_roce_mode -h``, iproute2, pciutils ``setpci``). The read-only forms are
the renderers of ``fleet.simulator.tools.roce``.
"""

from __future__ import annotations

from fleet.simulator.qos_state import NIC_PCI_BUSES, PRIORITIES
from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.tools.roce import acs_bridge, mlnx_qos

MLNX_QOS_SETTERS = ("--trust", "--pfc", "--dscp2prio", "--tsa", "--tcbw")


def is_mlnx_qos_change(argv: list[str]) -> bool:
    return any(a.split("=")[0] in MLNX_QOS_SETTERS for a in argv[1:])


def _options(argv: list[str]) -> dict[str, str]:
    """``--opt value``, ``--opt=value`` and ``-x value`` pairs."""
    found: dict[str, str] = {}
    args = argv[1:]
    index = 0
    while index < len(args):
        word = args[index]
        if word.startswith("-") and "=" in word:
            key, value = word.split("=", 1)
            found[key] = value
        elif word.startswith("-") and index + 1 < len(args):
            found[word] = args[index + 1]
            index += 1
        index += 1
    return found


def _rail_of_netdev(netdev: str) -> int | None:
    return next((r for r, bus in enumerate(NIC_PCI_BUSES) if netdev == f"enp{bus}s0np0"), None)


def _rail_of_device(device: str) -> int | None:
    rail = device.removeprefix("mlx5_")
    return int(rail) if device.startswith("mlx5_") and rail.isdigit() and int(rail) < 8 else None


def _flags(text: str) -> tuple[bool, ...] | None:
    values = text.split(",")
    if len(values) != PRIORITIES or any(v not in ("0", "1") for v in values):
        return None
    return tuple(v == "1" for v in values)


async def run_mlnx_qos(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``mlnx_qos -i NETDEV [--trust dscp|pcp] [--pfc a,b,..] [--dscp2prio set,D,P] [--tsa ..] [--tcbw ..]``."""
    model = machine.model
    options = _options(argv)
    netdev = options.get("-i", "")
    rail = _rail_of_netdev(netdev)
    if rail is None or not model.roce:
        io.stderr(f"Netlink error: {netdev or '(no -i)'}: No such device\n")
        return 1
    t = model.now()
    writes: list[tuple[tuple[object, ...], object]] = []
    if "--trust" in options:
        if options["--trust"] not in ("dscp", "pcp"):
            io.stderr("mlnx_qos: error: argument --trust: invalid choice (choose from 'pcp', 'dscp')\n")
            return 2
        writes.append((("nic", rail, "trust"), options["--trust"]))
    if "--pfc" in options:
        flags = _flags(options["--pfc"])
        if flags is None:
            io.stderr("mlnx_qos: error: --pfc needs 8 comma-separated values of 0 or 1\n")
            return 2
        writes.append((("nic", rail, "pfc"), flags))
    if "--dscp2prio" in options:
        words = options["--dscp2prio"].split(",")
        if len(words) != 3 or words[0] not in ("set", "del") or not all(w.isdigit() for w in words[1:]) \
                or int(words[1]) > 63 or int(words[2]) > 7:
            io.stderr("mlnx_qos: error: --dscp2prio expects set,<dscp 0-63>,<prio 0-7>\n")
            return 2
        dscp, prio = int(words[1]), int(words[2]) if words[0] == "set" else int(words[1]) // 8
        writes.append((("nic", rail, "dscp", dscp), prio))
    if "--tsa" in options:
        kinds = options["--tsa"].split(",")
        if len(kinds) != PRIORITIES or any(k not in ("ets", "strict", "vendor") for k in kinds):
            io.stderr("mlnx_qos: error: --tsa needs 8 values of ets, strict or vendor\n")
            return 2
        writes.append((("nic", rail, "ets"), "ets" in kinds))
    for key, value in writes:
        model.qos.write(machine.host, key, value, t)
    io.stdout(mlnx_qos(model.qos.node(machine.host, model.now()).nics[rail]))
    return 0


async def run_cma_roce_mode(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``cma_roce_mode -d DEV [-p PORT] -m 1|2``: RDMA-CM's default RoCE mode (2: RoCE v2)."""
    options = _options(argv)
    rail = _rail_of_device(options.get("-d", ""))
    if rail is None:
        io.stderr(f"Failed to find device {options.get('-d', '')}\n")
        return 1
    mode = {"1": "IB/RoCE v1", "2": "RoCE v2"}.get(options.get("-m", ""))
    if mode is None:
        io.stderr("cma_roce_mode: -m takes 1 (IB/RoCE v1) or 2 (RoCE v2)\n")
        return 1
    model = machine.model
    model.qos.write(machine.host, ("nic", rail, "roce_mode"), mode, model.now())
    io.stdout(mode + "\n")
    return 0


async def run_cma_roce_tos(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``cma_roce_tos -d DEV [-p PORT] -t TOS``: RDMA-CM's default ToS; prints it."""
    options = _options(argv)
    rail = _rail_of_device(options.get("-d", ""))
    tos = options.get("-t", "")
    if rail is None or not tos.isdigit() or int(tos) > 255:
        io.stderr(f"Failed to set ToS {tos!r} on {options.get('-d', '')}\n")
        return 1
    model = machine.model
    model.qos.write(machine.host, ("nic", rail, "roce_tos"), int(tos), model.now())
    io.stdout(f"{int(tos)}\n")
    return 0


async def run_ip(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``ip link set [dev] NETDEV mtu N``."""
    words = argv[1:]
    if words[:2] != ["link", "set"]:
        io.stderr('Object "' + (words[0] if words else "") + '" is unknown, try "ip help".\n')
        return 255
    rest = words[2:]
    if rest[:1] == ["dev"]:
        rest = rest[1:]
    if len(rest) != 3 or rest[1] != "mtu" or not rest[2].isdigit():
        io.stderr("Usage: ip link set DEVICE mtu MTU\n")
        return 255
    rail = _rail_of_netdev(rest[0])
    if rail is None:
        io.stderr(f'Cannot find device "{rest[0]}"\n')
        return 1
    mtu = int(rest[2])
    if not 68 <= mtu <= 9978:
        io.stderr("Error: mtu greater than device maximum.\n" if mtu > 9978 else "Error: mtu less than device minimum.\n")
        return 2
    model = machine.model
    model.qos.write(machine.host, ("nic", rail, "netdev_mtu"), mtu, model.now())
    return 0


PEERMEM_MODULES = ("nvidia_peermem", "nvidia-peermem", "nv_peer_mem")


async def run_modprobe(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``modprobe [-r] nvidia_peermem``."""
    words = argv[1:]
    remove = words[:1] == ["-r"]
    names = words[1:] if remove else words
    if len(names) != 1:
        io.stderr("modprobe: ERROR: missing or extra module name\n")
        return 1
    if names[0] not in PEERMEM_MODULES:
        io.stderr(f"modprobe: FATAL: Module {names[0]} not found in directory /lib/modules/5.15.0-119-generic\n")
        return 1
    model = machine.model
    model.qos.write(machine.host, ("peermem",), not remove, model.now())
    return 0


async def run_setpci(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``setpci -s BDF ECAP_ACS+0x6.w[=VALUE]``: read or write a bridge's ACS control register."""
    options = _options(argv)
    target = options.get("-s", "")
    register = next((w for w in argv[1:] if w.upper().startswith("ECAP_ACS+")), "")
    if not target or not register:
        io.stderr("setpci: this simulated setpci reads and writes ECAP_ACS+0x6.w only\n")
        return 1
    model = machine.model
    rail = acs_bridge(model.qos.node(machine.host, model.now()), target)
    if rail is None:
        io.stderr(f"setpci: Warning: No devices selected for \"{target}\".\n")
        return 1
    if "=" not in register:
        on = rail in model.qos.node(machine.host, model.now()).acs_gpus
        io.stdout("001d\n" if on else "0000\n")
        return 0
    value = register.split("=", 1)[1]
    try:
        bits = int(value, 16)
    except ValueError:
        io.stderr(f"setpci: Invalid value \"{value}\"\n")
        return 1
    model.qos.write(machine.host, ("acs", rail), bits != 0, model.now())
    return 0


def write_sysfs(machine: Machine, path: str, text: str, io: StreamIO) -> int:
    """``echo VALUE > PATH`` for the writable RoCE files; anything else is refused as the kernel would."""
    model = machine.model
    value = text.strip()
    parts = path.split("/")
    t = model.now()
    if path.startswith("/sys/class/net/") and len(parts) == 9 and parts[5] == "ecn" and parts[7] == "enable":
        rail = _rail_of_netdev(parts[4])
        point = {"roce_np": "ecn_np", "roce_rp": "ecn_rp"}.get(parts[6])
        if rail is not None and point and parts[8].isdigit() and int(parts[8]) < 8 and value in ("0", "1"):
            model.qos.write(machine.host, ("nic", rail, point, int(parts[8])), value == "1", t)
            return 0
    if path.startswith("/sys/class/net/") and len(parts) == 6 and parts[5] == "mtu" and value.isdigit():
        rail = _rail_of_netdev(parts[4])
        if rail is not None:
            model.qos.write(machine.host, ("nic", rail, "netdev_mtu"), int(value), t)
            return 0
    if path.startswith("/sys/class/infiniband/") and path.endswith("/tc/1/traffic_class") and value.isdigit():
        rail = _rail_of_device(parts[4])
        if rail is not None and int(value) < 256:
            model.qos.write(machine.host, ("nic", rail, "traffic_class"), int(value), t)
            return 0
    unknown = (path.startswith("/sys/class/net/") and len(parts) > 5 and _rail_of_netdev(parts[4]) is None) or \
        (path.startswith("/sys/class/infiniband/") and len(parts) > 5 and _rail_of_device(parts[4]) is None)
    if unknown:
        io.stderr(f"sh: 1: cannot create {path}: Directory nonexistent\n")
        return 2
    if path.startswith("/sys/"):
        io.stderr("sh: 1: echo: echo: I/O error\n" if value else f"sh: 1: cannot create {path}: Permission denied\n")
        return 1 if value else 2
    io.stderr(f"sh: 1: cannot create {path}: Read-only file system\n")
    return 2
