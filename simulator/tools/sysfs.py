"""A read-only virtual ``/sys`` of a simulated node, and ``cat``, ``grep`` and ``ls`` over it.

The tree holds what the node agent and command-mode collectors read:
``/sys/class/infiniband/<dev>/{node_guid,sys_image_guid,fw_ver,hca_type,board_id,
node_type,node_desc}``, ``ports/<p>/{state,phys_state,rate,link_layer,lid,sm_lid,
lid_mask_count,cap_mask,gids/*,gid_attrs/{types,ndevs}/*,counters/*,hw_counters/*}``,
``device/net/<netdev>/...`` and ``/sys/class/net/<netdev>/{operstate,carrier,carrier_changes,
speed,mtu,address,statistics/*}``, and what says what the host is: ``/sys/devices/system/cpu/online``,
``/proc/meminfo`` and ``/sys/module/nvidia/version``. Values use the kernel's formats ("4: ACTIVE",
"5: LinkUp", "400 Gb/sec (4X NDR)", GIDs and GUIDs in colon groups). Paths are
expanded like a POSIX shell expands globs (sorted, a pattern that matches nothing
stays literal), because the simulated shell passes words through unexpanded.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from fleet.simulator.state import NicView, NodeView
from fleet.simulator.tools import LazyNode, ToolContext, ToolOutput, register
from fleet.simulator.tools.ib import (
    guid_colon,
    guid_int,
    sysfs_phys_state,
    sysfs_rate,
    sysfs_state,
)

IB_ROOT = "/sys/class/infiniband"
NET_ROOT = "/sys/class/net"

# /sys/class/infiniband/<dev>/ports/<p>/counters as the ib_core driver creates them
# (drivers/infiniband/core/sysfs.c pma counters), in the order the model should fill.
IB_PORT_COUNTERS: tuple[str, ...] = (
    "VL15_dropped",
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "multicast_rcv_packets",
    "multicast_xmit_packets",
    "port_rcv_constraint_errors",
    "port_rcv_data",
    "port_rcv_errors",
    "port_rcv_packets",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_xmit_data",
    "port_xmit_discards",
    "port_xmit_packets",
    "port_xmit_wait",
    "symbol_error",
    "unicast_rcv_packets",
    "unicast_xmit_packets",
)

# /sys/class/net/<netdev>/statistics/* from the mlx5e counters they fold
# (mlx5e_get_stats64: software ring counters, rx_out_of_buffer as rx_dropped,
# the PHY counters for CRC/length errors). RDMA traffic bypasses the netdev, as
# on a real RoCE host.
_NET_STATISTICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("collisions", ()),
    ("multicast", ("rx_multicast_phy",)),
    ("rx_bytes", ("rx_bytes",)),
    ("rx_compressed", ()),
    ("rx_crc_errors", ("rx_crc_errors_phy",)),
    ("rx_dropped", ("rx_out_of_buffer",)),
    ("rx_errors", ("rx_crc_errors_phy", "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy")),
    ("rx_fifo_errors", ()),
    ("rx_frame_errors", ()),
    ("rx_length_errors", ("rx_in_range_len_errors_phy", "rx_out_of_range_len_phy")),
    ("rx_missed_errors", ()),
    ("rx_nohandler", ()),
    ("rx_over_errors", ()),
    ("rx_packets", ("rx_packets",)),
    ("tx_aborted_errors", ()),
    ("tx_bytes", ("tx_bytes",)),
    ("tx_carrier_errors", ()),
    ("tx_compressed", ()),
    ("tx_dropped", ("tx_queue_dropped",)),
    ("tx_errors", ("tx_errors_phy",)),
    ("tx_fifo_errors", ()),
    ("tx_heartbeat_errors", ()),
    ("tx_packets", ("tx_packets",)),
    ("tx_window_errors", ()),
)

# The host around the NICs, as a DGX H100 has it (NVIDIA DGX H100 User Guide, "Hardware Overview":
# two Intel Xeon Platinum 8480C, 112 cores in all, 2 TB of memory,
# https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html): 224 CPUs online
# with Hyper-Threading, and MemTotal taken as the nominal 2 TiB.
HOST_CPUS = 224
HOST_MEMORY_KIB = 2 * 1024**3
HOST_AVAILABLE_SHARE = 0.93
"""Part of the memory ``MemAvailable`` reports (the rest: the kernel, the jobs' pinned buffers)."""


def _meminfo_line(name: str, kib: int) -> str:
    """A /proc/meminfo line as the kernel prints it: the name padded to 16 columns, the value at
    least 8 wide, then ``kB`` (fs/proc/meminfo.c, ``show_val_kb``)."""
    return f"{name + ':':<16}{kib:>8} kB"


def host_files(nvidia_driver: str) -> dict[str, str]:
    """The node's CPU list, /proc/meminfo and, with a driver, ``/sys/module/nvidia/version`` (no newline)."""
    available = int(HOST_MEMORY_KIB * HOST_AVAILABLE_SHARE)
    files = {
        "/sys/devices/system/cpu/online": f"0-{HOST_CPUS - 1}",
        "/proc/meminfo": "\n".join([
            _meminfo_line("MemTotal", HOST_MEMORY_KIB),
            _meminfo_line("MemFree", available - HOST_MEMORY_KIB // 100),
            _meminfo_line("MemAvailable", available),
            _meminfo_line("SwapTotal", 0),
            _meminfo_line("SwapFree", 0),
        ]),
    }
    if nvidia_driver:
        files["/sys/module/nvidia/version"] = nvidia_driver
    return files


# Jumbo frames, as a RoCE fabric runs them so that the 4096-byte RDMA MTU fits.
ROCE_NETDEV_MTU = 9000
IPOIB_MTU = 4092


def ib_port_counter_names() -> tuple[str, ...]:
    """Names of ``ports/<p>/counters/*`` that the model should fill (raw, data in 4-byte words)."""
    return IB_PORT_COUNTERS


@dataclass(frozen=True, slots=True)
class VirtualTree:
    """Files (path -> content with its newline) and directories (path -> sorted entries)."""

    files: dict[str, str]
    dirs: dict[str, tuple[str, ...]]

    def is_file(self, path: str) -> bool:
        return path in self.files

    def get(self, path: str) -> str | None:
        """The file's content, None if ``path`` is no file."""
        return self.files.get(path)

    def get_many(self, paths: list[str]) -> list[str | None]:
        return [self.files.get(path) for path in paths]

    def expand(self, word: str) -> list[str]:
        return expand(self, word)

    def resolve(self, word: str) -> list[tuple[str, str]]:
        """Each path ``word`` expands to, as shown and as the kernel reads it."""
        return [(path, _norm(path)) for path in expand(self, word)]

    def walk(self, path: str) -> Iterator[str]:
        """Every file under ``path``, depth first in sorted order (like ``grep -r``)."""
        return _walk(self.dirs, self.is_file, path)


def _walk(dirs: dict[str, tuple[str, ...]], is_file: Callable[[str], bool], path: str) -> Iterator[str]:
    for entry in dirs.get(path, ()):
        child = f"{path.rstrip('/')}/{entry}"
        if child in dirs:
            yield from _walk(dirs, is_file, child)
        elif is_file(child):
            yield child


# A NIC's files in four sections, by what their values depend on: "head" (identity and
# link state), "counters", "hw" (hw_counters) and "stats" (the netdev statistics, from
# ethtool). A full tree takes every section from the NicView; a lazy tree computes only
# the sections a command reads, through the same functions.


def _netdev_head(nic: NicView) -> dict[str, str]:
    up = nic.state == "ACTIVE"
    is_ib = nic.link_layer == "InfiniBand"
    return {
        "address": _ipoib_address(nic) if is_ib else nic.mac,
        "operstate": "up" if up else "down",
        "carrier": "1" if up else "0",
        "carrier_changes": str(nic.carrier_changes),
        "speed": str(nic.rate_gbps * 1000) if up else "-1",
        "mtu": str(IPOIB_MTU if is_ib else nic.qos.netdev_mtu if nic.qos is not None else ROCE_NETDEV_MTU),
        "type": "32" if is_ib else "1",
    }


def _ipoib_address(nic: NicView) -> str:
    """IPoIB hardware address: flags and QPN (4 bytes), then the port GID (16 bytes)."""
    gid = f"fe80000000000000{guid_int(nic.port_guid):016x}"
    return "00:00:10:87:" + ":".join(gid[i : i + 2] for i in range(0, 32, 2))


def _netdev_dirs(nic: NicView) -> tuple[str, str]:
    return f"{IB_ROOT}/{nic.name}/device/net/{nic.netdev}", f"{NET_ROOT}/{nic.netdev}"


def _head_files(nic: NicView, host: str) -> dict[str, str]:
    """Identity and link files of a NIC, by full path (values without the newline)."""
    dev = f"{IB_ROOT}/{nic.name}"
    port = f"{dev}/ports/{nic.port}"
    is_ib = nic.link_layer == "InfiniBand"
    files = {
        f"{dev}/node_guid": guid_colon(nic.node_guid),
        f"{dev}/sys_image_guid": guid_colon(nic.sys_image_guid),
        f"{dev}/fw_ver": nic.fw_version,
        f"{dev}/hca_type": nic.hca_type,
        f"{dev}/board_id": nic.board_id,
        f"{dev}/hw_rev": "0x0",
        f"{dev}/node_type": "1: CA",
        f"{dev}/node_desc": f"{host} {nic.name}",
        f"{port}/state": sysfs_state(nic),
        f"{port}/phys_state": sysfs_phys_state(nic),
        f"{port}/rate": sysfs_rate(nic),
        f"{port}/link_layer": nic.link_layer,
        f"{port}/lid": f"0x{nic.lid:x}",
        f"{port}/sm_lid": f"0x{nic.sm_lid:x}",
        f"{port}/lid_mask_count": "0",
        f"{port}/sm_sl": "0",
        f"{port}/cap_mask": "0xa751e848" if is_ib else "0x00010000",
    }
    for gid in nic.gids:
        files[f"{port}/gids/{gid.index}"] = gid.gid
        files[f"{port}/gid_attrs/types/{gid.index}"] = (
            "RoCE v2" if gid.roce_version == "v2" else "IB/RoCE v1"
        )
        files[f"{port}/gid_attrs/ndevs/{gid.index}"] = gid.netdev
    if is_ib and not nic.gids:
        files[f"{port}/gids/0"] = f"fe80:0000:0000:0000:{guid_colon(nic.port_guid)}"
    if nic.qos is not None:
        # MLNX_OFED's verbs default traffic class (empty until written) and the netdev's DCQCN switches
        tclass = nic.qos.traffic_class
        files[f"{dev}/tc/1/traffic_class"] = "" if tclass is None else f"Global tclass={tclass}"
        for point in ("roce_np", "roce_rp"):
            for priority, on in enumerate(getattr(nic.qos, f"ecn_{point.removeprefix('roce_')}")):
                files[f"{NET_ROOT}/{nic.netdev}/ecn/{point}/enable/{priority}"] = "1" if on else "0"
    return files


def _counter_values(counters: dict[str, int], end: str = "") -> dict[str, str]:
    """``ports/<p>/counters/<name>``, by name (each value followed by ``end``)."""
    return {name: f"{count}{end}" for name, count in counters.items()}


def _hw_values(hw_counters: dict[str, int], end: str = "") -> dict[str, str]:
    """``ports/<p>/hw_counters/<name>``, by name (each value followed by ``end``)."""
    values = {name: f"{count}{end}" for name, count in hw_counters.items()}
    if hw_counters:
        # The statistics refresh interval (ms) rdma_core exposes next to the counters.
        values["lifespan"] = f"10{end}"
    return values


def _stat_values(ethtool: dict[str, int], end: str = "") -> dict[str, str]:
    """The netdev's ``statistics/<name>``, by name (each value followed by ``end``)."""
    return {name: f"{sum(ethtool.get(src, 0) for src in sources)}{end}" for name, sources in _NET_STATISTICS}


SECTIONS = ("head", "counters", "hw", "stats")
_Section = tuple[int, str]
"""Where a file's value comes from: (slot: rail * 4 + index in SECTIONS, key in the section's values)."""


def _nic_sections(nic: NicView, rail: int) -> Iterator[tuple[str, _Section]]:
    """Every file of a NIC with the section (and key) its value comes from, in ``build_tree``'s order."""
    port = f"{IB_ROOT}/{nic.name}/ports/{nic.port}"
    head, counters, hw, stats = (rail * len(SECTIONS) + index for index in range(len(SECTIONS)))
    for path in _head_files(nic, ""):
        yield path, (head, path)
    for name in nic.counters:
        yield f"{port}/counters/{name}", (counters, name)
    for name in _hw_values(nic.hw_counters):
        yield f"{port}/hw_counters/{name}", (hw, name)
    for rel in _netdev_head(nic):
        for base in _netdev_dirs(nic):
            yield f"{base}/{rel}", (head, f"{base}/{rel}")
    for name, _ in _NET_STATISTICS:
        for base in _netdev_dirs(nic):
            yield f"{base}/statistics/{name}", (stats, name)


def _nic_files(nic: NicView, host: str) -> dict[str, str]:
    files = _head_files(nic, host)
    port = f"{IB_ROOT}/{nic.name}/ports/{nic.port}"
    for name, value in _counter_values(nic.counters).items():
        files[f"{port}/counters/{name}"] = value
    for name, value in _hw_values(nic.hw_counters).items():
        files[f"{port}/hw_counters/{name}"] = value
    for rel, text in _netdev_head(nic).items():
        for base in _netdev_dirs(nic):
            files[f"{base}/{rel}"] = text
    for name, value in _stat_values(nic.ethtool).items():
        for base in _netdev_dirs(nic):
            files[f"{base}/statistics/{name}"] = value
    return files


def _directories(paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
    children: dict[str, set[str]] = {"/": set()}
    for path in paths:
        child = path
        while True:  # register the path in its parents until one already knows it
            parent, _, name = child.rpartition("/")
            parent = parent or "/"
            entries = children.get(parent)
            if entries is not None:
                entries.add(name)
                break
            children[parent] = {name}
            child = parent
    return {path: tuple(sorted(entries)) for path, entries in children.items()}


def build_tree(node: NodeView) -> VirtualTree:
    """The node's virtual ``/sys`` (files end with the newline the kernel appends)."""
    contents: dict[str, str] = host_files(node.driver_version if node.gpus else "")
    for nic in node.nics:
        contents.update(_nic_files(nic, node.name))
    files = {path: value + "\n" for path, value in contents.items()}
    return VirtualTree(files, _directories(files))


_WORDS_REMEMBERED = 1024
"""Glob expansions a layout keeps: the collectors send a few words, a person may type any number."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The paths of a node's ``/sys``, fixed for the run: only the values move.

    Shared by every node of one shape (same NICs, netdevs and GIDs), with the
    glob expansions already answered for it.
    """

    dirs: dict[str, tuple[str, ...]]
    sections: dict[str, _Section]
    globs: dict[str, list[str]] = field(default_factory=dict)
    resolved: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def _layout_of(parts: LazyNode) -> Layout:
    """The node's layout: its shape learnt once per node, the layout built once per shape."""
    key = ("sysfs-layout", parts.name)
    layout = parts.memo.get(key)
    if isinstance(layout, Layout):
        return layout
    nics = [
        replace(parts.nic_head(rail), counters=dict.fromkeys(parts.counter_names(rail), 0),
                hw_counters=dict.fromkeys(parts.hw_counter_names(rail), 0))
        for rail in parts.rails
    ]
    driver = parts.nvidia_driver
    shape = (
        "sysfs-shape",
        driver,
        tuple(
            (nic.name, nic.port, nic.netdev, nic.link_layer, tuple(g.index for g in nic.gids),
             tuple(nic.counters), tuple(nic.hw_counters))
            for nic in nics
        ),
    )  # what the paths depend on: the files' values aside, nodes of one shape have one tree
    layout = parts.memo.get(shape)
    if not isinstance(layout, Layout):
        sections: dict[str, _Section] = {path: (_host_slot(parts), path) for path in host_files(driver)}
        for rail, nic in zip(parts.rails, nics, strict=True):
            sections.update(_nic_sections(nic, rail))
        layout = Layout(_directories(sections), sections)
        parts.memo[shape] = layout
    parts.memo[key] = layout
    return layout


def _host_slot(parts: LazyNode) -> int:
    """The section of the host's own files: after every rail's."""
    return len(SECTIONS) * len(parts.rails)


class LazyTree:
    """A node's ``/sys`` read through its parts: a section's values are computed when a file in it is read."""

    def __init__(self, parts: LazyNode) -> None:
        self.layout = _layout_of(parts)
        self.dirs = self.layout.dirs
        self._sections = self.layout.sections
        self._parts = parts
        self._values: list[dict[str, str] | None] = [None] * (_host_slot(parts) + 1)

    def is_file(self, path: str) -> bool:
        return path in self._sections

    def get(self, path: str) -> str | None:
        """The file's content, None if ``path`` is no file."""
        where = self._sections.get(path)
        if where is None:
            return None
        slot, key = where
        values = self._values[slot]
        if values is None:
            values = self._values[slot] = self._section(slot)
        return values[key]

    def _section(self, slot: int) -> dict[str, str]:
        parts = self._parts
        if slot == _host_slot(parts):
            return {path: text + "\n" for path, text in host_files(parts.nvidia_driver).items()}
        rail, index = divmod(slot, len(SECTIONS))
        section = SECTIONS[index]
        if section == "counters":
            return _counter_values(parts.counters(rail), "\n")
        if section == "hw":
            return _hw_values(parts.hw_counters(rail), "\n")
        if section == "stats":
            return _stat_values(parts.ethtool(rail), "\n")
        nic = parts.nic_head(rail)
        values = _head_files(nic, parts.name)
        for rel, text in _netdev_head(nic).items():
            for base in _netdev_dirs(nic):
                values[f"{base}/{rel}"] = text
        return {key: value + "\n" for key, value in values.items()}

    def get_many(self, paths: list[str]) -> list[str | None]:
        """``get`` of each path, in one loop: grep reads a hundred files per command."""
        sections, values = self._sections, self._values
        texts: list[str | None] = []
        for path in paths:
            where = sections.get(path)
            if where is None:
                texts.append(None)
                continue
            slot, key = where
            section = values[slot]
            if section is None:
                section = values[slot] = self._section(slot)
            texts.append(section[key])
        return texts

    def resolve(self, word: str) -> list[tuple[str, str]]:
        """``resolve`` over the layout, remembered per word for the run."""
        remembered = self.layout.resolved
        resolved = remembered.get(word)
        if resolved is None:
            if len(remembered) >= _WORDS_REMEMBERED:
                remembered.clear()
            resolved = remembered[word] = [(path, _norm(path)) for path in self.expand(word)]
        return resolved

    def expand(self, word: str) -> list[str]:
        """``expand`` over the layout, remembered per word for the run (a new list each time)."""
        globs = self.layout.globs
        paths = globs.get(word)
        if paths is None:
            if len(globs) >= _WORDS_REMEMBERED:
                globs.clear()
            paths = globs[word] = _expand(self.dirs, word)
        return list(paths)

    def walk(self, path: str) -> Iterator[str]:
        return _walk(self.dirs, self.is_file, path)


_MAGIC = re.compile(r"[*?\[]")


_ONE_LINE = re.compile("[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+\n\\Z")
"""One non-empty line and its newline, as ``str.splitlines`` splits lines."""

_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


def brace_expand(word: str) -> list[str]:
    """bash brace expansion ("a/{x,y}/b" -> "a/x/b", "a/y/b"), innermost group first."""
    match = _BRACE.search(word)
    if match is None:
        return [word]
    head, tail = word[: match.start()], word[match.end() :]
    return [w for option in match.group(1).split(",") for w in brace_expand(head + option + tail)]


def expand(tree: VirtualTree, word: str) -> list[str]:
    """bash's brace then pathname expansion of ``word`` over the tree (sorted; no match: literal)."""
    return _expand(tree.dirs, word)


def _expand(dirs: dict[str, tuple[str, ...]], word: str) -> list[str]:
    words = brace_expand(word)
    if len(words) > 1:
        return [path for w in words for path in _expand(dirs, w)]
    if not _MAGIC.search(word) or not word.startswith("/"):
        return [word]
    matches = ["/"]
    for part in word.strip("/").split("/"):
        nxt: list[str] = []
        for base in matches:
            entries = dirs.get(base, ())
            if _MAGIC.search(part):
                hits = [
                    e
                    for e in entries
                    if fnmatch.fnmatchcase(e, part)
                    and (part.startswith(".") or not e.startswith("."))
                ]
            else:
                hits = [part] if part in entries else []
            nxt += [f"{base.rstrip('/')}/{hit}" for hit in hits]
        matches = nxt
    if word.endswith("/"):
        matches = [m + "/" for m in matches if m in dirs]
    return sorted(matches) or [word]


def _norm(path: str) -> str:
    """Collapse repeated and trailing slashes as the kernel's path walk does."""
    if "//" not in path and not path.endswith("/"):
        return path
    collapsed = re.sub(r"/+", "/", path)
    return collapsed.rstrip("/") or "/"


class Tree(Protocol):
    """What cat, grep and ls read: a full ``VirtualTree`` or a node's ``LazyTree``."""

    @property
    def dirs(self) -> dict[str, tuple[str, ...]]: ...

    def is_file(self, path: str) -> bool: ...

    def get(self, path: str) -> str | None: ...

    def get_many(self, paths: list[str]) -> list[str | None]: ...

    def resolve(self, word: str) -> list[tuple[str, str]]: ...

    def expand(self, word: str) -> list[str]: ...

    def walk(self, path: str) -> Iterator[str]: ...


_EMPTY = VirtualTree({}, {"/": ()})


def _tree(ctx: ToolContext) -> Tree:
    if ctx.parts is not None:
        return LazyTree(ctx.parts)
    if ctx.node is None:
        return _EMPTY
    return build_tree(ctx.node)


@register("cat")
def cat(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``cat FILE...``: contents in order; errors as GNU cat words them, exit 1 if any failed."""
    tree = _tree(ctx)
    out: list[str] = []
    err: list[str] = []
    for word in argv[1:]:
        if word == "--":
            continue
        for path in tree.expand(word):
            real = _norm(path)
            text = tree.get(real)
            if text is not None:
                out.append(text)
            elif real in tree.dirs:
                err.append(f"cat: {path}: Is a directory\n")
            else:
                err.append(f"cat: {path}: No such file or directory\n")
    return ToolOutput("".join(out), "".join(err), 1 if err else 0)


@register("grep")
def grep(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``grep [-HhrRsvciEF] [-e] PATTERN FILE...`` over the virtual tree (GNU grep's words)."""
    tree = _tree(ctx)
    with_name: bool | None = None
    recursive = silent = invert = count = ignore_case = False
    syntax = "basic"  # -E extended, -F fixed strings
    pattern: str | None = None
    words: list[str] = []
    options_done = False
    expect_pattern = False
    for arg in argv[1:]:
        if expect_pattern:
            pattern, expect_pattern = arg, False
        elif not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("-") and len(arg) > 1:
            for letter in arg[1:]:
                if letter == "H":
                    with_name = True
                elif letter == "h":
                    with_name = False
                elif letter in "rR":
                    recursive = True
                elif letter == "s":
                    silent = True
                elif letter == "v":
                    invert = True
                elif letter == "c":
                    count = True
                elif letter == "e":
                    expect_pattern = True
                elif letter == "i":
                    ignore_case = True
                elif letter in "EF":
                    syntax = "extended" if letter == "E" else "fixed"
                else:
                    return ToolOutput(
                        "",
                        f"grep: invalid option -- '{letter}'\nUsage: grep [OPTION]... PATTERNS [FILE]...\n"
                        "Try 'grep --help' for more information.\n",
                        2,
                    )
        elif pattern is None:
            pattern = arg
        else:
            words.append(arg)
    if pattern is None:
        return ToolOutput(
            "",
            "Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.\n",
            2,
        )
    try:
        source = {
            "basic": _bre_to_python(pattern),
            "extended": pattern,
            "fixed": re.escape(pattern),
        }[syntax]
        regex = re.compile(source, re.IGNORECASE if ignore_case else 0)
    except re.error:
        return ToolOutput("", "grep: Unmatched [, [^, [:, [., or [=\n", 2)
    pairs = [pair for w in words for pair in tree.resolve(w)]
    any_line = source == "." and not invert and not count
    """The pattern ``.`` matches every non-empty line: no regex needed for a one-line file."""
    if with_name is None:
        with_name = len(pairs) > 1 or recursive
    out: list[str] = []
    err: list[str] = []
    matched = False
    texts = tree.get_many([real for _, real in pairs])
    for (path, real), text in zip(pairs, texts, strict=True):
        if text is not None:
            if any_line and _ONE_LINE.match(text):  # the common case: a one-value file under "grep ."
                matched = True
                out.append(f"{path}:{text}" if with_name else text)
                continue
            targets = [(path, real)]
        elif real in tree.dirs:
            if not recursive:
                err.append(f"grep: {path}: Is a directory\n")
                continue
            targets = [(f"{path.rstrip('/')}{f[len(real) :]}" if real != "/" else f, f) for f in tree.walk(real)]
        else:
            err.append(f"grep: {path}: No such file or directory\n")
            continue
        for shown, file_path in targets:
            lines = (tree.get(file_path) or "").splitlines()
            hits = [line for line in lines if bool(regex.search(line)) != invert]
            matched = matched or bool(hits)
            if count:
                out.append(f"{shown}:{len(hits)}\n" if with_name else f"{len(hits)}\n")
                continue
            out += [f"{shown}:{line}\n" if with_name else f"{line}\n" for line in hits]
    status = 2 if err and not (silent and matched) else (0 if matched else 1)
    return ToolOutput("".join(out), "" if silent else "".join(err), status)


def _bre_to_python(pattern: str) -> str:
    """GNU basic regular expressions: ``\\|``, ``\\(``, ``\\)``, ``\\+``, ``\\?`` are the operators."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(nxt if nxt in "|()+?{}" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + ch if ch in "|()+?{}" else ch)
        i += 1
    return "".join(out)


@register("ls")
def ls(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ls [-1] PATH...``: one name per line, as ls prints when stdout is not a terminal."""
    tree = _tree(ctx)
    words = [w for w in argv[1:] if not w.startswith("-")]
    paths = [p for w in (words or ["/"]) for p in tree.expand(w)]
    out: list[str] = []
    err: list[str] = []
    files = [p for p in paths if tree.is_file(_norm(p))]
    dirs = [p for p in paths if _norm(p) in tree.dirs]
    for path in paths:
        if not tree.is_file(_norm(path)) and _norm(path) not in tree.dirs:
            err.append(f"ls: cannot access '{path}': No such file or directory\n")
    out += [f"{p}\n" for p in sorted(files)]
    for index, path in enumerate(sorted(dirs)):
        if len(paths) > 1:
            out.append(("\n" if files or index else "") + f"{path}:\n")
        out += [f"{entry}\n" for entry in tree.dirs[_norm(path)]]
    return ToolOutput("".join(out), "".join(err), 2 if err else 0)
