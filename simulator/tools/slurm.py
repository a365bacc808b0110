"""``squeue`` and ``scontrol`` as the Slurm head ``head01`` answers them.

Layouts followed:

- ``squeue -o/-O``-less default table and ``squeue [-h] -o "<format>"``:
  ``slurm/aau-biocloud-squeue-o-custom-format-pending-reasons.txt``
  (``%.18i`` right-justifies and truncates to 18, ``%Q`` without a size is
  printed at its natural width, ``jm12em@b`` truncation, ``0:00`` /
  ``20:35`` / ``1:00:00`` / ``14-00:00:00`` times, ``(Resources)`` reasons).
  The default format is squeue's ``"%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"``.
- ``squeue --json``: the Slurm 23.11 layout (``data_parser/v0.0.40``, also the
  shape of 24.x's v0.0.41): numbers as ``{"set": true, "infinite": false,
  "number": N}``, ``job_state`` a list, ``meta.plugin.data_parser``, job keys
  in alphabetical order; checked against a real 23.11.1 job record published
  as test data and against ``slurm/rivos-squeue-json-slurm21.08.5-openapi-v0.0.37.txt``
  for the key names (that 21.08 capture has plain numbers instead).
- ``scontrol show job <id>``: ``slurm/aau-biocloud-scontrol-show-job-interactive.txt``
  and ``slurm/vt-tinkercliffs-scontrol-show-job-details-3nodes.txt`` (one
  ``JobId=`` line, then 3-space indented ``Key=Value`` lines; a blank line ends
  the record).
- ``scontrol show hostnames|hostlist``: one name a line / the compressed list,
  with python-hostlist.
- ``scontrol show node [NAME]``: the layout of Slurm 22.05's ``scontrol``, as captured in
  ``slurm/debian12-slurm22.05.8-scontrol-show-node-*.txt`` (a ``NodeName=`` line, 3-space
  indented lines, ``State=`` the base state and ``+DRAIN``, ``Reason=text [user@time]`` last,
  a blank line after each node; ``Node X not found`` and exit 1 for an unknown name), with this
  fleet's node hardware. ``scontrol update`` changes state: ``fleet.simulator.slurm_cli``.
"""

from __future__ import annotations

import json
import shlex
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import hostlist

from fleet.simulator.state import JobView, SlurmNodesView
from fleet.simulator.tools import ToolContext, ToolOutput, register

SLURM_RELEASE = (23, 11, 4)
DATA_PARSER = "data_parser/v0.0.40"
CLUSTER = "fleet"
CPUS_PER_NODE = 224  # 2 x 56 cores with SMT, as ``nvidia-smi topo -m`` shows
GPUS_PER_NODE = 8
MEM_PER_NODE_MIB = 2_000_000
NODE_UPTIME_S = 12 * 86400.0
"""How long the simulated nodes have been up (``BootTime``)."""
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
STATE_CODES: dict[str, str] = {
    "RUNNING": "R",
    "PENDING": "PD",
    "COMPLETING": "CG",
    "COMPLETED": "CD",
    "CANCELLED": "CA",
    "FAILED": "F",
    "SUSPENDED": "S",
    "TIMEOUT": "TO",
    "NODE_FAIL": "NF",
}


def _uid(user: str) -> int:
    """A stable uid for a user name (the simulated head has no passwd file to ask)."""
    return 10000 + zlib.crc32(user.encode()) % 50000


def _duration(seconds: float) -> str:
    """squeue's ``secs2time_str``: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``."""
    secs = max(int(seconds), 0)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, s = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{s:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{s:02d}"
    return f"{minutes}:{s:02d}"


def _long_duration(seconds: float) -> str:
    """scontrol's ``HH:MM:SS`` / ``D-HH:MM:SS`` (``RunTime``, ``TimeLimit``)."""
    secs = max(int(seconds), 0)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, s = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{s:02d}"
    return f"{days}-{clock}" if days else clock


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


def _running(job: JobView) -> bool:
    return job.state in ("RUNNING", "COMPLETING", "SUSPENDED")


def _elapsed(job: JobView, now: float) -> float:
    return now - job.start_time if _running(job) else 0.0


def _reason(job: JobView) -> str:
    return "None" if _running(job) else "Resources"


def _submit_time(job: JobView) -> float:
    return job.start_time - 60.0


@dataclass(frozen=True, slots=True)
class Column:
    """One squeue ``%`` type: its header and how to print a job for it."""

    header: str
    value: Callable[[JobView, float], str]


COLUMNS: dict[str, Column] = {
    "i": Column("JOBID", lambda j, _n: str(j.job_id)),
    "A": Column("JOBID", lambda j, _n: str(j.job_id)),
    "j": Column("NAME", lambda j, _n: j.name),
    "u": Column("USER", lambda j, _n: j.user),
    "a": Column("ACCOUNT", lambda j, _n: j.account),
    "P": Column("PARTITION", lambda j, _n: j.partition),
    "q": Column("QOS", lambda _j, _n: "normal"),
    "T": Column("STATE", lambda j, _n: j.state),
    "t": Column("ST", lambda j, _n: STATE_CODES.get(j.state, j.state[:2])),
    "M": Column("TIME", lambda j, n: _duration(_elapsed(j, n))),
    "l": Column("TIME_LIMIT", lambda j, _n: _duration(j.time_limit_min * 60)),
    "L": Column(
        "TIME_LEFT",
        lambda j, n: _duration(j.time_limit_min * 60 - _elapsed(j, n)),
    ),
    "D": Column("NODES", lambda j, _n: str(j.node_count)),
    "C": Column("CPUS", lambda j, _n: str(j.node_count * CPUS_PER_NODE)),
    "N": Column("NODELIST", lambda j, _n: j.nodes if _running(j) else ""),
    "R": Column("NODELIST(REASON)", lambda j, _n: j.nodes if _running(j) else f"({_reason(j)})"),
    "r": Column("REASON", lambda j, _n: _reason(j)),
    "S": Column("START_TIME", lambda j, _n: _iso(j.start_time) if _running(j) else "N/A"),
    "V": Column("SUBMIT_TIME", lambda j, _n: _iso(_submit_time(j))),
    "e": Column(
        "END_TIME",
        lambda j, _n: _iso(j.start_time + j.time_limit_min * 60) if _running(j) else "N/A",
    ),
    "Q": Column("PRIORITY", lambda j, _n: str(4294901760 - j.job_id % 65536)),
    "m": Column("MIN_MEMORY", lambda _j, _n: "0"),
    "b": Column("TRES_PER_NODE", lambda _j, _n: f"gres/gpu:{GPUS_PER_NODE}"),
}


@dataclass(frozen=True, slots=True)
class Field:
    """One parsed ``%[.][size]type`` of a format string, or literal text (``type`` "")."""

    text: str
    type: str = ""
    size: int | None = None
    right: bool = False


def parse_format(fmt: str) -> list[Field] | str:
    """Split an ``-o`` format into fields; a string is the error squeue prints."""
    fields: list[Field] = []
    i = 0
    literal = ""
    while i < len(fmt):
        ch = fmt[i]
        if ch != "%":
            literal += ch
            i += 1
            continue
        if fmt[i + 1 : i + 2] == "%":
            literal += "%"
            i += 2
            continue
        if literal:
            fields.append(Field(literal))
            literal = ""
        i += 1
        right = fmt[i : i + 1] == "."
        if right:
            i += 1
        digits = ""
        while i < len(fmt) and fmt[i].isdigit():
            digits += fmt[i]
            i += 1
        kind = fmt[i : i + 1]
        if kind not in COLUMNS:
            return f"Invalid job format specification: {kind}"
        fields.append(Field("", kind, int(digits) if digits else None, right))
        i += 1
    if literal:
        fields.append(Field(literal))
    return fields


# squeue cuts names to the field size (``jm12em@b`` in the capture) but prints
# times, numbers and node lists whole (``14-00:00:00`` in a ``%.10L`` column).
TRUNCATED_TYPES = frozenset("juaPqTtbr")


def _cell(text: str, field: Field) -> str:
    if field.size is None:
        return text
    if field.type in TRUNCATED_TYPES:
        text = text[: field.size]
    return text.rjust(field.size) if field.right else text.ljust(field.size)


def _render_line(fields: list[Field], values: Callable[[Field], str]) -> str:
    return "".join(f.text if not f.type else _cell(values(f), f) for f in fields)


def _table(jobs: list[JobView], fields: list[Field], header: bool, now: float) -> str:
    lines: list[str] = []
    if header:
        lines.append(_render_line(fields, lambda f: COLUMNS[f.type].header))
    for job in jobs:

        def value(f: Field, job: JobView = job) -> str:
            return COLUMNS[f.type].value(job, now)

        lines.append(_render_line(fields, value))
    return "".join(line + "\n" for line in lines)


def _num(value: int, *, set_: bool = True, infinite: bool = False) -> dict[str, object]:
    return {"set": set_, "infinite": infinite, "number": value}


def _exit_code() -> dict[str, object]:
    return {
        "status": ["SUCCESS"],
        "return_code": _num(0),
        "signal": {"id": _num(0, set_=False), "name": ""},
    }


def _job_json(job: JobView, now: float) -> dict[str, object]:
    running = _running(job)
    node_names: list[str] = hostlist.expand_hostlist(job.nodes) if running else []
    cpus = job.node_count * CPUS_PER_NODE
    mem_mib = job.node_count * MEM_PER_NODE_MIB
    tres = f"cpu={cpus},mem={mem_mib}M,node={job.node_count},billing={cpus},gres/gpu={job.node_count * GPUS_PER_NODE}"
    start = int(job.start_time) if running else 0
    return {
        "account": job.account,
        "accrue_time": _num(int(_submit_time(job))),
        "admin_comment": "",
        "array_job_id": _num(0),
        "array_task_id": _num(0, set_=False),
        "batch_flag": True,
        "batch_host": node_names[0] if node_names else "",
        "command": f"/home/{job.user}/{job.name}.sbatch",
        "cpus": _num(cpus),
        "current_working_directory": f"/home/{job.user}",
        "end_time": _num(start + job.time_limit_min * 60 if running else 0),
        "exit_code": _exit_code(),
        "flags": ["EXACT_TIME_LIMIT", "JOB_WAS_RUNNING"] if running else [],
        "group_id": _uid(job.account),
        "group_name": job.account,
        "job_id": job.job_id,
        "job_resources": {
            "nodes": job.nodes if running else "",
            "allocated_cores": cpus if running else 0,
            "allocated_cpus": cpus if running else 0,
            "allocated_hosts": job.node_count if running else 0,
            "allocated_nodes": [
                {
                    "nodename": name,
                    "cpus_used": 0,
                    "memory_used": 0,
                    "memory_allocated": MEM_PER_NODE_MIB,
                }
                for name in node_names
            ],
        },
        "job_state": [job.state],
        "last_sched_evaluation": _num(int(job.start_time)),
        "name": job.name,
        "node_count": _num(job.node_count),
        "nodes": job.nodes if running else "",
        "partition": job.partition,
        "priority": _num(4294901760 - job.job_id % 65536),
        "qos": "normal",
        "start_time": _num(start),
        "state_description": "",
        "state_reason": _reason(job),
        "submit_time": _num(int(_submit_time(job))),
        "tasks": _num(job.node_count * GPUS_PER_NODE),
        "time_limit": _num(job.time_limit_min),
        "tres_alloc_str": tres if running else "",
        "tres_per_node": f"gres/gpu:{GPUS_PER_NODE}",
        "tres_req_str": tres,
        "user_id": _uid(job.user),
        "user_name": job.user,
    }


def squeue_json(jobs: list[JobView], now: float, hostname: str) -> str:
    """The whole ``squeue --json`` document (2-space indent as Slurm's serializer prints)."""
    major, minor, micro = SLURM_RELEASE
    doc = {
        "jobs": [_job_json(j, now) for j in jobs],
        "last_backfill": _num(int(now) - 30),
        "last_update": _num(int(now)),
        "meta": {
            "plugin": {
                "type": "",
                "name": "",
                "data_parser": DATA_PARSER,
                "accounting_storage": "accounting_storage/slurmdbd",
            },
            "client": {"source": f"{hostname}", "user": "root", "group": "root"},
            "command": ["squeue", "--json"],
            "slurm": {
                "version": {"major": str(major), "micro": str(micro), "minor": str(minor)},
                "release": f"{major}.{minor}.{micro}",
                "cluster": CLUSTER,
            },
        },
        "errors": [],
        "warnings": [],
    }
    return json.dumps(doc, indent=2) + "\n"


@dataclass
class SqueueArgs:
    fmt: str = DEFAULT_FORMAT
    header: bool = True
    json: bool = False
    job_ids: set[int] | None = None
    users: set[str] | None = None
    accounts: set[str] | None = None
    partitions: set[str] | None = None
    states: set[str] | None = None


def _split_values(value: str) -> set[str]:
    return {v for v in value.split(",") if v}


def _parse_squeue(argv: list[str]) -> SqueueArgs | str:
    args = SqueueArgs()
    with_value = {
        "-o": "fmt",
        "--format": "fmt",
        "-j": "jobs",
        "--jobs": "jobs",
        "-u": "users",
        "--user": "users",
        "-A": "accounts",
        "--account": "accounts",
        "-p": "partitions",
        "--partition": "partitions",
        "-t": "states",
        "--states": "states",
    }
    pending = list(argv)
    while pending:
        arg = pending.pop(0)
        name, eq, value = arg.partition("=")
        if name in ("-h", "--noheader"):
            args.header = False
            continue
        if name == "--json":
            args.json = True
            continue
        key = with_value.get(name)
        if key is None and len(arg) > 2 and arg[:2] in with_value and not arg.startswith("--"):
            key, value, eq = with_value[arg[:2]], arg[2:], "="
        if key is None:
            return (
                f"squeue: unrecognized option '{arg}'\nTry \"squeue --help\" for more information\n"
            )
        if not eq:
            if not pending:
                return f"squeue: option requires an argument -- '{name.lstrip('-')}'\nTry \"squeue --help\" for more information\n"
            value = pending.pop(0)
        if key == "fmt":
            args.fmt = value
        elif key == "jobs":
            ids = _split_values(value)
            if not all(v.isdigit() for v in ids):
                return f"squeue: error: Invalid job id: {value}\n"
            args.job_ids = {int(v) for v in ids}
        elif key == "users":
            args.users = _split_values(value)
        elif key == "accounts":
            args.accounts = _split_values(value)
        elif key == "partitions":
            args.partitions = _split_values(value)
        else:
            args.states = {s.upper() for s in _split_values(value)}
    return args


def _selected(jobs: tuple[JobView, ...], args: SqueueArgs) -> list[JobView]:
    def keep(job: JobView) -> bool:
        code = STATE_CODES.get(job.state, "")
        return (
            (args.job_ids is None or job.job_id in args.job_ids)
            and (args.users is None or job.user in args.users)
            and (args.accounts is None or job.account in args.accounts)
            and (args.partitions is None or job.partition in args.partitions)
            and (args.states is None or bool({job.state, code} & args.states))
        )

    return [j for j in jobs if keep(j)]


@register("squeue")
def squeue(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``squeue`` with ``--json``, ``-h``, ``-o FORMAT`` and the usual filters."""
    args = _parse_squeue(argv[1:])
    if isinstance(args, str):
        return ToolOutput("", args, 1)
    jobs = _selected(ctx.jobs(), args)
    if args.json:
        return ToolOutput(squeue_json(jobs, ctx.now, ctx.hostname))
    fields = parse_format(args.fmt)
    if isinstance(fields, str):
        return ToolOutput("", f"squeue: error: {fields}\n", 1)
    return ToolOutput(_table(jobs, fields, args.header, ctx.now))


def scontrol_job(job: JobView, now: float, head: str) -> str:
    """``scontrol show job`` for one job, ending with the blank line scontrol prints."""
    running = _running(job)
    uid = _uid(job.user)
    gid = _uid(job.account)
    cpus = job.node_count * CPUS_PER_NODE
    mem = f"{job.node_count * MEM_PER_NODE_MIB // 1024}G"
    gpus = job.node_count * GPUS_PER_NODE
    tres = f"cpu={cpus},mem={mem},node={job.node_count},billing={cpus},gres/gpu={gpus}"
    submit = _iso(_submit_time(job))
    start = _iso(job.start_time) if running else "Unknown"
    end = _iso(job.start_time + job.time_limit_min * 60) if running else "Unknown"
    first = hostlist.expand_hostlist(job.nodes)[0] if running and job.nodes else ""
    lines = [
        f"JobId={job.job_id} JobName={job.name}",
        f"   UserId={job.user}({uid}) GroupId={job.account}({gid}) MCS_label=N/A",
        f"   Priority={4294901760 - job.job_id % 65536} Nice=0 Account={job.account} QOS=normal",
        f"   JobState={job.state} Reason={_reason(job)} Dependency=(null)",
        "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0",
        f"   RunTime={_long_duration(_elapsed(job, now))} TimeLimit={_long_duration(job.time_limit_min * 60)} TimeMin=N/A",
        f"   SubmitTime={submit} EligibleTime={submit}",
        f"   AccrueTime={submit}",
        f"   StartTime={start} EndTime={end} Deadline=N/A",
        f"   SuspendTime=None SecsPreSuspend=0 LastSchedEval={start if running else submit} Scheduler=Main",
        f"   Partition={job.partition} AllocNode:Sid={head}:{job.job_id % 30000 + 1000}",
        "   ReqNodeList=(null) ExcNodeList=(null)",
        f"   NodeList={job.nodes if running else '(null)'}",
        f"   BatchHost={first}" if running else "   BatchHost=(null)",
        f"   NumNodes={job.node_count} NumCPUs={cpus} NumTasks={gpus} CPUs/Task=1 ReqB:S:C:T=0:0:*:*",
        f"   ReqTRES={tres}",
        f"   AllocTRES={tres if running else '(null)'}",
        f"   Socks/Node=* NtasksPerN:B:S:C={GPUS_PER_NODE}:0:*:* CoreSpec=*",
        "   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0",
        "   Features=(null) DelayBoot=00:00:00",
        "   OverSubscribe=NO Contiguous=0 Licenses=(null) Network=(null)",
        f"   Command=/home/{job.user}/{job.name}.sbatch",
        f"   WorkDir=/home/{job.user}",
        f"   StdErr=/home/{job.user}/slurm-{job.job_id}.out",
        "   StdIn=/dev/null",
        f"   StdOut=/home/{job.user}/slurm-{job.job_id}.out",
        f"   TresPerNode=gres/gpu:{GPUS_PER_NODE}",
        "   Power=",
        "",
    ]
    return "".join(line + "\n" for line in lines)


def _scontrol_show(ctx: ToolContext, what: str, rest: list[str]) -> ToolOutput:
    if what in ("hostnames", "hostname"):
        if not rest:
            return ToolOutput("", "scontrol: error: host list is empty\n", 1)
        try:
            names = hostlist.expand_hostlist(",".join(rest))
        except hostlist.BadHostlist:
            return ToolOutput("", f"scontrol: error: Invalid hostlist: {shlex.join(rest)}\n", 1)
        return ToolOutput("".join(n + "\n" for n in names))
    if what in ("hostlist", "hostlistsorted"):
        if not rest:
            return ToolOutput("", "scontrol: error: host list is empty\n", 1)
        try:
            names = hostlist.expand_hostlist(",".join(rest))
        except hostlist.BadHostlist:
            return ToolOutput("", f"scontrol: error: Invalid hostlist: {shlex.join(rest)}\n", 1)
        return ToolOutput(hostlist.collect_hostlist(names) + "\n")
    if what in ("job", "jobs", "jobid"):
        jobs = ctx.jobs()
        if rest:
            if not rest[0].isdigit():
                return ToolOutput("", "slurm_load_jobs error: Invalid job id specified\n", 1)
            jobs = tuple(j for j in jobs if j.job_id == int(rest[0]))
            if not jobs:
                return ToolOutput("", "slurm_load_jobs error: Invalid job id specified\n", 1)
        if not jobs:
            return ToolOutput("No jobs in the system\n")
        return ToolOutput("".join(scontrol_job(j, ctx.now, ctx.hostname) for j in jobs))
    if what in ("node", "nodes", "nodename"):
        return _scontrol_nodes(ctx, rest)
    return ToolOutput("", f"invalid entity:{what} for keyword:show \n", 1)


def _scontrol_nodes(ctx: ToolContext, rest: list[str]) -> ToolOutput:
    slurm = ctx.slurm_nodes()
    names = slurm.names
    if rest:
        if rest[0] not in names:
            return ToolOutput(f"Node {rest[0]} not found\n", "", 1)
        names = (rest[0],)
    jobs = ctx.jobs()
    allocated = {node for job in jobs if _running(job) and job.nodes for node in hostlist.expand_hostlist(job.nodes)}
    partitions = sorted({job.partition for job in jobs}) or ["gpu"]
    return ToolOutput("".join(scontrol_node(name, name in allocated, slurm, ctx.now, ",".join(partitions))
                              for name in names))


def scontrol_node(name: str, allocated: bool, slurm: SlurmNodesView, now: float, partitions: str) -> str:
    """``scontrol show node`` for one node, ending with the blank line scontrol prints."""
    drain = slurm.drains.get(name)
    state = ("ALLOCATED" if allocated else "IDLE") + ("+DRAIN" if drain is not None else "")
    cpus_alloc = CPUS_PER_NODE if allocated else 0
    mem_alloc = MEM_PER_NODE_MIB if allocated else 0
    boot = _iso(now - NODE_UPTIME_S)
    tres = f"cpu={CPUS_PER_NODE},mem={MEM_PER_NODE_MIB}M,billing={CPUS_PER_NODE},gres/gpu={GPUS_PER_NODE}"
    alloc_tres = f"cpu={CPUS_PER_NODE},mem={MEM_PER_NODE_MIB}M,gres/gpu={GPUS_PER_NODE}" if allocated else ""
    lines = [
        f"NodeName={name} Arch=x86_64 CoresPerSocket={CPUS_PER_NODE // 4} ",
        f"   CPUAlloc={cpus_alloc} CPUEfctv={CPUS_PER_NODE} CPUTot={CPUS_PER_NODE} "
        f"CPULoad={(CPUS_PER_NODE * 0.9 if allocated else 0.05):.2f}",
        "   AvailableFeatures=(null)",
        "   ActiveFeatures=(null)",
        f"   Gres=gpu:{GPUS_PER_NODE}",
        f"   NodeAddr={name} NodeHostName={name} Version={'.'.join(map(str, SLURM_RELEASE))}",
        f"   OS=Linux {slurm.kernel} #1 SMP ",
        f"   RealMemory={MEM_PER_NODE_MIB} AllocMem={mem_alloc} FreeMem={MEM_PER_NODE_MIB - mem_alloc} "
        "Sockets=2 Boards=1",
        f"   State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        f"   Partitions={partitions} ",
        f"   BootTime={boot} SlurmdStartTime={boot}",
        f"   LastBusyTime={_iso(now)}",
        f"   CfgTRES={tres}",
        f"   AllocTRES={alloc_tres}",
        "   CapWatts=n/a",
        "   CurrentWatts=0 AveWatts=0",
        "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
    ]
    if drain is not None:
        lines.append(f"   Reason={drain.reason} [{drain.user}@{_iso(drain.since)}]")
    return "".join(line + "\n" for line in lines) + "\n"


@register("scontrol")
def scontrol(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``scontrol show job|node|hostnames|hostlist``; ``update`` is stateful (``fleet.simulator.slurm_cli``),
    other commands are refused as on a read-only head."""
    args = argv[1:]
    if not args:
        return ToolOutput("", "scontrol: error: no command given\n", 1)
    if args[0] != "show":
        return ToolOutput("", f"invalid keyword: {args[0]}\n", 1)
    if len(args) < 2:
        return ToolOutput("", "too few arguments for keyword:show\n", 1)
    return _scontrol_show(ctx, args[1], args[2:])
