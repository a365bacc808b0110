"""The simulated head drains and resumes nodes as a real Slurm 22.05 does, over real SSH.

Every answer is held to the real capture (tests/fixtures/slurm, debian12-slurm22.05.8-*): the same
words, the same exit statuses, the same ``scontrol show node`` layout as the parser reads it; and
``fleet drain`` / ``fleet resume`` work on ``fleet sim``'s fleet as on a real cluster.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from click.testing import CliRunner
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.commands import command
from fleet.collectors.inventory import load_inventory
from fleet.collectors.parsers.scontrol_node import parse_scontrol_node
from fleet.collectors.parsers.slurm import parse_squeue_json
from fleet.collectors.sshpool import PoolSettings, RunResult, SshPool
from fleet.console.cli import main

ANSWERS = Path(__file__).parents[1] / "fixtures" / "slurm" / "debian12-slurm22.05.8-scontrol-update-and-show-answers.txt"
REAL_SQUEUE = Path(__file__).parents[1] / "fixtures" / "slurm" / "debian12-slurm22.05.8-squeue-json-2-running-1-held.txt"
REAL_NODE = Path(__file__).parents[1] / "fixtures" / "slurm" / "debian12-slurm22.05.8-scontrol-show-node-allocated-drain-reason.txt"


def _real_answers() -> list[tuple[int, str, str]]:
    """The capture, in its order: (exit, stdout, stderr) of drain, drain without a reason, drain of an
    unknown node, resume, resume again, show an unknown node."""
    found = []
    for block in ANSWERS.read_text().split("\n$ "):
        lines = block.removeprefix("$ ").split("\n")
        status = int(lines[1].removeprefix("# exit "))
        stderr_at = lines.index("# stderr")
        found.append((status, "\n".join(lines[3:stderr_at]).strip(), "\n".join(lines[stderr_at + 1:]).strip()))
    return found


def _keys(text: str) -> list[str]:
    """The ``Key=`` names of a ``scontrol show node`` record, in order."""
    return re.findall(r"(?:^|\s)([A-Za-z_]+)=", text)


async def test_drain_show_resume_as_the_real_slurm(tmp_path: Path) -> None:
    real = _real_answers()
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=PoolSettings(ssh_config=()))

        async def head(*words: str) -> RunResult:
            return await pool.run("head01", command(*words), timeout_s=20)

        try:
            drained = await head("scontrol", "update", "NodeName=gpu001", "State=DRAIN", "Reason=link flapping on mlx5_1")
            shown = await head("scontrol", "show", "node", "gpu001")
            no_reason = await head("scontrol", "update", "NodeName=gpu001", "State=DRAIN")
            unknown = await head("scontrol", "update", "NodeName=nope", "State=DRAIN", "Reason=x")
            resumed = await head("scontrol", "update", "NodeName=gpu001", "State=RESUME")
            again = await head("scontrol", "update", "NodeName=gpu001", "State=RESUME")
            after = await head("scontrol", "show", "node", "gpu001")
            missing = await head("scontrol", "show", "node", "nope")
        finally:
            await pool.close()

    simulated = [drained, no_reason, unknown, resumed, again, missing]
    assert [(r.exit_status, r.stdout.strip(), r.stderr.strip()) for r in simulated] == real
    parsed = parse_scontrol_node(shown.stdout)
    assert parsed.problems == () and parsed.unknown_lines == 0
    node = parsed.nodes[0]
    assert (node.name, node.state, node.reason, node.reason_by) == ("gpu001", "ALLOCATED+DRAIN",
                                                                   "link flapping on mlx5_1", "fleet")
    assert _keys(shown.stdout) == _keys(REAL_NODE.read_text()), "the layout of Slurm's own scontrol"
    assert not parse_scontrol_node(after.stdout).nodes[0].drained


async def test_fleet_drain_on_the_simulated_fleet(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        where = ["--inventory", str(inventory_path), "--db", str(db), "--yes", "--json"]
        result = await asyncio.to_thread(CliRunner().invoke, main, ["drain", "gpu003", "--reason", "gpu fell off the bus",
                                                                    *where], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.stdout)
    assert outcome["done"] and outcome["before"]["state"] == "ALLOCATED"
    assert outcome["after"] == {"state": "ALLOCATED+DRAIN", "reason": "gpu fell off the bus"}


async def test_squeue_json_gives_the_collector_what_a_real_slurm_gives(tmp_path: Path) -> None:
    """The simulator prints Slurm 23.11's ``squeue --json`` layout, the real capture is 22.05's: what the
    collector reads of a running job (ids, user, account as tenant, nodes, state) comes out the same."""
    real = parse_squeue_json(REAL_SQUEUE.read_text())
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=PoolSettings(ssh_config=()))
        try:
            result = await pool.run("head01", command("squeue", "--json"), timeout_s=20)
        finally:
            await pool.close()
    simulated = parse_squeue_json(result.stdout)
    assert real.problems == () and simulated.problems == ()
    real_job = next(j for j in real.jobs if j.job_state == "RUNNING")
    sim_job = next(j for j in simulated.jobs if j.job_state == "RUNNING")
    for field in ("job_id", "name", "user_name", "account", "partition", "job_state", "nodes", "node_count",
                  "start_time_s", "batch_host"):
        real_value, sim_value = getattr(real_job, field), getattr(sim_job, field)
        assert type(real_value) is type(sim_value) and bool(real_value) == bool(sim_value), field
    assert sim_job.batch_host == sim_job.nodes[0] and real_job.batch_host == real_job.nodes[0]
