"""Slurm: squeue --json (v0.0.37 capture and the 23.x+ number objects), squeue -o, scontrol."""

from __future__ import annotations

import json
from pathlib import Path

from fleet.collectors.parsers.slurm import parse_scontrol_job, parse_squeue, parse_squeue_json

FIXTURES = Path(__file__).parents[2] / "fixtures" / "slurm"


def test_squeue_json_v0037_rivos() -> None:
    text = (FIXTURES / "rivos-squeue-json-slurm21.08.5-openapi-v0.0.37.txt").read_text()
    result = parse_squeue_json(text)
    assert result.problems == () and result.errors == ()
    assert (result.plugin, result.slurm_release) == ("openapi/v0.0.37", "21.08.5")
    (job,) = result.jobs
    assert (job.job_id, job.name, job.user_name, job.account, job.partition) == (
        26515966,
        "job_name",
        "bkd",
        "account1",
        "hw-l",
    )
    assert (job.job_state, job.state_flags, job.state_reason) == ("RUNNING", (), "None")
    assert (job.nodes_hostlist, job.nodes, job.node_count, job.cpus) == ("cs75", ("cs75",), 1, 1)
    assert (job.start_time_s, job.end_time_s, job.time_limit_min) == (1684114921, 1686633833, 30240)
    assert job.array_task_id is None and job.priority == 1013
    assert job.tres_alloc == "cpu=1,mem=62.50G,node=1,billing=1"


NEWER = {
    "meta": {
        "plugin": {"type": "", "name": "", "data_parser": "data_parser/v0.0.40"},
        "slurm": {"version": {"major": "23", "micro": "1", "minor": "11"}, "release": "23.11.1"},
    },
    "jobs": [
        {
            "account": "tenant-a",
            "job_id": 4242,
            "job_state": ["RUNNING", "COMPLETING"],
            "name": "llm-pretrain",
            "nodes": "gpu-a[001-003],gpu-b007",
            "node_count": {"set": True, "infinite": False, "number": 4},
            "partition": "h100",
            "priority": {"set": True, "infinite": False, "number": 1},
            "start_time": {"set": True, "infinite": False, "number": 1700000000},
            "end_time": {"set": False, "infinite": False, "number": 0},
            "time_limit": {"set": True, "infinite": True, "number": 0},
            "user_name": "alice",
            "a_field_from_the_future": {"nested": [1, 2, 3]},
        }
    ],
    "warnings": [{"description": "partial response", "source": "slurmctld"}],
    "errors": [],
}


def test_squeue_json_newer_number_objects_and_state_list() -> None:
    result = parse_squeue_json(json.dumps(NEWER, indent=2))
    assert result.problems == ()
    assert (result.plugin, result.slurm_release) == ("data_parser/v0.0.40", "23.11.1")
    assert result.errors == ("partial response",)
    (job,) = result.jobs
    assert (job.job_state, job.state_flags) == ("RUNNING", ("COMPLETING",))
    assert job.nodes == ("gpu-a001", "gpu-a002", "gpu-a003", "gpu-b007")
    assert (job.node_count, job.start_time_s, job.end_time_s) == (4, 1700000000, None)
    assert (job.time_limit_min, job.time_limit_infinite) == (None, True)
    assert job.account == "tenant-a"


def test_squeue_json_hostile() -> None:
    text = (FIXTURES / "rivos-squeue-json-slurm21.08.5-openapi-v0.0.37.txt").read_text()
    truncated = parse_squeue_json(text[: len(text) // 2])
    assert truncated.jobs == () and truncated.problems[0].reason.startswith("not JSON")
    assert truncated.problems[0].line > 0
    assert parse_squeue_json('{"nodes": []}').problems[0].reason.startswith("JSON without")
    odd = parse_squeue_json('{"jobs": [7, {"job_id": "x", "nodes": "n[1-"}]}')
    assert len(odd.jobs) == 1 and odd.jobs[0].job_id is None and odd.jobs[0].nodes == ()
    assert {p.reason.split(":")[0] for p in odd.problems} == {
        "jobs[0] is not an object",
        "bad hostlist",
    }


def test_squeue_custom_format_pending_reasons() -> None:
    text = (FIXTURES / "aau-biocloud-squeue-o-custom-format-pending-reasons.txt").read_text()
    result = parse_squeue(text)
    assert result.problems == () and result.unknown_lines == 0
    assert result.columns[-1] == "NODELIST(REASON)"
    assert [j.job_id for j in result.jobs] == ["9", "10", "11", "8"]
    pending = result.jobs[1]
    assert (pending.user, pending.state, pending.time_left, pending.cpus) == (
        "ksa@bio.",
        "PD",
        "1:00:00",
        4,
    )
    assert pending.reason == (
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
    )
    assert pending.nodes == () and pending.nodelist is None
    running = result.jobs[3]
    assert (running.state, running.time_used, running.nodes, running.priority) == (
        "R",
        "20:35",
        ("bio-oscloud04",),
        4294901752,
    )
    assert dict(running.fields)["MIN_MEMORY"] == "0"


def test_squeue_default_format_and_headerless() -> None:
    text = (
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
        "              1234      h100 llm-pret    alice  R    2:03:04      4 gpu-[001-004]\n"
        "            1235_7      h100    array      bob PD       0:00      1 (Priority)\n"
    )
    result = parse_squeue(text)
    assert result.problems == ()
    assert result.jobs[0].nodes == ("gpu-001", "gpu-002", "gpu-003", "gpu-004")
    assert (result.jobs[0].node_count, result.jobs[0].partition) == (4, "h100")
    assert (result.jobs[1].job_id, result.jobs[1].reason) == ("1235_7", "Priority")
    rows = "\n".join(text.splitlines()[1:])
    headerless = parse_squeue(rows)
    assert headerless.jobs == () and headerless.unknown_lines == 2
    given = parse_squeue(rows, columns=result.columns)
    assert [j.job_id for j in given.jobs] == ["1234", "1235_7"]


def test_scontrol_interactive_job() -> None:
    result = parse_scontrol_job(
        (FIXTURES / "aau-biocloud-scontrol-show-job-interactive.txt").read_text()
    )
    assert result.problems == () and result.unknown_lines == 0
    (job,) = result.jobs
    assert (job.job_id, job.name, job.user, job.user_id) == (
        "24",
        "interactive",
        "ksa@bio.aau.dk",
        101632,
    )
    assert (job.account, job.partition, job.job_state, job.time_limit) == (
        "compute-account",
        "biocloud-cpu",
        "RUNNING",
        "14-00:00:00",
    )
    assert job.nodes == ("bio-ospikachu05",) and job.num_cpus == 1
    fields = dict(job.fields)
    assert fields["AllocNode:Sid"] == "bio-ospikachu02:340145"
    assert fields["ReqTRES"] == "cpu=1,mem=10G,node=1,billing=1"
    assert fields["Power"] == "" and fields["AccrueTime"] == "Unknown"


def test_scontrol_details_three_nodes() -> None:
    result = parse_scontrol_job(
        (FIXTURES / "vt-tinkercliffs-scontrol-show-job-details-3nodes.txt").read_text()
    )
    assert result.problems == ()
    (job,) = result.jobs
    assert job.nodelist == "tc-intel[002-004]"
    assert job.nodes == ("tc-intel002", "tc-intel003", "tc-intel004") and job.num_nodes == 3
    assert [(d.nodes, d.cpu_ids, d.mem_mib) for d in job.node_details] == [
        (("tc-intel002",), "32", 1944),
        (("tc-intel003",), "12", 1944),
        (("tc-intel004",), "32", 1944),
    ]
    assert dict(job.fields)["TresPerTask"] == "cpu=1"
    assert job.start_time == "2025-10-08T16:04:55"


def test_scontrol_many_jobs_errors_and_spaces_in_values() -> None:
    text = (
        "JobId=1 JobName=my job with spaces\n   UserId=a(1) Account=t1\n   NodeList=n[1-2]\n\n"
        "JobId=2 JobName=x\n   NodeList=n[3-\n"
        "slurm_load_jobs error: Invalid job id specified\n"
        "garbage line without pairs\n"
    )
    result = parse_scontrol_job(text)
    assert [j.name for j in result.jobs] == ["my job with spaces", "x"]
    assert result.jobs[0].nodes == ("n1", "n2") and result.jobs[1].nodes == ()
    assert result.errors == ("slurm_load_jobs error: Invalid job id specified",)
    assert result.unknown_lines == 1
    assert any(p.reason.startswith("bad hostlist") for p in result.problems)
