"""Every parser by kind name, kind detection, and the JSON form of parse results.

Why: ``fleet parse`` and the command-mode collector both need "this text is
KIND, parse it" and sometimes "what is this text?". Parsers are imported only
when used (``"module:function"`` strings), so one broken or missing parser
module never takes the others down.

Detection: each kind has a signature, a function ``text -> confidence``
(0..1). The signatures of the host-side kinds live in
``fleet.collectors.parsers.signatures_a`` (``SIGNATURES_A``); those of the GPU,
benchmark, Slurm and switch kinds are below. ``detect`` returns the kind with
the highest confidence of at least ``MIN_CONFIDENCE``, or None.

JSON: ``to_jsonable`` turns a result into plain JSON data: dataclasses become
objects (field order kept), tuples lists, NaN becomes null and +/-infinity
the strings ``"inf"`` / ``"-inf"`` (``ethtool -m`` prints ``-inf dBm`` for a
dark lane: that is a reading, not a missing value).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fleet.collectors.parsers.registry_config import CONFIG_PARSERS, CONFIG_SIGNATURES
from fleet.collectors.parsers.textscan import strip_ansi

MIN_CONFIDENCE = 0.5
# Signatures look at the start of the text only: enough for every tool's header,
# and detection of a 10 MB capture stays fast. Their patterns never let a blank
# match cross a line ([ \t], not \s, after a ^) and bound every run that could
# overlap the next, so hostile text costs time linear in the window.
SIGNATURE_WINDOW_CHARS = 64_000


class ParserUnavailable(LookupError):
    """The module or function behind a kind cannot be imported."""


@dataclass(frozen=True, slots=True)
class ParserSpec:
    kind: str
    target: str  # "package.module:function"
    description: str  # the command whose output this parses

    def load(self) -> Callable[[str], Any]:
        """The parser function; ParserUnavailable when its module is missing or broken."""
        module_name, _, attribute = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
            function = getattr(module, attribute)
        except (ImportError, AttributeError, SyntaxError) as exc:
            raise ParserUnavailable(f"{self.kind}: {self.target} cannot be loaded ({exc})") from exc
        if not callable(function):
            raise ParserUnavailable(f"{self.kind}: {self.target} is not a function")
        return function


def _spec(kind: str, target: str, description: str) -> tuple[str, ParserSpec]:
    return kind, ParserSpec(kind, f"fleet.collectors.parsers.{target}", description)


KINDS: dict[str, ParserSpec] = dict(
    [
        _spec("ibstat", "ibstat:parse_ibstat", "ibstat"),
        _spec("ibstatus", "ibstat:parse_ibstatus", "ibstatus"),
        _spec("ibv_devinfo", "ibv_devinfo:parse_ibv_devinfo", "ibv_devinfo [-v]"),
        _spec("sysfs", "sysfs:parse_sysfs", "grep -H . /sys/class/infiniband/*/ports/*/counters/*"),
        _spec(
            "host-hardware",
            "host_hardware:parse_host_hardware",
            "grep -Hs . /sys/devices/system/cpu/online /proc/meminfo /sys/module/nvidia/version "
            "/sys/class/infiniband/*/node_type /sys/class/net/*/{operstate,speed,mtu}",
        ),
        _spec("ethtool-stats", "ethtool_stats:parse_ethtool_stats", "ethtool -S IFACE"),
        _spec("ethtool-module", "ethtool_module:parse_ethtool_module", "ethtool -m IFACE"),
        _spec("rdma-qp", "rdma_qp:parse_rdma_qp", "rdma [-j] res show qp"),
        _spec("rdma-statistic", "rdma_statistic:parse_rdma_statistic", "rdma statistic show"),
        _spec("show-gids", "show_gids:parse_show_gids", "show_gids"),
        _spec("perfquery", "perfquery:parse_perfquery", "perfquery -x"),
        _spec("ibqueryerrors", "perfquery:parse_ibqueryerrors", "ibqueryerrors"),
        _spec("ibnetdiscover", "ibnetdiscover:parse_ibnetdiscover", "ibnetdiscover [-p]"),
        _spec("iblinkinfo", "iblinkinfo:parse_iblinkinfo", "iblinkinfo"),
        _spec("lldp", "lldp:parse_lldp", "lldpctl -f json / lldpcli show neighbors"),
        _spec(
            "nvidia-smi-query",
            "nvidia_smi:parse_nvidia_smi_query",
            "nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] / nvidia-smi -q",
        ),
        _spec("nvidia-smi-topo", "nvidia_smi_topo:parse_nvidia_smi_topo", "nvidia-smi topo -m"),
        _spec(
            "nvidia-smi-nvlink",
            "nvidia_smi_nvlink:parse_nvidia_smi_nvlink",
            "nvidia-smi nvlink -s / -e",
        ),
        _spec("perftest", "perftest:parse_perftest", "ib_{send,write,read,atomic}_{lat,bw}"),
        _spec("nccl", "nccl:parse_nccl", "all_reduce_perf and the other nccl-tests"),
        _spec("nccl-log", "nccl_log:parse_nccl_log", "NCCL_DEBUG=INFO lines of any NCCL program"),
        _spec("ep-bench", "ep_bench:parse_ep_bench", "UCCL-EP / DeepEP test_internode.py (dispatch, combine)"),
        _spec("squeue-json", "slurm:parse_squeue_json", "squeue --json"),
        _spec("squeue", "slurm:parse_squeue", "squeue [-o FORMAT]"),
        _spec("scontrol-job", "slurm:parse_scontrol_job", "scontrol show job [--details]"),
        _spec("scontrol-node", "scontrol_node:parse_scontrol_node", "scontrol show node [NAME]"),
        _spec(
            "nvue-counters",
            "switch_nvue:parse_nvue_counters",
            "nv show interface PORT counters [-o json] / net show counters (Cumulus)",
        ),
        _spec("sonic-counters", "switch_sonic:parse_sonic_counters", "show interfaces counters"),
        _spec("sonic-pfc", "switch_sonic:parse_sonic_pfc", "show pfc counters"),
        _spec("sonic-queue", "switch_sonic:parse_sonic_queue", "show queue counters"),
        *(_spec(kind, target, description) for kind, target, description in CONFIG_PARSERS),
    ]
)


def parse(kind: str, text: str) -> Any:
    """Parse ``text`` as ``kind``. KeyError for an unknown kind, ParserUnavailable if not loadable;
    otherwise the parser's result or its ParseError (``base``: the one way a parser fails)."""
    spec = KINDS.get(kind)
    if spec is None:
        raise KeyError(kind)
    return spec.load()(text)


# ---------------------------------------------------------------- signatures


def _has(pattern: str, flags: int = re.MULTILINE) -> Callable[[str], bool]:
    compiled = re.compile(pattern, flags)
    return lambda text: compiled.search(text) is not None


_NVSMI_Q = _has(r"^=+NVSMI LOG=+[ \t]*$|^Attached GPUs[ \t]*:")
_QUERY_HEADER = _has(
    r"^[ \t]*(?:index|name|uuid|pci\.bus_id|timestamp|temperature\.gpu|memory\.used|"
    r"utilization\.gpu)(?: \[[^\]\n]*\])?[ \t]*,[ \t]*[a-z_.]+(?: \[[^\]\n]*\])?(?:[ \t]*,|[ \t]*$)"
)
_TOPO_HEADER = _has(r"^[ \t]*GPU0[ \t]+(?:GPU1|NIC0|mlx\w+|CPU Affinity)")
_TOPO_LEGEND = _has(r"^[ \t]+X[ \t]+= Self[ \t]*$")
_NVLINK_GPU = _has(r"^GPU \d+: .*\(UUID: ")
_NVLINK_LINK = _has(r"^[ \t]+Link [0-9]{1,3}: (?:[0-9.]{1,20} GB/s|<inactive>|[A-Za-z][^:\n]{0,80}: \S+)[ \t]*$")
_PERFTEST_TITLE = _has(r"^[ \t]+\S.{0,120}(?:BW|Latency) Test[ \t]*$")
_PERFTEST_TABLE = _has(r"^[ \t]*#bytes[ \t]+#iterations")
_NCCL_PARAMS = _has(r"^# nThread \d+ nGpus \d+")
_NCCL_TABLE = _has(r"^#[ \t]+out-of-place[ \t]+in-place")
_NCCL_INFO = _has(r"^[^\s:]{1,255}:[0-9]{1,10}:[0-9]{1,10} \[[0-9]{1,6}\] NCCL INFO ")
_EP_TUNING = _has(r"^(?:\[[^\]\n]{1,80}\] ){0,4}\[tuning\] (?:Best (?:dispatch|combine)|SMs [0-9])")
_EP_CONFIG = _has(r"^\[config\] num_tokens=[0-9]")
_SQUEUE_HEADER = _has(r"^[ \t]*JOBID[ \t]+(?:\S+[ \t]+){0,30}?(?:ST|STATE)\b")
_SCONTROL = _has(r"^JobId=\d+\S* (?:JobName|ArrayJobId|HetJobId)=")
_SCONTROL_NODE = _has(r"^NodeName=\S+ (?:Arch|CoresPerSocket|State)=")
_CPU_ONLINE = _has(r"^/sys/devices/system/cpu/online:[0-9]")
_MEMINFO = _has(r"^/proc/meminfo:MemTotal:")
_NVUE_TEXT = _has(r"^carrier-transitions[ \t]|^Detailed Counters[ \t]*$|^Drop Counters[ \t]*$")
_NCLU_TABLE = _has(r"^Kernel Interface table[ \t]*$|^Iface[ \t]+MTU[ \t]+RX_OK[ \t]+RX_ERR")
_SONIC_PORTS = _has(r"^[ \t]*IFACE[ \t]+STATE[ \t]+RX_OK[ \t]")
_SONIC_PFC = _has(r"^[ \t]*Port (?:Rx|Tx)[ \t]+PFC0[ \t]")
_SONIC_QUEUE = _has(r"^[ \t]*Port[ \t]+TxQ[ \t]+Counter/pkts[ \t]")


def _first_char(text: str) -> str:
    return text.lstrip()[:1]


def _squeue_json(text: str) -> float:
    if _first_char(text) != "{":
        return 0.0
    has_jobs = re.search(r'"jobs"\s*:\s*\[', text) is not None
    has_job_fields = '"job_id"' in text or '"job_state"' in text
    if has_jobs and (has_job_fields or re.search(r'"meta"\s*:', text)):
        return 0.95
    return 0.0


def _nvue(text: str) -> float:
    if _first_char(text) == "{":
        return 0.8 if re.search(r'"carrier-transitions"\s*:', text) else 0.0
    if _NVUE_TEXT(text) or _NCLU_TABLE(text):
        return 0.9
    return 0.0


SIGNATURES_B: dict[str, Callable[[str], float]] = {
    "nvidia-smi-query": lambda t: 0.95 if _NVSMI_Q(t) else 0.9 if _QUERY_HEADER(t) else 0.0,
    "nvidia-smi-topo": lambda t: (
        0.95 if _TOPO_HEADER(t) and _TOPO_LEGEND(t) else 0.7 if _TOPO_HEADER(t) else 0.0
    ),
    "nvidia-smi-nvlink": lambda t: 0.95 if _NVLINK_GPU(t) and _NVLINK_LINK(t) else 0.0,
    "perftest": lambda t: (
        0.95 if _PERFTEST_TABLE(t) else 0.8 if _PERFTEST_TITLE(t) and "Dual-port" in t else 0.0
    ),
    "nccl": lambda t: 0.95 if _NCCL_PARAMS(t) or _NCCL_TABLE(t) else 0.0,
    "nccl-log": lambda t: 0.6 if _NCCL_INFO(t) else 0.0,  # below "nccl": a test's output holds both
    "ep-bench": lambda t: 0.95 if _EP_TUNING(t) else 0.8 if _EP_CONFIG(t) else 0.0,
    "squeue-json": _squeue_json,
    "squeue": lambda t: 0.9 if _SQUEUE_HEADER(t) else 0.0,
    "scontrol-job": lambda t: 0.95 if _SCONTROL(t) else 0.0,
    "scontrol-node": lambda t: 0.95 if _SCONTROL_NODE(t) else 0.0,
    "host-hardware": lambda t: 0.95 if _CPU_ONLINE(t) else 0.9 if _MEMINFO(t) else 0.0,
    "nvue-counters": _nvue,
    "sonic-counters": lambda t: 0.95 if _SONIC_PORTS(t) else 0.0,
    "sonic-pfc": lambda t: 0.95 if _SONIC_PFC(t) else 0.0,
    "sonic-queue": lambda t: 0.95 if _SONIC_QUEUE(t) else 0.0,
}


def signatures() -> dict[str, Callable[[str], float]]:
    """All signatures: the host-side ones when their module loads, and the ones above."""
    combined: dict[str, Callable[[str], float]] = {}
    try:
        module = importlib.import_module("fleet.collectors.parsers.signatures_a")
        found = getattr(module, "SIGNATURES_A", {})
        if isinstance(found, Mapping):
            combined.update({k: v for k, v in found.items() if k in KINDS and callable(v)})
    except (ImportError, SyntaxError):
        pass
    combined.update(SIGNATURES_B)
    combined.update(CONFIG_SIGNATURES)
    return combined


def scores(text: str) -> dict[str, float]:
    """Confidence per kind for ``text`` (ANSI codes removed, only the start looked at)."""
    window = strip_ansi(text[:SIGNATURE_WINDOW_CHARS])
    result: dict[str, float] = {}
    for kind, signature in signatures().items():
        try:
            score = float(signature(window))
        except Exception:  # a broken signature must not stop detection of the others
            score = 0.0
        result[kind] = score if math.isfinite(score) else 0.0
    return result


def detect(text: str) -> str | None:
    """The kind ``text`` most likely is, or None when no signature is confident enough."""
    ranked = sorted(scores(text).items(), key=lambda item: item[1], reverse=True)
    if not ranked or ranked[0][1] < MIN_CONFIDENCE:
        return None
    return ranked[0][0]


# ---------------------------------------------------------------- JSON


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data (see the module docstring for floats)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, str | int | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple | list | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
