"""squeue / scontrol renderers against the real Slurm captures."""

from __future__ import annotations

import json
import re

import pytest
from builders_gpu import NOW, fixture, head_ctx, make_job

from fleet.simulator.state import JobView
from fleet.simulator.tools.slurm import scontrol, squeue

AAU_FORMAT = "%.18i %Q  %.8j %.8u %.2t %.10M %.10L %.6C %m %R"


def run_squeue(*args: str, jobs: tuple[JobView, ...] = ()) -> tuple[str, str, int]:
    out = squeue(head_ctx(*(jobs or (make_job(),))), ["squeue", *args])
    return out.stdout, out.stderr, out.exit_status


def run_scontrol(*args: str, jobs: tuple[JobView, ...] = ()) -> tuple[str, str, int]:
    out = scontrol(head_ctx(*(jobs or (make_job(),))), ["scontrol", *args])
    return out.stdout, out.stderr, out.exit_status


def aau_jobs() -> tuple[JobView, ...]:
    pending = make_job(
        9,
        name="test",
        user="jm12em@bio.aau.dk",
        state="PENDING",
        time_limit_min=14 * 24 * 60,
        start_time=0.0,
    )
    running = make_job(
        8,
        name="test",
        user="jm12em@bio.aau.dk",
        time_limit_min=14 * 24 * 60,
        start_time=NOW - 20 * 60 - 35,
        nodes="bio-oscloud04",
        node_count=1,
    )
    return pending, running


def test_custom_format_matches_the_capture_header_and_columns() -> None:
    real = fixture("slurm", "aau-biocloud-squeue-o-custom-format-pending-reasons.txt").splitlines()
    out, _, rc = run_squeue("-o", AAU_FORMAT, jobs=aau_jobs())
    lines = out.splitlines()
    assert rc == 0
    assert lines[0] == real[0]
    pending, running = lines[1], lines[2]
    # JOBID right-justified in 18, NAME and USER truncated to 8, ST, TIME, TIME_LEFT
    assert pending[:18] == real[1][:18]
    assert pending.split()[2:7] == real[1].split()[2:7]
    assert pending.endswith(" (Resources)")
    assert running[:18] == real[4][:18]
    assert running.split()[2:7] == real[4].split()[2:7]
    assert running.endswith(" bio-oscloud04")


def test_noheader_and_default_table() -> None:
    out, _, _ = run_squeue("-h", "-o", "%i|%a|%u|%T|%D|%N")
    assert out == "1001|acme|alice|RUNNING|8|gpu[001-008]\n"
    out, _, _ = run_squeue()
    assert out.splitlines() == [
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)",
        "              1001       gpu llama-pr    alice  R    3:25:07      8 gpu[001-008]",
    ]


def test_time_formats_and_start_time() -> None:
    job = make_job(start_time=NOW - (2 * 86400 + 3 * 3600 + 4 * 60 + 5), time_limit_min=7 * 24 * 60)
    out, _, _ = run_squeue("-h", "--format=%M %l %L %S", jobs=(job,))
    assert out == "2-03:04:05 7-00:00:00 4-20:55:55 2026-05-26T17:22:35\n"


def test_filters() -> None:
    jobs = (make_job(1), make_job(2, user="bob", account="zeta"), make_job(3, state="PENDING"))
    assert run_squeue("-h", "-o", "%i", "-u", "bob", jobs=jobs)[0] == "2\n"
    assert run_squeue("-h", "-o", "%i", "-j", "1,3", jobs=jobs)[0] == "1\n3\n"
    assert run_squeue("-h", "-o", "%i", "-t", "PD", jobs=jobs)[0] == "3\n"
    assert run_squeue("-h", "-o", "%i", "--account=acme", jobs=jobs)[0] == "1\n3\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--bogus",), "squeue: unrecognized option '--bogus'"),
        (("-o", "%Z"), "squeue: error: Invalid job format specification: Z"),
        (("-j", "abc"), "squeue: error: Invalid job id: abc"),
        (("-o",), "squeue: option requires an argument -- 'o'"),
    ],
)
def test_bad_options(args: tuple[str, ...], message: str) -> None:
    _, err, rc = run_squeue(*args)
    assert rc == 1 and err.startswith(message)


def test_squeue_json_has_the_current_openapi_shape() -> None:
    real = json.loads(fixture("slurm", "rivos-squeue-json-slurm21.08.5-openapi-v0.0.37.txt"))
    out, _, rc = run_squeue("--json")
    doc = json.loads(out)
    assert rc == 0
    assert doc["meta"]["plugin"]["data_parser"] == "data_parser/v0.0.40"
    assert doc["meta"]["slurm"]["release"] == "23.11.4"
    assert doc["errors"] == [] and doc["warnings"] == []
    job = doc["jobs"][0]
    # every key we print is a key the real (older) capture has, or one 23.x added
    newer = {"exit_code", "group_name", "tres_per_node", "job_resources"}
    assert set(job) - set(real["jobs"][0]) <= newer
    assert list(job) == sorted(job)
    assert job["job_id"] == 1001 and job["job_state"] == ["RUNNING"]
    assert job["nodes"] == "gpu[001-008]" and job["account"] == "acme"
    assert job["time_limit"] == {"set": True, "infinite": False, "number": 2880}
    assert job["node_count"]["number"] == 8
    assert job["start_time"]["number"] == int(NOW - 3 * 3600 - 25 * 60 - 7)
    hosts = [n["nodename"] for n in job["job_resources"]["allocated_nodes"]]
    assert hosts == [f"gpu{i:03d}" for i in range(1, 9)]
    assert out.startswith('{\n  "jobs": [\n')


def _keys(line: str) -> list[str]:
    return re.findall(r"(?:^|\s)([A-Za-z_/:]+)=", line)


def test_scontrol_show_job_follows_the_capture_key_by_key() -> None:
    real = fixture("slurm", "aau-biocloud-scontrol-show-job-interactive.txt").splitlines()
    out, _, rc = run_scontrol("show", "job", "1001")
    ours = out.splitlines()
    assert rc == 0 and out.endswith("\n\n")
    assert ours[0] == "JobId=1001 JobName=llama-pretrain"
    ours_keys = [_keys(line) for line in ours]
    position = 0
    for line in real:
        keys = _keys(line)
        while ours_keys[position] != keys:
            position += 1  # ours may add lines (StdErr, TresPerNode), never reorder
        assert ours[position].startswith(line[: len(line) - len(line.lstrip())])
    assert "   NodeList=gpu[001-008]" in ours
    assert "   RunTime=03:25:07 TimeLimit=2-00:00:00 TimeMin=N/A" in ours
    vt = fixture("slurm", "vt-tinkercliffs-scontrol-show-job-details-3nodes.txt").splitlines()
    assert [k for k in _keys(vt[0])] == _keys(ours[0])


def test_scontrol_hostnames_and_hostlist() -> None:
    out, _, _ = run_scontrol("show", "hostnames", "gpu[001-003],leaf01")
    assert out == "gpu001\ngpu002\ngpu003\nleaf01\n"
    out, _, _ = run_scontrol("show", "hostlist", "gpu001,gpu002,gpu003")
    assert out == "gpu[001-003]\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "job", "77"), "slurm_load_jobs error: Invalid job id specified\n"),
        (("show", "hostnames"), "scontrol: error: host list is empty\n"),
        (("show", "hostnames", "gpu[001-"), "scontrol: error: Invalid hostlist: 'gpu[001-'\n"),
        (("update", "JobId=1"), "invalid keyword: update\n"),
    ],
)
def test_scontrol_errors(args: tuple[str, ...], message: str) -> None:
    _, err, rc = run_scontrol(*args)
    assert (err, rc) == (message, 1)
