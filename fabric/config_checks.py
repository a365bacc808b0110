"""The configuration checks: is every NIC, GPU node and switch set up for lossless RoCE and GPUDirect RDMA,
and do both ends of each link agree?

``run_checks(config, profile)`` judges a :class:`~fleet.fabric.roce_config.FleetConfig`
against a :class:`~fleet.fabric.roce_profile.RoceProfile` and returns one
:class:`CheckResult` per check and part: what was expected, what was found,
the verdict, the parts at fault (``culprits``) and the fix. Each check's
expectation and public source are in :data:`CHECKS` (and docs/checks.md).

Fleet-wide checks (MTU, GID index, versions) compare each part with the
profile's value or, where the profile leaves it open, with the fleet's most
common value: the odd ones out are named. A switch check that fails on every
port of a switch names the switch. A link check names the end that differs
from the profile.

Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fleet.fabric.events import Event, Severity
from fleet.fabric.roce_config import FleetConfig, NicConfig, NodeConfig, SwitchConfig
from fleet.fabric.roce_profile import RoceProfile


class Verdict(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class CheckSpec:
    id: str
    group: str
    """``node``, ``fleet`` (the same everywhere), ``gpudirect``, ``switch`` or ``link``."""
    title: str
    expectation: str
    source: str
    """The public document the expectation comes from."""
    url: str


_NVIDIA_QOS = ("NVIDIA MLNX_OFED Documentation, Quality of Service (QoS) and mlnx_qos",
               "https://docs.nvidia.com/networking/display/mlnxenv24103250lts/quality+of+service+(qos)")
_NVIDIA_ECN = ("NVIDIA MLNX_OFED Documentation, Explicit Congestion Notification (ECN)",
               "https://docs.nvidia.com/networking/display/mlnxofedv24103250lts/explicit+congestion+notification+(ecn)")
_DOROCE = ("NVIDIA doRoCE: ToS 106 (DSCP 26, priority 3), trust DSCP, PFC on priority 3, RDMA-CM and verbs "
           "default ToS", "https://github.com/NVIDIA/doroce-linux")
_CUMULUS = ("Cumulus Linux, RDMA over Converged Ethernet - RoCE",
            "https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-514/Layer-1-and-Switch-Ports/"
            "Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE")
_NCCL_ENV = ("NCCL Environment Variables: NCCL_IB_GID_INDEX, NCCL_NET_GDR_LEVEL",
             "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html")
_NCCL_ACS = ("NCCL Troubleshooting, PCI Access Control Services (ACS)",
             "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
             "#pci-access-control-services-acs")
_PEERMEM = ("NVIDIA GPU Operator, GPUDirect RDMA: the nvidia-peermem kernel module",
            "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/1.9.1/gpu-operator-rdma.html")
_SONIC_PFCWD = ("SONiC Command Reference, PFC Watchdog (config pfcwd, show pfcwd)",
                "https://github.com/sonic-net/sonic-utilities/blob/master/doc/Command-Reference.md")
_PCIE = ("lspci: LnkCap is the link a device is capable of, LnkSta the link it trained at (Intel PCIe IP user "
         "guide, Generic Tools and Utilities); the kernel's 'available PCIe bandwidth, limited by' report",
         "https://intel.com/content/www/us/en/docs/programmable/683140/current/generic-tools-and-utilities.html")

CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("nic_trust", "node", "NIC trust", "the NIC classifies by DSCP (mlnx_qos 'Priority trust state: dscp')",
              *_DOROCE),
    CheckSpec("nic_pfc", "node", "NIC PFC", "PFC on exactly the lossless priority", *_NVIDIA_QOS),
    CheckSpec("nic_dscp_map", "node", "NIC DSCP map",
              "the RoCE DSCP maps to the lossless priority and the CNP DSCP to the CNP priority", *_NVIDIA_QOS),
    CheckSpec("nic_ets", "node", "NIC ETS", "the lossless priority's traffic class is scheduled by ETS",
              *_NVIDIA_QOS),
    CheckSpec("nic_dcqcn", "node", "NIC DCQCN", "ECN notification (roce_np) and reaction (roce_rp) points enabled "
              "on the lossless priority", *_NVIDIA_ECN),
    CheckSpec("rdma_cm", "node", "RDMA-CM defaults", "RDMA-CM defaults to RoCE v2 with the profile's ToS; verbs "
              "traffic class the same", *_DOROCE),
    CheckSpec("mtu", "fleet", "MTU", "every NIC has the same netdev MTU and RDMA active MTU", *_NVIDIA_QOS),
    CheckSpec("gid_index", "fleet", "RoCE v2 GID index",
              "the RoCE v2 IPv4 GID has the same index on every NIC, so one NCCL_IB_GID_INDEX works", *_NCCL_ENV),
    CheckSpec("versions_ofed", "fleet", "OFED", "MLNX_OFED / DOCA-OFED the same on every node", *_NVIDIA_QOS),
    CheckSpec("versions_firmware", "fleet", "NIC firmware", "the same NIC firmware on every NIC", *_NVIDIA_QOS),
    CheckSpec("versions_driver", "fleet", "GPU driver", "the same NVIDIA driver on every node", *_PEERMEM),
    CheckSpec("versions_kernel", "fleet", "kernel", "the same kernel on every node", *_PEERMEM),
    CheckSpec("peermem", "gpudirect", "peer memory", "nvidia_peermem (or nv_peer_mem) loaded", *_PEERMEM),
    CheckSpec("pcie_acs", "gpudirect", "PCIe ACS", "ACS off on every bridge between a GPU and its NIC", *_NCCL_ACS),
    CheckSpec("pcie_link", "gpudirect", "PCIe link", "every GPU and NIC trained at its link capability (speed and "
              "width)", *_PCIE),
    CheckSpec("gpu_nic_path", "gpudirect", "NIC near its GPU", "each rail's NIC reaches its GPU through PCIe "
              "switches only (PIX or PXB in nvidia-smi topo -m, not NODE or SYS)", *_NCCL_ENV),
    CheckSpec("switch_pfc", "switch", "switch PFC", "PFC on the lossless priority on every host and uplink port",
              *_CUMULUS),
    CheckSpec("switch_ecn", "switch", "switch ECN", "ECN/WRED marking on the lossless queue (thresholds shown)",
              *_CUMULUS),
    CheckSpec("switch_pfc_watchdog", "switch", "PFC watchdog", "the PFC watchdog on every host and uplink port",
              *_SONIC_PFCWD),
    CheckSpec("switch_trust", "switch", "switch trust", "the switch classifies by DSCP", *_CUMULUS),
    CheckSpec("switch_dscp_map", "switch", "switch DSCP map",
              "the RoCE DSCP maps to the lossless priority, the CNP DSCP to the CNP priority", *_CUMULUS),
    CheckSpec("switch_mtu", "switch", "switch MTU", "every host and uplink port's MTU covers the hosts' MTU",
              *_CUMULUS),
    CheckSpec("switch_buffer", "switch", "lossless buffer", "a lossless buffer pool or profile is configured",
              *_CUMULUS),
    CheckSpec("link_pfc", "link", "link PFC", "the NIC and its switch port run PFC on the same priorities",
              *_CUMULUS),
    CheckSpec("link_dscp", "link", "link DSCP map", "the NIC and its switch put the RoCE DSCP in the same priority",
              *_CUMULUS),
    CheckSpec("link_mtu", "link", "link MTU", "the switch port's MTU covers its NIC's netdev MTU", *_CUMULUS),
)  # fmt: skip
SPECS: Mapping[str, CheckSpec] = {spec.id: spec for spec in CHECKS}


@dataclass(frozen=True, slots=True)
class CheckResult:
    check: str
    target: str
    """What was checked: ``gpu003:mlx5_2``, ``gpu003:gpu2``, ``gpu003``, ``leaf01:swp3``, ``leaf01``, or a link."""
    verdict: Verdict
    expected: str
    found: str
    culprits: tuple[str, ...] = ()
    """The parts at fault (empty when it passes)."""
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "target": self.target, "verdict": self.verdict.value, "expected": self.expected,
                "found": self.found, "culprits": list(self.culprits), "fix": self.fix}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        return cls(str(data["check"]), str(data["target"]), Verdict(data["verdict"]), str(data["expected"]),
                   str(data["found"]), tuple(data.get("culprits", ())), str(data.get("fix", "")))


@dataclass(frozen=True, slots=True)
class CheckSummary:
    check: str
    passed: int
    warned: int
    failed: int
    odd: tuple[str, ...]
    """The culprits of the failed and warned results, in order."""


@dataclass(frozen=True, slots=True)
class ConfigReport:
    ts: float
    profile: str
    results: tuple[CheckResult, ...]
    unreachable: Mapping[str, str]
    """Host -> why it could not be read."""

    def summaries(self) -> list[CheckSummary]:
        rows = []
        for spec in CHECKS:
            mine = [r for r in self.results if r.check == spec.id]
            if not mine:
                continue
            count = Counter(r.verdict for r in mine)
            odd = tuple(dict.fromkeys(c for r in mine if r.verdict is not Verdict.PASS for c in r.culprits))
            rows.append(CheckSummary(spec.id, count[Verdict.PASS], count[Verdict.WARN], count[Verdict.FAIL], odd))
        return rows

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.verdict is Verdict.FAIL)

    def culprits(self, *verdicts: Verdict) -> set[str]:
        wanted = verdicts or (Verdict.FAIL,)
        return {c for r in self.results if r.verdict in wanted for c in r.culprits}

    def to_json(self) -> dict[str, Any]:
        return {"ts": self.ts, "profile": self.profile, "results": [r.to_json() for r in self.results],
                "unreachable": dict(self.unreachable),
                "summary": [{"check": s.check, "pass": s.passed, "warn": s.warned, "fail": s.failed,
                             "odd": list(s.odd)} for s in self.summaries()]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigReport:
        return cls(float(data.get("ts", 0.0)), str(data.get("profile", "")),
                   tuple(CheckResult.from_json(r) for r in data.get("results", ())),
                   dict(data.get("unreachable", {})))


# ------------------------------------------------------------------ helpers


def _result(check: str, target: str, ok: bool | None, expected: str, found: str, fix: str = "",
            culprits: Sequence[str] | None = None) -> CheckResult:
    """``ok`` None: the value could not be read (a warning that names the part)."""
    if ok:
        return CheckResult(check, target, Verdict.PASS, expected, found)
    verdict = Verdict.WARN if ok is None else Verdict.FAIL
    return CheckResult(check, target, verdict, expected, found, tuple(culprits or (target,)), fix)


def _prios(values: Iterable[int] | None) -> str:
    return "none" if not values else ",".join(str(v) for v in values)


def _majority(values: Iterable[Any]) -> Any:
    """The most common value; ties go to the larger one (the newer version, the larger MTU)."""
    counts = Counter(v for v in values if v not in (None, ""))
    if not counts:
        return None
    return max(counts, key=lambda v: (counts[v], _sort_key(v)))


def _sort_key(value: Any) -> tuple[Any, ...]:
    if isinstance(value, int | float):
        return (0, value, "")
    parts = tuple(int(p) if p.isdigit() else 0 for p in str(value).replace("-", ".").split("."))
    return (1, parts, str(value))


def _unread(found: str, reasons: Sequence[str]) -> str:
    return f"{found} ({'; '.join(reasons[:2])})" if reasons else found


# ------------------------------------------------------------------ node checks


def _nic_checks(nic: NicConfig, p: RoceProfile) -> list[CheckResult]:
    out: list[CheckResult] = []
    part, why = nic.part, nic.unread
    netdev = nic.netdev or "NETDEV"
    ok = None if not nic.trust else nic.trust == p.trust
    out.append(_result("nic_trust", part, ok, p.trust, _unread(nic.trust or "not read", why),
                       f"mlnx_qos -i {netdev} --trust {p.trust}"))
    want_pfc = (p.lossless_priority,)
    ok = None if nic.pfc is None else tuple(nic.pfc) == want_pfc
    mask = ",".join("1" if i == p.lossless_priority else "0" for i in range(8))
    out.append(_result("nic_pfc", part, ok, f"on priority {p.lossless_priority} only",
                       _unread(f"on priorities {_prios(nic.pfc)}" if nic.pfc is not None else "not read", why),
                       f"mlnx_qos -i {netdev} --pfc {mask}"))
    if nic.trust and nic.trust != "dscp" and not nic.dscp_to_priority:
        out.append(_result("nic_dscp_map", part, None, _map_words(p.dscp_to_priority),
                           f"not used (trust {nic.trust})", f"mlnx_qos -i {netdev} --trust dscp"))
    else:
        wrong = {d: nic.dscp_to_priority.get(d) for d, q in p.dscp_to_priority.items()
                 if nic.dscp_to_priority.get(d) != q}
        ok = None if not nic.dscp_to_priority else not wrong
        found = "not read" if not nic.dscp_to_priority else _map_words(
            {d: nic.dscp_to_priority.get(d) for d in p.dscp_to_priority})
        fix = "; ".join(f"mlnx_qos -i {netdev} --dscp2prio set,{d},{q}" for d, q in p.dscp_to_priority.items()
                        if d in wrong)
        out.append(_result("nic_dscp_map", part, ok, _map_words(p.dscp_to_priority), found, fix))
    if p.ets:
        tsa = nic.tc_tsa.get(p.lossless_priority, "")
        ok = None if not nic.tc_tsa else tsa in ("ets", "strict")
        out.append(_result("nic_ets", part, ok, "ets (or strict)", tsa or "not read",
                           f"mlnx_qos -i {netdev} --tsa ets,ets,ets,ets,ets,ets,ets,ets --tcbw 50,0,0,50,0,0,0,0"))
    if p.dcqcn:
        prio = p.lossless_priority
        np_on, rp_on = nic.ecn_np.get(prio), nic.ecn_rp.get(prio)
        ok = None if np_on is None or rp_on is None else np_on and rp_on
        found = f"roce_np {_onoff(np_on)}, roce_rp {_onoff(rp_on)} on priority {prio}"
        fixes = [f"echo 1 > /sys/class/net/{netdev}/ecn/{point}/enable/{prio}"
                 for point, on in (("roce_np", np_on), ("roce_rp", rp_on)) if not on]
        out.append(_result("nic_dcqcn", part, ok, f"roce_np and roce_rp on priority {prio}", found, "; ".join(fixes)))
    mode_ok = None if not nic.roce_mode else nic.roce_mode == p.roce_mode
    tos_ok = None if nic.roce_tos is None else nic.roce_tos == p.tos
    tclass_ok = nic.traffic_class is None or nic.traffic_class == p.tos
    ok = None if mode_ok is None or tos_ok is None else bool(mode_ok and tos_ok and tclass_ok)
    tclass = "unset" if nic.traffic_class is None else str(nic.traffic_class)
    found = f"{nic.roce_mode or 'mode not read'}, ToS {'not read' if nic.roce_tos is None else nic.roce_tos}, " \
            f"verbs traffic class {tclass}"
    fixes = []
    if not mode_ok:
        fixes.append(f"cma_roce_mode -d {nic.nic} -p 1 -m 2")
    if not tos_ok:
        fixes.append(f"cma_roce_tos -d {nic.nic} -t {p.tos}")
    if not tclass_ok:
        fixes.append(f"echo {p.tos} > /sys/class/infiniband/{nic.nic}/tc/1/traffic_class")
    out.append(_result("rdma_cm", part, ok, f"{p.roce_mode}, ToS {p.tos}", found, "; ".join(fixes)))
    return out


def _onoff(value: bool | None) -> str:
    return "not read" if value is None else "on" if value else "off"


def _map_words(mapping: Mapping[int, int | None]) -> str:
    return ", ".join(f"DSCP {d} -> {'?' if q is None else q}" for d, q in sorted(mapping.items()))


def fleet_netdev_mtu(nodes: Sequence[NodeConfig], p: RoceProfile) -> int | None:
    """The netdev MTU every NIC should have: the profile's, else what most NICs have."""
    return p.netdev_mtu or _majority(n.netdev_mtu for node in nodes for n in node.nics)


def _fleet_checks(nodes: Sequence[NodeConfig], p: RoceProfile) -> list[CheckResult]:
    out: list[CheckResult] = []
    nics = [nic for node in nodes for nic in node.nics]
    netdev_mtu = fleet_netdev_mtu(nodes, p)
    active_mtu = p.active_mtu or _majority(n.active_mtu for n in nics)
    for nic in nics:
        ok: bool | None = None
        if nic.netdev_mtu is not None and nic.active_mtu is not None:
            ok = nic.netdev_mtu == netdev_mtu and nic.active_mtu == active_mtu
        fix = f"ip link set dev {nic.netdev or 'NETDEV'} mtu {netdev_mtu}" if nic.netdev_mtu != netdev_mtu else ""
        out.append(_result("mtu", nic.part, ok, f"netdev MTU {netdev_mtu}, active MTU {active_mtu}",
                           f"netdev MTU {nic.netdev_mtu}, active MTU {nic.active_mtu}", fix))
    gid = p.gid_index if p.gid_index >= 0 else _majority(n.gid_index for n in nics if n.link_layer != "InfiniBand")
    for nic in nics:
        if nic.link_layer == "InfiniBand":
            continue
        ok = None if nic.gid_index is None else nic.gid_index == gid
        found = "no RoCE v2 IPv4 GID" if nic.gid_index is None else f"index {nic.gid_index}"
        out.append(_result("gid_index", nic.part, ok, f"index {gid}", found,
                           "give every RoCE netdev the same addresses in the same order (the GID table follows them)"))
    versions: dict[str, Callable[[NodeConfig], str]] = {
        "ofed": lambda n: n.ofed, "driver": lambda n: n.driver, "kernel": lambda n: n.kernel}
    for what in p.same_versions:
        if what == "firmware":
            common = _majority(n.firmware for n in nics)
            for nic in nics:
                ok = None if not nic.firmware else nic.firmware == common
                out.append(_result("versions_firmware", nic.part, ok, str(common), nic.firmware or "not read",
                                   f"update {nic.nic}'s firmware to {common} (mlxfwreset to load it)"))
            continue
        get = versions[what]
        common = _majority(get(n) for n in nodes)
        for node in nodes:
            value = get(node)
            ok = None if not value else value == common
            out.append(_result(f"versions_{what}", node.node, ok, str(common), value or "not read",
                               f"install {what} {common} on {node.node}"))
    return out


def _gpudirect_checks(node: NodeConfig, p: RoceProfile) -> list[CheckResult]:
    out: list[CheckResult] = []
    ok = None if node.peermem is None else node.peermem in p.peermem_modules
    out.append(_result("peermem", node.node, ok, " or ".join(p.peermem_modules),
                       "not read" if node.peermem is None else node.peermem or "not loaded",
                       f"modprobe {p.peermem_modules[0]}"))
    for rail in node.rails:
        gpu_part = f"{node.node}:gpu{rail.gpu}"
        nic_part = f"{node.node}:{rail.nic}"
        if p.acs_off:
            on = {bdf: bits for bdf, bits in rail.acs_on.items() if bits}
            ok = None if not rail.bridges else not on
            found = "no bridge found between them" if not rail.bridges else (
                "; ".join(f"{bdf}: {'+ '.join(bits)}+" for bdf, bits in on.items()) or
                f"off on {len(rail.bridges)} bridges")
            fix = "; ".join(f"setpci -s {bdf} ECAP_ACS+0x6.w=0000" for bdf in on)
            out.append(_result("pcie_acs", gpu_part, ok, f"ACS off between GPU{rail.gpu} and {rail.nic}", found, fix))
        allowed = " or ".join(p.gpu_nic_paths)
        ok = None if not rail.path else rail.path in p.gpu_nic_paths
        out.append(_result("gpu_nic_path", nic_part, ok, f"{allowed} to GPU{rail.gpu}",
                           rail.path or "not read",
                           "move the NIC (or the job's GPU binding) to the GPU's PCIe switch; NCCL otherwise "
                           "stages through host memory"))
    if p.pcie_at_capability:
        devices = [(nic.part, nic.pcie) for nic in node.nics] + [(gpu.part, gpu.pcie) for gpu in node.gpus]
        for part, link in devices:
            ok = None if link is None else not link.below_capability
            out.append(_result("pcie_link", part, ok, "at capability", "not read" if link is None else link.words(),
                               "reseat the card or move it to a slot wired for its width; check the riser and "
                               "BIOS link settings"))
    return out


# ------------------------------------------------------------------ switch checks


def _collapse(check: str, switch: SwitchConfig, results: list[CheckResult], fix_all: str = "") -> list[CheckResult]:
    """One result naming the switch when every checked port fails the same way (``fix_all``: one command for all)."""
    failed = [r for r in results if r.verdict is Verdict.FAIL]
    if len(results) > 1 and len(failed) == len(results):
        found = f"on all {len(results)} ports: {failed[0].found}"
        fix = fix_all or "; ".join(dict.fromkeys(r.fix for r in failed if r.fix))
        return [CheckResult(check, switch.switch, Verdict.FAIL, failed[0].expected, found, (switch.switch,), fix)]
    return results


def _switch_checks(switch: SwitchConfig, p: RoceProfile, host_mtu: int | None) -> list[CheckResult]:
    out: list[CheckResult] = []
    name = switch.switch
    ports = [port for port in switch.ports if port.checked]
    nvue = switch.os == "cumulus"
    prio = p.lossless_priority
    per_port: list[CheckResult] = []
    for port in ports:
        ok = None if port.pfc is None else prio in port.pfc
        fix = (f"nv set interface {port.port} qos pfc profile default-global" if nvue
               else f"config interface pfc priority {port.port} {prio} on")
        per_port.append(_result("switch_pfc", f"{name}:{port.port}", ok, f"PFC on priority {prio}",
                                f"on priorities {_prios(port.pfc)}" if port.pfc is not None else "not read", fix))
    out += _collapse("switch_pfc", switch, per_port)
    tcs = switch.ecn_traffic_classes
    thresholds = (f"min {switch.ecn_min_threshold_bytes} B, max {switch.ecn_max_threshold_bytes} B"
                  if switch.ecn_min_threshold_bytes is not None else "thresholds not read")
    ok = None if tcs is None else prio in tcs
    if ok and p.ecn_min_threshold_bytes and switch.ecn_min_threshold_bytes != p.ecn_min_threshold_bytes:
        ok = None
    if ok and p.ecn_max_threshold_bytes and switch.ecn_max_threshold_bytes != p.ecn_max_threshold_bytes:
        ok = None
    ecn_fix = (f"nv set qos congestion-control default-global traffic-class {prio} ecn enable" if nvue
               else f"ecnconfig -q {prio} on")
    out.append(_result("switch_ecn", name, ok, f"ECN on traffic class {prio}",
                       f"ECN on traffic classes {_prios(tcs)}; {thresholds}" if tcs is not None else "not read",
                       ecn_fix))
    if p.pfc_watchdog:
        per_port = []
        for port in ports:
            ok = port.pfc_watchdog
            fix = (f"nv set interface {port.port} qos pfc-watchdog state enable" if nvue
                   else f"config pfcwd start --action drop {port.port} 200 --restoration-time 200")
            per_port.append(_result("switch_pfc_watchdog", f"{name}:{port.port}", ok, "on",
                                    _onoff(port.pfc_watchdog), fix))
        out += _collapse("switch_pfc_watchdog", switch, per_port,
                         "" if nvue else "config pfcwd start --action drop all 200 --restoration-time 200")
    ok = None if not switch.trust else switch.trust in p.switch_trust
    out.append(_result("switch_trust", name, ok, " or ".join(p.switch_trust), switch.trust or "not read",
                       "nv set qos mapping default-global trust both" if nvue else
                       "bind the DSCP_TO_TC_MAP to every port: sonic-cfggen -a "
                       "'{\"PORT_QOS_MAP\": {PORT: {\"dscp_to_tc_map\": \"AZURE\"}}}' --write-to-db"))
    wrong = {d: switch.dscp_to_priority.get(d) for d, q in p.dscp_to_priority.items()
             if switch.dscp_to_priority.get(d) != q}
    ok = None if not switch.dscp_to_priority else not wrong
    fix = "; ".join((f"nv set qos mapping default-global dscp {d} switch-priority {q}" if nvue else
                     f"sonic-cfggen -a '{{\"DSCP_TO_TC_MAP\": {{\"AZURE\": {{\"{d}\": \"{q}\"}}}}}}' --write-to-db")
                    for d, q in p.dscp_to_priority.items() if d in wrong)
    out.append(_result("switch_dscp_map", name, ok, _map_words(p.dscp_to_priority),
                       _map_words({d: switch.dscp_to_priority.get(d) for d in p.dscp_to_priority})
                       if switch.dscp_to_priority else "not read", fix))
    want_mtu = p.switch_mtu or host_mtu
    per_port = []
    for port in ports:
        ok = None if port.mtu is None or want_mtu is None else port.mtu >= want_mtu
        fix = (f"nv set interface {port.port} link mtu 9216" if nvue else f"config interface mtu {port.port} 9100")
        per_port.append(_result("switch_mtu", f"{name}:{port.port}", ok, f"at least {want_mtu}",
                                str(port.mtu) if port.mtu is not None else "not read", fix))
    out += _collapse("switch_mtu", switch, per_port)
    if p.lossless_buffer:
        ok = switch.lossless_buffer
        out.append(_result("switch_buffer", name, ok, "a lossless pool or profile",
                           switch.buffer or ("none" if ok is False else "not read"),
                           "nv set qos roce mode lossless" if nvue else "config qos reload"))
    return out


# ------------------------------------------------------------------ link checks


def _link_checks(config: FleetConfig, p: RoceProfile) -> list[CheckResult]:
    out: list[CheckResult] = []
    nics = {(nic.node, nic.nic): nic for node in config.nodes for nic in node.nics}
    switches = {s.switch: s for s in config.switches if not s.reason}
    want = (p.lossless_priority,)
    for link in config.links:
        nic = nics.get((link.node, link.nic))
        switch = switches.get(link.switch)
        port = switch.port(link.port) if switch else None
        if nic is None or switch is None or port is None:
            continue
        nic_part, port_part = nic.part, f"{link.switch}:{link.port}"
        nic_pfc = tuple(nic.pfc) if nic.pfc is not None else None
        port_pfc = (p.lossless_priority,) if port.pfc is not None and p.lossless_priority in port.pfc else port.pfc
        ok = None if nic_pfc is None or port_pfc is None else set(nic_pfc) == set(port.pfc or ())
        culprits = [part for part, value in ((nic_part, nic_pfc), (port_part, port_pfc)) if value != want]
        out.append(_result("link_pfc", link.name, ok, f"PFC on priority {p.lossless_priority} at both ends",
                           f"NIC {_prios(nic_pfc)}, switch port {_prios(port.pfc)}", "", culprits or [link.name]))
        dscp = p.roce_dscp
        nic_prio = nic.dscp_to_priority.get(dscp) if nic.trust == "dscp" else None
        switch_dscp = switch.trust in p.switch_trust
        switch_prio = switch.dscp_to_priority.get(dscp) if switch_dscp else None
        ok = None if not nic.trust or not switch.trust else (nic_prio is not None and nic_prio == switch_prio)
        culprits = [part for part, value in ((nic_part, nic_prio), (link.switch, switch_prio))
                    if value != p.lossless_priority]
        out.append(_result("link_dscp", link.name, ok, f"DSCP {dscp} -> priority {p.lossless_priority} at both ends",
                           f"NIC {_prio_words(nic.trust, nic_prio)}, switch {_prio_words(switch.trust, switch_prio)}",
                           "", culprits or [link.name]))
        ok = None if nic.netdev_mtu is None or port.mtu is None else port.mtu >= nic.netdev_mtu
        out.append(_result("link_mtu", link.name, ok, "switch port MTU >= NIC MTU",
                           f"NIC {nic.netdev_mtu}, switch port {port.mtu}", "", [port_part]))
    return out


def _prio_words(trust: str, prio: int | None) -> str:
    return f"priority {prio}" if prio is not None else f"not by DSCP (trust {trust or 'not read'})"


# ------------------------------------------------------------------ the whole run


def run_checks(config: FleetConfig, profile: RoceProfile, ts: float = 0.0) -> ConfigReport:
    """Every check on every part that answered; parts that did not are listed in ``unreachable``."""
    nodes = [n for n in config.nodes if not n.reason]
    results: list[CheckResult] = []
    for node in nodes:
        for nic in node.nics:
            if nic.link_layer != "InfiniBand":
                results += _nic_checks(nic, profile)
    results += _fleet_checks(nodes, profile)
    for node in nodes:
        results += _gpudirect_checks(node, profile)
    host_mtu = max((n.netdev_mtu for node in nodes for n in node.nics if n.netdev_mtu), default=None)
    for switch in config.switches:
        if not switch.reason:
            results += _switch_checks(switch, profile, profile.netdev_mtu or host_mtu)
    results += _link_checks(config, profile)
    unreachable = {n.node: n.reason for n in config.nodes if n.reason}
    unreachable |= {s.switch: s.reason for s in config.switches if s.reason}
    order = {spec.id: index for index, spec in enumerate(CHECKS)}
    results.sort(key=lambda r: (order[r.check], r.target))
    return ConfigReport(ts, profile.name, tuple(results), unreachable)


# ------------------------------------------------------------------ the store's form

CONFIG_CHECK_EVENT = "config_check"
"""Event kind of a stored check run: the diagnosis, the console and baselines read the newest."""


def report_event(report: ConfigReport, configuration: Mapping[str, Any]) -> Event:
    """A check run as an event: the Events screen lists it, its data keeps the whole report and the
    configuration summary (``fleet.fabric.roce_config.configuration_summary``) for drift."""
    failed = [s for s in report.summaries() if s.failed]
    if failed:
        words = "; ".join(f"{SPECS[s.check].title}: {', '.join(s.odd[:3])}{' ...' if len(s.odd) > 3 else ''}"
                          for s in failed[:4])
        message = f"configuration check: {len(failed)} checks fail ({words})"
    else:
        message = f"configuration check: every check passes ({len(report.results)} results)"
    if report.unreachable:
        message += f"; {len(report.unreachable)} hosts not read"
    severity = Severity.WARNING if failed or report.unreachable else Severity.INFO
    return Event(report.ts, CONFIG_CHECK_EVENT, severity, message,
                 data={"report": report.to_json(), "configuration": dict(configuration)})


def checks_json(report: ConfigReport) -> dict[str, dict[str, Any]]:
    """A run in brief, per check: its counts and the parts that failed or warned (a baseline keeps this)."""
    out: dict[str, dict[str, Any]] = {}
    for summary in report.summaries():
        failed = [{"part": part, "verdict": r.verdict.value, "expected": r.expected, "found": r.found}
                  for r in report.results if r.check == summary.check and r.verdict is not Verdict.PASS
                  for part in r.culprits]
        out[summary.check] = {"pass": summary.passed, "warn": summary.warned, "fail": summary.failed,
                              "failed": failed}
    return out


def report_of(event: Event) -> ConfigReport | None:
    """The report a ``config_check`` event holds (None for another event or a damaged one)."""
    data = event.data.get("report") if event.kind == CONFIG_CHECK_EVENT else None
    if not isinstance(data, Mapping):
        return None
    try:
        return ConfigReport.from_json(data)
    except (KeyError, ValueError, TypeError):
        return None
