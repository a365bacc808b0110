"""Slurm job listings: ``squeue --json``, ``squeue`` tables (default or ``-o`` format) and
``scontrol show job``.

Why: the Jobs screen ties latency to jobs and tenants, so each job's nodes
(hostlists expanded with python-hostlist) and account must be read exactly.

``squeue --json`` changed shape across releases: OpenAPI v0.0.37 (Slurm
21.08) prints plain numbers and a string ``job_state``; v0.0.39+ (23.02 and
later) wrap numbers as ``{"set": bool, "infinite": bool, "number": n}`` and
23.11+ print ``job_state`` as a list. Both are read; an unset number is None,
an infinite time limit sets ``time_limit_infinite``.

Times: JSON gives Unix seconds (``start_time_s``); ``scontrol`` prints the
controller's local time without a zone, kept as text (``start_time``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import hostlist

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.jsontext import load_json
from fleet.collectors.parsers.textscan import Problems, split_lines, to_int
from fleet.collectors.parsers.values import U32, U64, UNIX_TIME_S, Range

KINDS = ("squeue-json", "squeue", "scontrol-job")


MAX_EXPANDED_NODES = 400_000
"""Host names one parse expands at most. A hostlist of a few bytes can name 100,000 hosts
(python-hostlist's own cap per list), so without a budget 10 MB of them would be billions;
the largest clusters have tens of thousands of nodes."""


class NodeExpander:
    """Expands the hostlists of one parse, within ``MAX_EXPANDED_NODES`` names in all."""

    __slots__ = ("left", "problems")

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        self.left = MAX_EXPANDED_NODES

    def expand(self, nodelist: str, line: int = 0) -> tuple[str, ...]:
        """``"tc-intel[002-004]"`` -> the three host names; a bad hostlist is a problem, not a crash."""
        if not nodelist or nodelist in {"(null)", "None"}:
            return ()
        if self.left <= 0:
            self.problems.add(line, nodelist, f"hostlist not expanded: {MAX_EXPANDED_NODES} host names already read")
            return ()
        try:
            names = tuple(hostlist.expand_hostlist(nodelist))
        except (hostlist.BadHostlist, ValueError, TypeError, IndexError, RecursionError) as exc:
            self.problems.add(line, nodelist, f"bad hostlist: {type(exc).__name__}: {exc}")
            return ()
        self.left -= len(names)
        return names


# ---------------------------------------------------------------- squeue --json


@dataclass(frozen=True, slots=True)
class SqueueJsonJob:
    job_id: int | None
    array_job_id: int | None
    array_task_id: int | None
    name: str
    user_name: str
    user_id: int | None
    account: str
    partition: str
    qos: str
    job_state: str  # first state word ("RUNNING")
    state_flags: tuple[str, ...]  # further state words of 23.11+ lists ("COMPLETING")
    state_reason: str
    nodes_hostlist: str  # "cs[1-4]" as printed
    nodes: tuple[str, ...]  # expanded
    node_count: int | None
    cpus: int | None
    priority: int | None
    submit_time_s: int | None  # Unix seconds
    start_time_s: int | None
    end_time_s: int | None
    time_limit_min: int | None  # minutes
    time_limit_infinite: bool
    batch_host: str
    tres_alloc: str  # "cpu=1,mem=62.50G,node=1,billing=1"


@dataclass(frozen=True, slots=True)
class SqueueJson:
    plugin: str  # "openapi/v0.0.37", "data_parser/v0.0.40", ...
    slurm_release: str
    jobs: tuple[SqueueJsonJob, ...]
    errors: tuple[str, ...]  # the response's own "errors" and "warnings" entries
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _json_int(job: dict[str, Any], key: str, where: Range, problems: Problems) -> int | None:
    """``job[key]`` as a number (plain or wrapped), in its range; None (and a problem) when not."""
    value = _num(job.get(key))[0]
    return where.check(value, problems, 0, f"{key}: {value}", key)


def _num(value: Any) -> tuple[int | None, bool]:
    """(number, infinite) from a plain number or a ``{"set","infinite","number"}`` object."""
    if isinstance(value, dict):
        if value.get("infinite") is True:
            return None, True
        if value.get("set") is False:
            return None, False
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, False
    return int(value), False


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _message(entry: Any) -> str:
    if isinstance(entry, dict):
        text = entry.get("description") or entry.get("error") or entry.get("warning")
        return str(text) if text else json.dumps(entry, sort_keys=True)
    return str(entry)


@parser
def parse_squeue_json(text: str) -> SqueueJson:
    """Parse ``squeue --json`` (any OpenAPI version seen so far); ParseError for JSON nested too deep."""
    problems = Problems()
    try:
        data = load_json(text, "squeue --json")
    except ParseError:
        raise
    except ValueError as exc:
        line = getattr(exc, "lineno", 0)
        lines = split_lines(text)
        problems.unknown_lines = sum(1 for item in lines if item.strip())
        problems.add(line, lines[line - 1] if 0 < line <= len(lines) else "", f"not JSON: {exc}")
        return SqueueJson("", "", (), (), problems.result(), problems.unknown_lines)
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        problems.add(0, "", "JSON without a 'jobs' list: not squeue --json output")
        return SqueueJson("", "", (), (), problems.result(), 0)
    meta = _obj(data.get("meta"))
    plugin_info = _obj(meta.get("plugin"))
    slurm_info = _obj(meta.get("Slurm") or meta.get("slurm"))
    plugin = _str(plugin_info.get("type")) or _str(plugin_info.get("data_parser"))
    release = _str(slurm_info.get("release"))
    jobs = []
    nodes = NodeExpander(problems)
    for position, job in enumerate(data["jobs"]):
        if not isinstance(job, dict):
            problems.add(0, str(job), f"jobs[{position}] is not an object")
            continue
        jobs.append(_json_job(job, problems, nodes))
    errors = tuple(
        _message(entry)
        for key in ("errors", "warnings")
        if isinstance(data.get(key), list)
        for entry in data[key]
    )
    return SqueueJson(plugin, release, tuple(jobs), errors, problems.result(), 0)


def _json_job(job: dict[str, Any], problems: Problems, nodes: NodeExpander) -> SqueueJsonJob:
    state = job.get("job_state")
    states = [s for s in state if isinstance(s, str)] if isinstance(state, list) else [_str(state)]
    time_limit, infinite = _num(job.get("time_limit"))
    nodes_text = _str(job.get("nodes"))

    def number(key: str, where: Range = U32) -> int | None:
        return _json_int(job, key, where, problems)

    return SqueueJsonJob(
        job_id=number("job_id"),
        array_job_id=number("array_job_id"),
        array_task_id=number("array_task_id"),
        name=_str(job.get("name")),
        user_name=_str(job.get("user_name")),
        user_id=number("user_id"),
        account=_str(job.get("account")),
        partition=_str(job.get("partition")),
        qos=_str(job.get("qos")),
        job_state=states[0] if states else "",
        state_flags=tuple(states[1:]),
        state_reason=_str(job.get("state_reason")),
        nodes_hostlist=nodes_text,
        nodes=nodes.expand(nodes_text),
        node_count=number("node_count"),
        cpus=number("cpus"),
        priority=number("priority"),
        submit_time_s=number("submit_time", UNIX_TIME_S),
        start_time_s=number("start_time", UNIX_TIME_S),
        end_time_s=number("end_time", UNIX_TIME_S),
        time_limit_min=U32.check(time_limit, problems, 0, f"time_limit: {time_limit}", "time_limit"),
        time_limit_infinite=infinite,
        batch_host=_str(job.get("batch_host")),
        tres_alloc=_str(job.get("tres_alloc_str")),
    )


# ---------------------------------------------------------------- squeue table

# Header word -> typed field of SqueueRow.
_SQUEUE_COLUMNS = {
    "JOBID": "job_id",
    "JOB_ID": "job_id",
    "PARTITION": "partition",
    "NAME": "name",
    "USER": "user",
    "ACCOUNT": "account",
    "ST": "state",
    "STATE": "state",
    "TIME": "time_used",
    "TIME_LEFT": "time_left",
    "NODES": "node_count",
    "CPUS": "cpus",
    "PRIORITY": "priority",
}


@dataclass(frozen=True, slots=True)
class SqueueRow:
    job_id: str  # "123", "123_4" for array tasks
    partition: str | None
    name: str | None
    user: str | None  # as printed: squeue truncates to the column width
    account: str | None
    state: str | None  # "R", "PD" or "RUNNING" as printed
    time_used: str | None  # "20:35", "14-00:00:00" as printed
    time_left: str | None
    node_count: int | None
    cpus: int | None
    priority: int | None
    nodelist: str | None  # hostlist, None when the column shows a reason
    nodes: tuple[str, ...]
    reason: str | None  # "(Resources)" without the parentheses
    fields: tuple[tuple[str, str], ...]  # every column as printed


@dataclass(frozen=True, slots=True)
class Squeue:
    columns: tuple[str, ...]
    jobs: tuple[SqueueRow, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _is_squeue_header(words: list[str]) -> bool:
    return ("JOBID" in words or "JOB_ID" in words) and any(
        w in words for w in ("ST", "STATE", "USER", "NAME", "PARTITION")
    )


@parser
def parse_squeue(text: str, columns: Sequence[str] | None = None) -> Squeue:
    """Parse an ``squeue`` table; the header is detected, or given as ``columns`` with ``-h``.

    The last column (usually ``NODELIST(REASON)``) may contain spaces; the
    others may not (squeue pads and truncates them).
    """
    problems = Problems()
    names: list[str] = [c.upper() for c in columns] if columns else []
    jobs: list[SqueueRow] = []
    nodes = NodeExpander(problems)
    for number, line in enumerate(split_lines(text), start=1):
        words = line.split()
        if not words:
            continue
        if _is_squeue_header(words):
            names = words
            continue
        if not names:
            problems.unknown(number, line, "no squeue header before this line")
            continue
        cells = line.split(None, len(names) - 1)
        if len(cells) != len(names):
            problems.unknown(number, line, f"row has {len(cells)} values, header has {len(names)}")
            continue
        row = _squeue_row(number, names, [c.strip() for c in cells], problems, nodes)
        if row is None:
            problems.unknown(number, line, "no job id in the JOBID column")
        else:
            jobs.append(row)
    if not names and not problems.items:
        problems.add(0, "", "no squeue header found")
    return Squeue(tuple(names), tuple(jobs), problems.result(), problems.unknown_lines)


def _squeue_row(
    number: int, names: list[str], cells: list[str], problems: Problems, nodes: NodeExpander
) -> SqueueRow | None:
    typed: dict[str, str] = {}
    nodelist: str | None = None
    reason: str | None = None
    for name, cell in zip(names, cells, strict=True):
        if name in _SQUEUE_COLUMNS:
            typed[_SQUEUE_COLUMNS[name]] = cell
        elif name == "NODELIST(REASON)":
            if cell.startswith("(") and cell.endswith(")"):
                reason = cell[1:-1]
            else:
                nodelist = cell
        elif name in {"NODELIST", "NODELIST(REASON)"}:
            nodelist = cell
        elif name == "REASON":
            reason = cell
    job_id = typed.get("job_id", "")
    if not re.fullmatch(r"[0-9]{1,10}(?:[_+]\S+)?", job_id):
        return None

    def count(key: str) -> int | None:
        return U32.check(to_int(typed.get(key, "")), problems, number, typed.get(key, ""), key)

    return SqueueRow(
        job_id=job_id,
        partition=typed.get("partition"),
        name=typed.get("name"),
        user=typed.get("user"),
        account=typed.get("account"),
        state=typed.get("state"),
        time_used=typed.get("time_used"),
        time_left=typed.get("time_left"),
        node_count=count("node_count"),
        cpus=count("cpus"),
        priority=count("priority"),
        nodelist=nodelist,
        nodes=nodes.expand(nodelist or "", number),
        reason=reason,
        fields=tuple(zip(names, cells, strict=True)),
    )


# ---------------------------------------------------------------- scontrol show job

_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z_][\w:/]*)=")
_ID_NAME = re.compile(r"^(.*?)\(([0-9]{1,10})\)$")
_SLURM_ERROR = re.compile(r"^(?:\w+: )?(?:slurm_\w+ error|error)\b|^No jobs in the system", re.I)


@dataclass(frozen=True, slots=True)
class ScontrolNodeDetail:
    """One ``Nodes=... CPU_IDs=... Mem=... GRES=`` line of ``scontrol show job --details``."""

    nodes: tuple[str, ...]
    cpu_ids: str
    mem_mib: int | None
    gres: str


@dataclass(frozen=True, slots=True)
class ScontrolJob:
    job_id: str
    name: str
    user: str  # without the "(uid)"
    user_id: int | None
    account: str
    partition: str
    qos: str
    job_state: str
    reason: str
    nodelist: str  # NodeList= as printed
    nodes: tuple[str, ...]  # expanded
    num_nodes: int | None
    num_cpus: int | None
    submit_time: str  # controller local time as printed
    start_time: str
    end_time: str
    time_limit: str  # "14-00:00:00", "UNLIMITED" as printed
    node_details: tuple[ScontrolNodeDetail, ...]
    fields: tuple[tuple[str, str], ...]  # every Key=Value as printed, in order


@dataclass(frozen=True, slots=True)
class ScontrolJobs:
    jobs: tuple[ScontrolJob, ...]
    errors: tuple[str, ...]  # "slurm_load_jobs error: ..." and similar
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _pairs(line: str) -> list[tuple[str, str]]:
    """``Key=Value Key2=a b`` -> pairs; a value runs to the next ``Key=`` after whitespace."""
    matches = list(_KEY.finditer(line))
    pairs = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        pairs.append((match.group(1), line[match.end() : end].strip()))
    return pairs


@parser
def parse_scontrol_job(text: str) -> ScontrolJobs:
    """Parse ``scontrol show job [--details]`` for one or many jobs; never raises."""
    problems = Problems()
    blocks: list[tuple[list[tuple[str, str]], list[ScontrolNodeDetail]]] = []
    errors: list[str] = []
    nodes = NodeExpander(problems)
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        pairs = _pairs(stripped)
        if pairs and pairs[0][0] == "JobId":
            blocks.append((pairs, []))
            continue
        if not pairs or not blocks or not stripped.startswith(pairs[0][0] + "="):
            if _SLURM_ERROR.match(stripped):
                errors.append(stripped)
            else:
                problems.unknown(number, line)
            continue
        fields, details = blocks[-1]
        if pairs[0][0] == "Nodes" and any(key == "CPU_IDs" for key, _ in pairs):
            named = dict(pairs)
            details.append(
                ScontrolNodeDetail(
                    nodes=nodes.expand(named.get("Nodes", ""), number),
                    cpu_ids=named.get("CPU_IDs", ""),
                    mem_mib=U64.check(to_int(named.get("Mem", "")), problems, number, line, "Mem"),
                    gres=named.get("GRES", ""),
                )
            )
            continue
        fields.extend(pairs)
    jobs = tuple(_scontrol_job(fields, details, problems, nodes) for fields, details in blocks)
    return ScontrolJobs(jobs, tuple(errors), problems.result(), problems.unknown_lines)


def _scontrol_job(
    fields: list[tuple[str, str]],
    details: list[ScontrolNodeDetail],
    problems: Problems,
    nodes: NodeExpander,
) -> ScontrolJob:
    named = dict(fields)
    user_match = _ID_NAME.match(named.get("UserId", ""))
    nodelist = named.get("NodeList", "")
    return ScontrolJob(
        job_id=named.get("JobId", ""),
        name=named.get("JobName", ""),
        user=user_match.group(1) if user_match else named.get("UserId", ""),
        user_id=U32.check(int(user_match.group(2)), problems, 0, named.get("UserId", ""), "UserId") if user_match else None,
        account=named.get("Account", ""),
        partition=named.get("Partition", ""),
        qos=named.get("QOS", ""),
        job_state=named.get("JobState", ""),
        reason=named.get("Reason", ""),
        nodelist=nodelist,
        nodes=nodes.expand(nodelist),
        num_nodes=U32.check(to_int(named.get("NumNodes", "").split("-")[0]), problems, 0, named.get("NumNodes", ""), "NumNodes"),
        num_cpus=U32.check(to_int(named.get("NumCPUs", "")), problems, 0, named.get("NumCPUs", ""), "NumCPUs"),
        submit_time=named.get("SubmitTime", ""),
        start_time=named.get("StartTime", ""),
        end_time=named.get("EndTime", ""),
        time_limit=named.get("TimeLimit", ""),
        node_details=tuple(details),
        fields=tuple(fields),
    )
