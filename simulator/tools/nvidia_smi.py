"""``nvidia-smi`` as a GPU node answers it: ``--query-gpu`` CSV, ``-q``, ``topo -m``, ``nvlink -e``.

Layouts followed (see tests/fixtures/SOURCES.md for provenance):

- ``--query-gpu=... --format=csv[,noheader][,nounits]``:
  ``nvidia-smi/virtualclient-query-gpu-csv-4xT4-nounits.txt`` (driver 510):
  ``", "``-separated, units only in the header (``utilization.gpu [%]``,
  ``memory.total [MiB]``) under ``nounits``, in every value otherwise
  (``97 %``, ``81559 MiB``, ``699.12 W``, ``1980 MHz``).
- ``topo -m``: ``nvidia-smi/aiconfigurator-gb200-nvl72-topo-m-ansi-sgr-6nic.txt``
  (exact bytes of a recent driver: tab-separated cells, `` X `` on the
  diagonal, the header row wrapped in ESC[4m ... ESC[0m, an empty cell between
  "NUMA Affinity" and "GPU NUMA ID", four empty trailing cells on NIC rows,
  Legend and NIC Legend) and ``nccl-tests-issue333-b200-topo-m-16nic-mangled.txt``
  (8 GPUs NV18, NICs PIX/NODE/SYS, CPU affinity per socket).
- plain ``nvidia-smi``: the 535-driver summary table (89 columns wide; GPU
  rows ``%4d  %-31s%-4s``, ``Pwr:Usage/Cap`` right-aligned in 24, memory
  ``%7dMiB / %5dMiB``; process rows ``|  GPU   GI   CI  PID  Type  name  MiB |``)
  as published in H100 captures of driver 535.161.08 (e.g. a Nebius ray
  cluster README and a ModelCloud/GPTQModel issue). The node's training
  processes are the owners of its ``python3`` QPs.
- ``-L``: ``GPU i: NAME (UUID: ...)`` lines.
- ``-q`` / ``-q -i N``: ``fleet.simulator.tools.nvidia_smi_query`` (the 535 driver's report).
- ``nvlink -e``: no fixture; the layout of stas00/ml-engineering
  ("How to check NVLink error counters", H100 80GB HBM3): per GPU a
  ``GPU i: NAME (UUID: ...)`` line, then for every link three lines
  ``\\t Link N: Replay Errors: X`` / ``Recovery Errors`` / ``CRC Errors``,
  links separated by a blank line; the tab-plus-space indent is the one
  ``nvlink -s`` prints (``hpe-dl380a-h100pcie-nvlink-s-bridge-inactive.txt``).

A node without GPUs answers like a host without the driver loaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from fleet.simulator.state import GpuView, NicView, NodeView
from fleet.simulator.tools import ToolContext, ToolOutput, register
from fleet.simulator.tools.nvidia_smi_query import query

NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)

# Host CPU topology of an HGX H100 head node (2 x 56-core sockets with SMT), the
# one the B200 capture shows; GPUs 0-3 and their NICs sit on socket 0.
SOCKET_CPUS: tuple[str, str] = ("0-55,112-167", "56-111,168-223")
PCIE_GEN_MAX = 5
PCIE_WIDTH = 16


@dataclass(frozen=True, slots=True)
class QueryField:
    """One ``--query-gpu`` property: header unit (``""`` for none) and value printer."""

    unit: str
    value: Callable[[GpuView, NodeView, float], str]


def _int(get: Callable[[GpuView], int]) -> Callable[[GpuView, NodeView, float], str]:
    return lambda gpu, _node, _now: str(get(gpu))


def _timestamp(_gpu: GpuView, _node: NodeView, now: float) -> str:
    tm = time.gmtime(now)
    return time.strftime("%Y/%m/%d %H:%M:%S", tm) + f".{int((now % 1) * 1000):03d}"


def _pstate(_gpu: GpuView, _node: NodeView, _now: float) -> str:
    """HGX H100s report P0 even idle (every published 535 capture of an idle H100 shows P0)."""
    return "P0"


def _reasons(gpu: GpuView, _node: NodeView, _now: float) -> str:
    return f"0x{gpu.throttle_reasons:016X}"


QUERY_FIELDS: dict[str, QueryField] = {
    "timestamp": QueryField("", _timestamp),
    "count": QueryField("", lambda _g, node, _n: str(len(node.gpus))),
    "index": QueryField("", _int(lambda g: g.index)),
    "name": QueryField("", lambda g, _n, _t: g.name),
    "uuid": QueryField("", lambda g, _n, _t: g.uuid),
    "pci.bus_id": QueryField("", lambda g, _n, _t: g.pci_bus_id),
    "driver_version": QueryField("", lambda _g, node, _t: node.driver_version),
    "pstate": QueryField("", _pstate),
    "pcie.link.gen.current": QueryField("", lambda _g, _n, _t: str(PCIE_GEN_MAX)),
    "pcie.link.gen.max": QueryField("", lambda _g, _n, _t: str(PCIE_GEN_MAX)),
    "pcie.link.width.current": QueryField("", lambda _g, _n, _t: str(PCIE_WIDTH)),
    "pcie.link.width.max": QueryField("", lambda _g, _n, _t: str(PCIE_WIDTH)),
    "temperature.gpu": QueryField("", _int(lambda g: g.temp_c)),
    "utilization.gpu": QueryField("%", _int(lambda g: g.util_pct)),
    "utilization.memory": QueryField(
        "%", _int(lambda g: round(100 * g.mem_used_mib / g.mem_total_mib) if g.util_pct else 0)
    ),
    "memory.total": QueryField("MiB", _int(lambda g: g.mem_total_mib)),
    "memory.used": QueryField("MiB", _int(lambda g: g.mem_used_mib)),
    "memory.free": QueryField("MiB", _int(lambda g: g.mem_total_mib - g.mem_used_mib)),
    "power.draw": QueryField("W", lambda g, _n, _t: f"{g.power_w:.2f}"),
    "power.limit": QueryField("W", lambda g, _n, _t: f"{g.power_limit_w:.2f}"),
    "clocks.sm": QueryField("MHz", _int(lambda g: g.sm_clock_mhz)),
    "clocks.current.sm": QueryField("MHz", _int(lambda g: g.sm_clock_mhz)),
    "clocks.max.sm": QueryField("MHz", _int(lambda g: g.max_sm_clock_mhz)),
    "clocks_event_reasons.active": QueryField("", _reasons),
    "clocks_throttle_reasons.active": QueryField("", _reasons),
    "ecc.errors.uncorrected.volatile.total": QueryField(
        "", _int(lambda g: g.ecc_volatile_uncorrected)
    ),
    "ecc.errors.uncorrected.aggregate.total": QueryField(
        "", _int(lambda g: g.ecc_aggregate_uncorrected)
    ),
    "fan.speed": QueryField("%", lambda _g, _n, _t: "[N/A]"),
    "pcie.replay_counter": QueryField("", _int(lambda g: g.pcie_replay)),
}

# Aliases nvidia-smi accepts for the same property (``nvidia-smi --help-query-gpu``).
FIELD_ALIASES: dict[str, str] = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "temperature.gpu.current": "temperature.gpu",
}


def _header(field: str) -> str:
    unit = QUERY_FIELDS[FIELD_ALIASES.get(field, field)].unit
    return f"{field} [{unit}]" if unit else field


def _value(field: str, gpu: GpuView, node: NodeView, now: float, nounits: bool) -> str:
    spec = QUERY_FIELDS[FIELD_ALIASES.get(field, field)]
    text = spec.value(gpu, node, now)
    if spec.unit and not nounits and not text.startswith("["):
        return f"{text} {spec.unit}"
    return text


def _query_gpu(
    node: NodeView, now: float, fields: list[str], fmt: list[str], ids: list[int] | None
) -> ToolOutput:
    for field in fields:
        if FIELD_ALIASES.get(field, field) not in QUERY_FIELDS:
            return ToolOutput(f'Field "{field}" is not a valid field to query.\n\n', "", 2)
    nounits = "nounits" in fmt
    lines: list[str] = []
    if "noheader" not in fmt:
        lines.append(", ".join(_header(f) for f in fields))
    gpus = [g for g in node.gpus if ids is None or g.index in ids]
    for gpu in gpus:
        lines.append(", ".join(_value(f, gpu, node, now, nounits) for f in fields))
    return ToolOutput("".join(line + "\n" for line in lines))


def _socket(index: int, count: int) -> int:
    return 0 if index < max(count // 2, 1) else 1


def _gpu_nic_link(gpu: int, nic: int, n_gpus: int, n_nics: int, far: frozenset[int] = frozenset()) -> str:
    """Rail r's NIC shares rail r's GPU's PCIe switch (PIX); a NIC ``far`` from it sits on the other socket."""
    nic_socket = _socket(nic, n_nics) ^ (nic in far)
    if gpu == nic and nic not in far:
        return "PIX"
    return "NODE" if _socket(gpu, n_gpus) == nic_socket else "SYS"


def _topo(node: NodeView) -> str:
    gpus: tuple[GpuView, ...] = node.gpus
    nics: tuple[NicView, ...] = node.nics
    n_g, n_n = len(gpus), len(nics)
    far = frozenset(i for i, nic in enumerate(nics) if nic.qos is not None and nic.qos.far)
    names = [f"GPU{g.index}" for g in gpus] + [f"NIC{i}" for i in range(n_n)]
    header = "\t\x1b[4m" + "\t".join([*names, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])
    lines = [header + "\x1b[0m"]
    for gi in range(n_g):
        cells = [" X " if gj == gi else "NV18" for gj in range(n_g)]
        cells += [_gpu_nic_link(gi, ni, n_g, n_n, far) for ni in range(n_n)]
        sock = _socket(gi, n_g)
        cells += [SOCKET_CPUS[sock], str(sock), "", "N/A"]
        lines.append("\t".join([names[gi], *cells]))
    for ni in range(n_n):
        cells = [_gpu_nic_link(gi, ni, n_g, n_n, far) for gi in range(n_g)]
        for nj in range(n_n):
            if nj == ni:
                cells.append(" X ")
            else:
                same = (_socket(ni, n_n) ^ (ni in far)) == (_socket(nj, n_n) ^ (nj in far))
                cells.append("NODE" if same else "SYS")
        cells += ["", "", "", ""]
        lines.append("\t".join([f"NIC{ni}", *cells]))
    lines += [
        "",
        "Legend:",
        "",
        "  X    = Self",
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
        "  PIX  = Connection traversing at most a single PCIe bridge",
        "  NV#  = Connection traversing a bonded set of # NVLinks",
    ]
    if nics:
        lines += ["", "NIC Legend:", ""]
        lines += [f"  NIC{i}: {nic.name}" for i, nic in enumerate(nics)]
        lines.append("")
    return "".join(line + "\n" for line in lines)


def _nvlink_errors(gpus: tuple[GpuView, ...]) -> str:
    out: list[str] = []
    for gpu in gpus:
        out.append(f"GPU {gpu.index}: {gpu.name} (UUID: {gpu.uuid})")
        for link, crc in enumerate(gpu.nvlink_crc_errors):
            if link:
                out.append("")
            out.append(f"\t Link {link}: Replay Errors: {gpu.nvlink_replay_errors[link]}")
            out.append(f"\t Link {link}: Recovery Errors: {gpu.nvlink_recovery_errors[link]}")
            out.append(f"\t Link {link}: CRC Errors: {crc}")
    return "".join(line + "\n" for line in out)


INVALID_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"


RULE = "+" + "-" * 87 + "+"
GPU_RULE = "+" + "-" * 41 + "+" + "-" * 22 + "+" + "-" * 22 + "+"


def _summary(node: NodeView, now: float) -> str:
    """Plain ``nvidia-smi``: the GPU table and the process table."""
    stamp = time.strftime("%a %b %e %H:%M:%S %Y", time.gmtime(now))
    lines = [
        stamp + " " * 7,
        RULE,
        f"| NVIDIA-SMI {node.driver_version:<23}Driver Version: {node.driver_version:<13}"
        f"CUDA Version: {node.cuda_version:<9}|",
        "|" + "-" * 41 + "+" + "-" * 22 + "+" + "-" * 22 + "+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|" + "=" * 41 + "+" + "=" * 22 + "+" + "=" * 22 + "|",
    ]
    for gpu in node.gpus:
        power = f"{round(gpu.power_w)}W / {round(gpu.power_limit_w):>3}W"
        pstate = _pstate(gpu, node, now)
        lines += [
            f"|{gpu.index:>4}  {gpu.name:<31}{'On':<4}| {gpu.pci_bus_id} Off |"
            f"{gpu.ecc_volatile_uncorrected:>21} |",
            f"| N/A  {gpu.temp_c:>3}C    {pstate:<2}{power:>24} |"
            f"{gpu.mem_used_mib:>7}MiB / {gpu.mem_total_mib:>5}MiB |{gpu.util_pct:>7}%      Default |",
            "|                                         |                      |             Disabled |",
            GPU_RULE,
        ]
    lines += [" " * 89, RULE, "| Processes:" + " " * 76 + "|"]
    lines += [
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                             Usage      |",
        "|" + "=" * 87 + "|",
    ]
    pids = sorted({qp.pid for nic in node.nics for qp in nic.qps if qp.comm == "python3"})
    busy = [g for g in node.gpus if g.util_pct > 0] if pids else []
    for gpu in busy:
        pid = pids[gpu.index % len(pids)]
        lines.append(
            f"|  {gpu.index:>3}   N/A  N/A  {pid:>8}      C   {'python3':<37}{gpu.mem_used_mib:>10}MiB |"
        )
    if not busy:
        lines.append("|  No running processes found" + " " * 59 + "|")
    lines.append(RULE)
    return "".join(line + "\n" for line in lines)


def _list_gpus(node: NodeView) -> str:
    return "".join(f"GPU {g.index}: {g.name} (UUID: {g.uuid})\n" for g in node.gpus)


def _usage_error(reason: str = "") -> ToolOutput:
    """nvidia-smi prints its complaints on stdout and exits 2."""
    return ToolOutput(f"{reason}\n\n{INVALID_ARGS}" if reason else INVALID_ARGS, "", 2)


def _gpu_ids(value: str, node: NodeView) -> list[int] | None:
    ids: list[int] = []
    for part in value.split(","):
        if not part.isdigit() or int(part) >= len(node.gpus):
            return None
        ids.append(int(part))
    return ids


@register("nvidia-smi")
def nvidia_smi(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """Answer ``nvidia-smi`` for the node in ``ctx`` (GPU numbers from the model)."""
    node = ctx.node
    if node is None or not node.gpus:
        return ToolOutput(NO_DRIVER, "", 9)
    args = argv[1:]
    if not args:
        return ToolOutput(_summary(node, ctx.now))
    if args in (["-L"], ["--list-gpus"]):
        return ToolOutput(_list_gpus(node))
    if args[:1] == ["topo"]:
        if args[1:] in (["-m"], ["--matrix"]):
            return ToolOutput(_topo(node))
        return _usage_error()
    if args[:1] in (["-q"], ["--query"]):
        rest = args[1:]
        if not rest:
            return ToolOutput(query(node, ctx.now))
        if len(rest) == 2 and rest[0] in ("-i", "--id"):
            chosen = _gpu_ids(rest[1], node)
            return ToolOutput(query(node, ctx.now, chosen)) if chosen is not None else ToolOutput(
                "No devices were found\n", "", 6)
        return _usage_error()
    if args[:1] == ["nvlink"]:
        if args[1:] in (["-e"], ["--error-counters"]):
            return ToolOutput(_nvlink_errors(node.gpus))
        return _usage_error()
    fields: list[str] | None = None
    fmt: list[str] = []
    ids: list[int] | None = None
    pending = list(args)
    while pending:
        arg = pending.pop(0)
        name, eq, value = arg.partition("=")
        if name in ("--query-gpu", "-i", "--id", "--format") and not eq:
            if not pending:
                return _usage_error()
            value = pending.pop(0)
        if name == "--query-gpu":
            fields = [f.strip() for f in value.split(",") if f.strip()]
        elif name == "--format":
            fmt = [f.strip() for f in value.split(",")]
            if "csv" not in fmt or any(f not in ("csv", "noheader", "nounits") for f in fmt):
                return _usage_error(f'"{value}" is not a valid format.')
        elif name in ("-i", "--id"):
            ids = _gpu_ids(value, node)
            if ids is None:
                return ToolOutput("No devices were found\n", "", 6)
        else:
            return _usage_error(f"Invalid argument: {arg}")
    if fields is None:
        return _usage_error()
    if not fmt:
        return _usage_error()
    return _query_gpu(node, ctx.now, fields, fmt, ids)
