"""Scenario files: the simulated fabric, its Slurm jobs and its faults, as TOML.

The same format serves the built-in scenarios (``simulator/scenarios/*.toml``)
and a user's own file. Every problem is reported as a :class:`ScenarioError`
whose message names the file, the line and the key, so that a typo never ends
in a traceback.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import hostlist

from fleet.fabric.naming import RAILS_PER_NODE, nic_name

SCENARIO_DIR = Path(__file__).parent / "scenarios"

LINK_LAYERS = ("roce", "ib")
SWITCH_OSES = ("cumulus", "sonic")

FAULT_KINDS: dict[str, dict[str, tuple[type, Any]]] = {
    # kind -> {parameter: (type, default or REQUIRED)}
    "link_down": {},
    "link_flap": {"period": (float, 30.0)},
    "optics_attenuation": {"db": (float, "required")},
    "high_ber": {"ber": (float, "required")},
    "degraded_rate": {"gbps": (int, "required")},
    "miswire": {},
    "pfc_storm": {},
    "ecn_disabled": {},
    "ecmp_collision": {"survives_hash_fields": (float, 0.0)},  # 1: the leaf's hash ignores hash-field changes
    "spine_loss": {"rate": (float, 0.001)},
    "qp_exhaustion": {"qps": (int, 2048)},
    "gpu_xid": {"xid": (int, "required")},
    "gpu_thermal": {"temp_c": (float, 94.0)},
    "node_unreachable": {},
    "node_hang": {},
    "slow_node": {"delay": (float, 2.0)},
    "hostile_output": {"form": (str, "required"), "command": (str, "*")},
    # misconfigurations (fleet.simulator.qos_state): what `fleet check` finds and `fleet check fix` restores
    "pfc_disabled": {},
    "trust_pcp": {},
    "dscp_map_mismatch": {"dscp": (int, 26), "priority": (int, 0)},
    "mtu_mismatch": {"mtu": (int, 1500)},
    "gid_index_mismatch": {},
    "peermem_missing": {},
    "acs_enabled": {},
    "pcie_downtrained": {"gts": (float, 16.0), "width": (int, 16)},
    "nic_far_from_gpu": {},
    "firmware_drift": {},
    "pfc_watchdog_disabled": {},
}
"""Each fault kind and its parameters (units: seconds, dB, bit error ratio, Gb/s, fraction; MTU in bytes,
PCIe speed in GT/s, width in lanes; words for ``hostile_output``: which of ``HOSTILE_FORMS`` it prints, and
for which commands)."""

HOSTILE_FORMS = ("deep_json", "wrong_table", "binary", "long_line", "huge")
"""What a ``hostile_output`` fault makes a machine print instead of a command's output
(``fleet.simulator.hostile``): JSON nested 100,000 deep, a one-column table, binary bytes,
a 2 MiB line, 16 MiB of output. ``command`` is a shell-style pattern (``fnmatch``) over the
command's words joined by spaces: ``lldpctl *``, ``nv show interface * counters -o json``,
``python3 *`` (the node agent: each of its lines), ``*`` (every command)."""

MISCONFIG_KINDS = frozenset({
    "pfc_disabled", "trust_pcp", "dscp_map_mismatch", "mtu_mismatch", "gid_index_mismatch", "peermem_missing",
    "acs_enabled", "pcie_downtrained", "nic_far_from_gpu", "firmware_drift", "pfc_watchdog_disabled",
})  # fmt: skip
"""Fault kinds that misconfigure a machine rather than break a part (``ecn_disabled`` does both)."""

TARGET_KINDS: dict[str, tuple[str, ...]] = {
    # which target forms a fault kind accepts: nic = node:mlx5_N, port = switch:port,
    # node, switch, leaf, spine, gpu = node:gpuN, host = node, switch or the head
    "link_down": ("nic", "port"),
    "link_flap": ("nic", "port"),
    "optics_attenuation": ("nic", "port"),
    "high_ber": ("nic", "port"),
    "degraded_rate": ("nic", "port"),
    "miswire": ("nic_pair",),
    "pfc_storm": ("nic",),
    "ecn_disabled": ("nic", "switch"),
    "ecmp_collision": ("leaf",),
    "spine_loss": ("spine",),
    "qp_exhaustion": ("nic", "node"),
    "gpu_xid": ("node", "gpu"),
    "gpu_thermal": ("node", "gpu"),
    "node_unreachable": ("host",),
    "node_hang": ("host",),
    "slow_node": ("host",),
    "hostile_output": ("host",),
    "pfc_disabled": ("nic", "port"),
    "trust_pcp": ("nic", "switch"),
    "dscp_map_mismatch": ("nic", "switch"),
    "mtu_mismatch": ("nic", "port"),
    "gid_index_mismatch": ("nic", "node"),
    "peermem_missing": ("node",),
    "acs_enabled": ("node", "gpu"),
    "pcie_downtrained": ("nic", "gpu"),
    "nic_far_from_gpu": ("nic",),
    "firmware_drift": ("nic", "node"),
    "pfc_watchdog_disabled": ("switch", "port"),
}


class ScenarioError(Exception):
    """A scenario file problem, already worded for the user: ``FILE:LINE: key 'k': problem``."""


@dataclass(frozen=True, slots=True)
class FabricSpec:
    nodes: int
    nodes_per_leaf: int = 8
    spines: int = 4
    link_layer: str = "roce"  # "roce" | "ib"
    link_gbps: int = 400
    seed: int = 1

    @property
    def groups(self) -> int:
        """Leaf groups: ceil(nodes / nodes_per_leaf)."""
        return -(-self.nodes // self.nodes_per_leaf)


@dataclass(frozen=True, slots=True)
class SwitchOsSpec:
    names: tuple[str, ...]
    os: str


@dataclass(frozen=True, slots=True)
class JobSpec:
    id: int
    tenant: str
    nodes: tuple[str, ...]
    load: float  # fraction of line rate the job's flows offer
    name: str = "train"
    user: str = "svc-train"
    partition: str = "gpu"
    start: float = 0.0  # seconds after the simulator started; may be negative (already running)


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One fault. ``target`` as written; ``targets`` holds both ends of a miswire."""

    kind: str
    target: str
    at: float = 0.0  # seconds after start
    until: float | None = None  # seconds after start; None: for ever
    params: Mapping[str, float] = field(default_factory=dict)
    targets: tuple[str, ...] = ()
    words: Mapping[str, str] = field(default_factory=dict)
    """Parameters that are words (``hostile_output``'s ``form`` and ``command``), defaults filled in."""

    def param(self, name: str) -> float:
        """A parameter with its default filled in (see ``FAULT_KINDS``)."""
        value = self.params.get(name)
        if value is None:
            default = FAULT_KINDS[self.kind][name][1]
            assert not isinstance(default, str), f"{self.kind}.{name} is required"
            return float(default)
        return float(value)

    def active(self, t: float) -> bool:
        return self.at <= t and (self.until is None or t < self.until)


EP_BENCHES = ("uccl-ep", "deepep")
"""Expert-parallel benchmarks a scenario can install on its nodes (``[software] ep_bench``): whose
``test_internode.py`` layout their ``torchrun`` prints (``fleet.simulator.ep_bench``)."""


@dataclass(frozen=True, slots=True)
class SoftwareSpec:
    """What the nodes have installed beyond the standard tools: ``ep_bench`` (one of ``EP_BENCHES``, ""
    for none) on ``ep_nodes`` (None: every node)."""

    ep_bench: str = ""
    ep_nodes: frozenset[str] | None = None

    def has_ep_bench(self, node: str) -> bool:
        return bool(self.ep_bench) and (self.ep_nodes is None or node in self.ep_nodes)


@dataclass(frozen=True, slots=True)
class ReportedSpec:
    """What the machines say about themselves, where a scenario changes it (``[reported]``).

    None keeps the simulator's own (an HGX H100 node with ConnectX-7 NICs, see
    ``fleet.simulator.model``). In a template, ``{name}`` is the machine's name and
    ``{port}`` the switch port's. Any text goes, escape sequences included: the
    ``hostile-names`` scenario rehearses what a broken or malicious machine prints.
    """

    gpu_name: str | None = None
    gpu_driver: str | None = None
    nic_firmware: str | None = None
    kernel: str | None = None
    node_system_name: str | None = None
    """Template of the LLDP system name a node announces (the switches' neighbour tables show it)."""
    switch_system_name: str | None = None
    """Template of the LLDP system name a switch announces (a node's ``lldpctl`` shows it)."""
    switch_port_description: str | None = None
    """Template of the LLDP port description a switch port announces."""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    fabric: FabricSpec
    switch_os: tuple[SwitchOsSpec, ...] = ()
    jobs: tuple[JobSpec, ...] = ()
    faults: tuple[FaultSpec, ...] = ()
    description: str = ""
    software: SoftwareSpec = field(default_factory=SoftwareSpec)
    reported: ReportedSpec = field(default_factory=ReportedSpec)
    scaled: str = ""
    """What a ``--nodes`` override changed, in one line ("" when nothing): jobs that keep only the
    nodes the smaller fabric has, jobs and faults dropped because none of their machines is left."""


# --------------------------------------------------------------------------- locating keys


class _Lines:
    """Where each key of a TOML document is written, for error messages (tomllib keeps no lines)."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        counts: dict[str, int] = {}
        table, index = "", 0
        for number, line in enumerate(text.splitlines(), start=1):
            header = self._HEADER.match(line)
            if header:
                table = header.group(2)
                if header.group(1) == "[[":
                    counts[table] = counts.get(table, -1) + 1
                    index = counts[table]
                else:
                    index = 0
                self.tables[(table, index)] = number
                continue
            key = self._KEY.match(line)
            if key:
                self.keys.setdefault((table, index, key.group(1).strip('"')), number)

    def line(self, table: str, index: int = 0, key: str | None = None) -> int:
        if key is not None and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        return self.tables.get((table, index), 1)


class _Checker:
    """Type and range checks that raise ScenarioError with file, line and key."""

    def __init__(self, source: str, lines: _Lines) -> None:
        self.source = source
        self.lines = lines

    def fail(self, table: str, index: int, key: str | None, problem: str) -> ScenarioError:
        where = f"[[{table}]] #{index + 1}" if table in ("jobs", "faults", "switch_os") else f"[{table}]"
        what = f"{where} key '{key}'" if key else where
        return ScenarioError(f"{self.source}:{self.lines.line(table, index, key)}: {what}: {problem}")

    def keys(self, table: str, index: int, data: Mapping[str, Any], allowed: set[str]) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(table, index, key, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def get(
        self, table: str, index: int, data: Mapping[str, Any], key: str, kind: type, default: Any = "required"
    ) -> Any:
        if key not in data:
            if isinstance(default, str) and default == "required":
                raise self.fail(table, index, key, "missing (required)")
            return default
        value = data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise self.fail(table, index, key, f"must be {_type_word(kind)}, got {value!r}")
        return value


def _type_word(kind: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(kind, kind.__name__)


# --------------------------------------------------------------------------- loading


def builtin_scenarios() -> dict[str, Path]:
    """Built-in scenario name -> file."""
    return {path.stem: path for path in sorted(SCENARIO_DIR.glob("*.toml"), key=lambda p: p.stem)}


def resolve_scenario(name_or_path: str) -> Path:
    """A built-in name (``incident``) or a path to a TOML file."""
    builtin = builtin_scenarios()
    if name_or_path in builtin:
        return builtin[name_or_path]
    path = Path(name_or_path)
    if path.is_file():
        return path
    raise ScenarioError(
        f"{name_or_path}: no such scenario file or built-in scenario (built-in: {', '.join(builtin)})"
    )


def load_scenario(name_or_path: str, *, nodes: int | None = None) -> Scenario:
    """Read and validate a scenario; ``nodes`` overrides ``[fabric] nodes``."""
    path = resolve_scenario(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: cannot read: {error}") from None
    return parse_scenario(text, source=str(path), name=path.stem, nodes=nodes)


def parse_scenario(text: str, *, source: str = "<scenario>", name: str = "custom", nodes: int | None = None) -> Scenario:
    """Parse and validate scenario TOML text; raises ScenarioError naming line and key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
        where = f"{source}:{match.group(1)}" if match else source
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise ScenarioError(f"{where}: not valid TOML: {reason}") from None
    lines = _Lines(text)
    check = _Checker(source, lines)
    top_allowed = {"fabric", "switch_os", "jobs", "faults", "description", "software", "reported"}
    for key in data:
        if key not in top_allowed:
            raise ScenarioError(
                f"{source}:{lines.line(key, 0, None)}: unknown table or key '{key}' "
                f"(allowed: {', '.join(sorted(top_allowed))})"
            )
    if "fabric" not in data or not isinstance(data["fabric"], dict):
        raise ScenarioError(f"{source}:1: [fabric] table missing (required)")
    fabric = _fabric(check, data["fabric"], nodes)
    file_fabric = _fabric(check, data["fabric"], None) if nodes is not None else fabric
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(f"{source}:{lines.line('', 0, 'description')}: key 'description': must be a string")
    scaling = _Scaling(fabric.nodes) if file_fabric != fabric else None
    names = _Names(fabric, {})
    full = _Names(file_fabric, {}) if scaling is not None else names
    switch_os = tuple(spec for i, entry in enumerate(_array(check, data, "switch_os"))
                      if (spec := _switch_os(check, i, entry, names, full if scaling else None)) is not None)
    names = _Names(fabric, {switch: spec.os for spec in switch_os for switch in spec.names})
    if scaling is None:
        full = names
    else:  # the file's own fabric with its switch OSes, so a target such as leaf10:Ethernet8 is checked as written
        full = _Names(file_fabric, {switch: spec.os for i, entry in enumerate(_array(check, data, "switch_os"))
                                    if (spec := _switch_os(check, i, entry, full)) is not None
                                    for switch in spec.names})
    jobs = tuple(job for i, entry in enumerate(_array(check, data, "jobs"))
                 if (job := _job(check, i, entry, names, scaling)) is not None)
    _no_shared_nodes(check, jobs)
    faults = tuple(fault for i, entry in enumerate(_array(check, data, "faults"))
                   if (fault := _scaled_fault(check, i, entry, names, full, scaling)) is not None)
    software = _software(check, data.get("software", {}), names, full)
    reported = _reported(check, data.get("reported", {}))
    return Scenario(name=name, fabric=fabric, switch_os=switch_os, jobs=jobs, faults=faults, description=description,
                    software=software, reported=reported, scaled=scaling.words() if scaling is not None else "")


def _software(check: _Checker, raw: Any, names: _Names, full: _Names) -> SoftwareSpec:
    """The ``[software]`` table; ``ep_nodes`` is checked against the file's own fabric and keeps the
    nodes a ``--nodes`` override left."""
    t = "software"
    if not isinstance(raw, dict):
        raise check.fail(t, 0, None, "must be a [software] table")
    check.keys(t, 0, raw, {"ep_bench", "ep_nodes"})
    bench = check.get(t, 0, raw, "ep_bench", str, "")
    if bench and bench not in EP_BENCHES:
        raise check.fail(t, 0, "ep_bench", f"must be one of {', '.join(EP_BENCHES)}, got {bench!r}")
    nodes: frozenset[str] | None = None
    if "ep_nodes" in raw:
        expression = check.get(t, 0, raw, "ep_nodes", str)
        expanded = _expand(check, t, 0, "ep_nodes", expression, full)
        unknown = [n for n in expanded if n not in full.nodes]
        if unknown:
            raise check.fail(t, 0, "ep_nodes", f"not a node of the fabric: {', '.join(unknown[:5])}")
        nodes = frozenset(n for n in expanded if n in names.nodes)
    return SoftwareSpec(bench, nodes)


def _reported(check: _Checker, raw: Any) -> ReportedSpec:
    t = "reported"
    if not isinstance(raw, dict):
        raise check.fail(t, 0, None, "must be a table ([reported])")
    keys = set(ReportedSpec.__dataclass_fields__)
    check.keys(t, 0, raw, keys)
    spec = ReportedSpec(**{key: check.get(t, 0, raw, key, str, None) for key in keys})
    for key in ("node_system_name", "switch_system_name", "switch_port_description"):
        template = getattr(spec, key)
        if template is not None:
            try:
                template.format(name="x", port="x")
            except (KeyError, IndexError, ValueError) as error:
                raise check.fail(t, 0, key, f"not a template of {{name}} and {{port}}: {error}") from None
    return spec


def _array(check: _Checker, data: Mapping[str, Any], table: str) -> list[dict[str, Any]]:
    entries = data.get(table, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise check.fail(table, 0, None, f"must be written as [[{table}]] tables")
    return entries


def _fabric(check: _Checker, raw: Mapping[str, Any], nodes: int | None) -> FabricSpec:
    t = "fabric"
    check.keys(t, 0, raw, {"nodes", "nodes_per_leaf", "spines", "link_layer", "link_gbps", "seed"})
    spec = FabricSpec(
        nodes=check.get(t, 0, raw, "nodes", int),
        nodes_per_leaf=check.get(t, 0, raw, "nodes_per_leaf", int, 8),
        spines=check.get(t, 0, raw, "spines", int, 4),
        link_layer=check.get(t, 0, raw, "link_layer", str, "roce"),
        link_gbps=check.get(t, 0, raw, "link_gbps", int, 400),
        seed=check.get(t, 0, raw, "seed", int, 1),
    )
    if nodes is not None:
        spec = replace(spec, nodes=nodes)
    limits = {"nodes": (1, 4096), "nodes_per_leaf": (1, 512), "spines": (1, 64)}
    for key, (low, high) in limits.items():
        value = getattr(spec, key)
        if not low <= value <= high:
            raise check.fail(t, 0, key, f"must be between {low} and {high}, got {value}")
    if spec.link_layer not in LINK_LAYERS:
        raise check.fail(t, 0, "link_layer", f"must be one of {', '.join(LINK_LAYERS)}, got {spec.link_layer!r}")
    if spec.link_gbps not in (100, 200, 400, 800):
        raise check.fail(t, 0, "link_gbps", f"must be 100, 200, 400 or 800, got {spec.link_gbps}")
    if spec.seed < 0:
        raise check.fail(t, 0, "seed", "must not be negative")
    return spec


class _Names:
    """Every machine name and port the fabric has, for target checks."""

    def __init__(self, fabric: FabricSpec, switch_os: Mapping[str, str]) -> None:
        from fleet.simulator.topology import Topology  # topology imports this module's data types

        self.topology = Topology(fabric, switch_os)
        self.nodes = set(self.topology.nodes)
        self.leaves = set(self.topology.leaves)
        self.spines = set(self.topology.spines)
        self.switches = self.leaves | self.spines
        self.nics = {nic_name(r) for r in range(RAILS_PER_NODE)}

    def expand(self, expression: str) -> list[str]:
        return list(hostlist.expand_hostlist(expression))


def _expand(check: _Checker, table: str, index: int, key: str, expression: str, names: _Names) -> list[str]:
    try:
        return names.expand(expression)
    except hostlist.BadHostlist as error:
        raise check.fail(table, index, key, f"not a host list ({error}): {expression!r}") from None


class _Scaling:
    """What fitting a scenario to another node count changed, for the one line ``fleet sim`` prints."""

    def __init__(self, nodes: int) -> None:
        self.nodes = nodes
        self.trimmed: list[str] = []
        self.dropped_jobs: list[str] = []
        self.dropped_faults: list[str] = []

    def words(self) -> str:
        parts = [f"fitted to {self.nodes} nodes"]
        if self.trimmed:
            parts.append("; ".join(self.trimmed))
        if self.dropped_jobs:
            parts.append(f"dropped job{'s' if len(self.dropped_jobs) > 1 else ''} {', '.join(self.dropped_jobs)}")
        if self.dropped_faults:
            parts.append(f"dropped {len(self.dropped_faults)} fault{'s' if len(self.dropped_faults) > 1 else ''} "
                         f"({', '.join(self.dropped_faults)})")
        if len(parts) == 1:
            return ""
        return ": ".join((parts[0], "; ".join(parts[1:]))) + " (their machines are not in this fabric)"


def _switch_os(check: _Checker, index: int, raw: Mapping[str, Any], names: _Names,
               full: _Names | None = None) -> SwitchOsSpec | None:
    """``full``: the fabric as the file sizes it, when a node count override shrank it: switches of
    it that the smaller fabric lacks are left out (None when none is left)."""
    t = "switch_os"
    check.keys(t, index, raw, {"names", "os"})
    expression = check.get(t, index, raw, "names", str)
    os_name = check.get(t, index, raw, "os", str)
    if os_name not in SWITCH_OSES:
        raise check.fail(t, index, "os", f"must be one of {', '.join(SWITCH_OSES)}, got {os_name!r}")
    switches = _expand(check, t, index, "names", expression, names)
    if full is not None:
        switches = [s for s in switches if s in names.switches or s not in full.switches]
        if not switches:
            return None
    for switch in switches:
        if switch not in names.switches:
            raise check.fail(t, index, "names", f"no switch named {switch!r} in this fabric")
    return SwitchOsSpec(names=tuple(switches), os=os_name)


def _job(check: _Checker, index: int, raw: Mapping[str, Any], names: _Names,
         scaling: _Scaling | None = None) -> JobSpec | None:
    """``scaling``: a node count override is in effect: the job keeps the nodes the fabric has, and
    is dropped (None) when it keeps none."""
    t = "jobs"
    check.keys(t, index, raw, {"id", "tenant", "nodes", "load", "name", "user", "partition", "start"})
    expression = check.get(t, index, raw, "nodes", str)
    job_nodes = _expand(check, t, index, "nodes", expression, names)
    if scaling is not None:
        kept = [node for node in job_nodes if node in names.nodes]
        label = f"job {raw.get('id', index + 1)}"
        if not kept:
            scaling.dropped_jobs.append(str(raw.get("id", index + 1)))
            return None
        if len(kept) < len(job_nodes):
            scaling.trimmed.append(f"{label} runs on {hostlist.collect_hostlist(kept)} "
                                   f"({len(kept)} of its {len(job_nodes)} nodes)")
        job_nodes = kept
    for node in job_nodes:
        if node not in names.nodes:
            raise check.fail(t, index, "nodes", f"no node named {node!r} (the fabric has {len(names.nodes)} nodes)")
    if len(job_nodes) < 1:
        raise check.fail(t, index, "nodes", "names no node")
    load = check.get(t, index, raw, "load", float, 0.6)
    if not 0.0 <= load <= 1.0:
        raise check.fail(t, index, "load", f"must be between 0 and 1 (fraction of line rate), got {load}")
    job_id = check.get(t, index, raw, "id", int)
    if job_id <= 0:
        raise check.fail(t, index, "id", "must be a positive integer")
    return JobSpec(
        id=job_id,
        tenant=check.get(t, index, raw, "tenant", str),
        nodes=tuple(job_nodes),
        load=load,
        name=check.get(t, index, raw, "name", str, "train"),
        user=check.get(t, index, raw, "user", str, "svc-train"),
        partition=check.get(t, index, raw, "partition", str, "gpu"),
        start=check.get(t, index, raw, "start", float, -3600.0),
    )


def _no_shared_nodes(check: _Checker, jobs: tuple[JobSpec, ...]) -> None:
    owner: dict[str, int] = {}
    ids: set[int] = set()
    for index, job in enumerate(jobs):
        if job.id in ids:
            raise check.fail("jobs", index, "id", f"job id {job.id} used twice")
        ids.add(job.id)
        for node in job.nodes:
            if node in owner:
                raise check.fail("jobs", index, "nodes", f"{node} already runs job {owner[node]}")
            owner[node] = job.id


def _scaled_fault(check: _Checker, index: int, raw: Mapping[str, Any], names: _Names, full: _Names,
                  scaling: _Scaling | None) -> FaultSpec | None:
    """The fault, or None (noted) when a node count override left out the machine it targets; a
    target that is wrong in the file's own fabric is still an error."""
    try:
        return _fault(check, index, raw, names)
    except ScenarioError:
        if scaling is None:
            raise
        fault = _fault(check, index, raw, full)  # raises when the file itself is wrong
        scaling.dropped_faults.append(f"{fault.kind} {fault.target}")
        return None


def _fault(check: _Checker, index: int, raw: Mapping[str, Any], names: _Names) -> FaultSpec:
    t = "faults"
    kind = check.get(t, index, raw, "kind", str)
    if kind not in FAULT_KINDS:
        raise check.fail(t, index, "kind", f"unknown fault kind {kind!r} (known: {', '.join(FAULT_KINDS)})")
    parameters = FAULT_KINDS[kind]
    check.keys(t, index, raw, {"kind", "target", "at", "until", *parameters})
    if "target" not in raw:
        raise check.fail(t, index, "target", "missing (required)")
    raw_target = raw["target"]
    at = check.get(t, index, raw, "at", float, 0.0)
    until = check.get(t, index, raw, "until", float, None)
    if at < 0:
        raise check.fail(t, index, "at", "must not be negative (seconds after start)")
    if until is not None and until <= at:
        raise check.fail(t, index, "until", f"must be after 'at' ({at})")
    params: dict[str, float] = {}
    words: dict[str, str] = {}
    for key, (kind_type, default) in parameters.items():
        if kind_type is str:
            words[key] = check.get(t, index, raw, key, str, default)
            continue
        value = check.get(t, index, raw, key, float if kind_type is float else int, default)
        if value is not None and not isinstance(value, str):
            params[key] = float(value)
            if value < 0 or (key in ("period", "gbps", "qps", "delay", "mtu", "gts", "width") and value <= 0):
                raise check.fail(t, index, key, f"must be positive, got {value}")
    if kind in ("high_ber", "spine_loss"):
        key = "ber" if kind == "high_ber" else "rate"
        if not 0 < params[key] < 1:
            raise check.fail(t, index, key, f"must be a fraction between 0 and 1, got {params[key]}")
    if "form" in words and words["form"] not in HOSTILE_FORMS:
        raise check.fail(t, index, "form", f"must be one of {', '.join(HOSTILE_FORMS)}, got {words['form']!r}")
    targets = _targets(check, index, kind, raw_target, names)
    return FaultSpec(
        kind=kind,
        target=targets[0] if len(targets) == 1 else ",".join(targets),
        at=at,
        until=until,
        params=params,
        targets=targets,
        words=words,
    )


def _targets(check: _Checker, index: int, kind: str, raw: Any, names: _Names) -> tuple[str, ...]:
    t = "faults"
    allowed = TARGET_KINDS[kind]
    if allowed == ("nic_pair",):
        parts = raw if isinstance(raw, list) else str(raw).split(",")
        parts = [str(p).strip() for p in parts]
        if len(parts) != 2:
            raise check.fail(t, index, "target", "a miswire needs two node:nic endpoints, e.g. [\"gpu001:mlx5_0\", \"gpu002:mlx5_0\"]")
        for part in parts:
            if _target_form(part, names) != "nic":
                raise check.fail(t, index, "target", f"{part!r} is not a node:nic endpoint of this fabric")
        if parts[0] == parts[1]:
            raise check.fail(t, index, "target", "the two endpoints must differ")
        return tuple(parts)
    if not isinstance(raw, str):
        raise check.fail(t, index, "target", f"must be a string, got {raw!r}")
    form = _target_form(raw, names)
    accepted = {form} & set(allowed)
    if form in ("node", "switch") and "host" in allowed:
        accepted.add("host")
    if raw == names.topology.head and "host" in allowed:
        accepted.add("host")
    if form in ("leaf", "spine") and "switch" in allowed:
        accepted.add("switch")
    if form in ("leaf", "spine") and "host" in allowed:
        accepted.add("host")
    if not accepted:
        wanted = ", ".join(_FORM_WORDS[a] for a in allowed)
        found = "unknown" if form == "unknown" else _FORM_WORDS.get(form, form)
        raise check.fail(t, index, "target", f"{raw!r} ({found}) does not fit {kind}: expected {wanted}")
    return (raw,)


_FORM_WORDS = {
    "nic": "node:mlx5_N",
    "port": "switch:port",
    "node": "a node",
    "switch": "a switch",
    "leaf": "a leaf",
    "spine": "a spine",
    "gpu": "node:gpuN",
    "host": "a node, switch or head01",
    "nic_pair": "two node:nic endpoints",
    "unknown": "unknown name",
}


def _target_form(target: str, names: _Names) -> str:
    """Classify a target string: nic, port, gpu, node, leaf, spine, or unknown."""
    host, _, part = target.partition(":")
    if part:
        if host in names.nodes and part in names.nics:
            return "nic"
        if host in names.nodes and re.fullmatch(r"gpu[0-7]", part):
            return "gpu"
        if host in names.switches and part in names.topology.switch_port_names(host):
            return "port"
        return "unknown"
    if host in names.nodes:
        return "node"
    if host in names.leaves:
        return "leaf"
    if host in names.spines:
        return "spine"
    return "unknown"
