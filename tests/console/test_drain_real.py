"""`fleet drain` and `fleet resume` against a real slurmctld (Slurm 22.05 from Debian's packages).

The head is this host behind the system's sshd; Slurm is the test's own (``real_slurm``). What the
commands do is read back from Slurm itself (``scontrol show node``) and from the audit.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers.real_slurm import RealSlurm
from helpers.real_sshd import RealSshd

from fleet.console.cli import main

REASON = "link flapping on mlx5_1"


def _fleet(*args: str, input_text: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=input_text, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _audit(db: Path) -> dict[str, object]:
    code, out, err = _fleet("audit", "--db", str(db), "--json")
    assert code == 0, err
    document = json.loads(out)
    assert isinstance(document, dict)
    return document


def test_drain_then_resume_audited(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path) -> None:
    slurm, sshd = slurm_head
    slurm.submit("--account=acme", "--job-name=train-llm", "-c", "1")
    inventory, db = str(sshd.inventory(tmp_path, head=True)), tmp_path / "fleet.db"
    where = ("--inventory", inventory, "--db", str(db))

    code, out, err = _fleet("drain", slurm.node, "--reason", REASON, *where, "--yes", "--json")
    assert code == 0, err
    assert f"$ scontrol update NodeName={slurm.node} State=DRAIN 'Reason={REASON}'" in err
    outcome = json.loads(out)
    assert outcome["done"] and outcome["after"]["reason"] == REASON and "DRAIN" in outcome["after"]["state"]
    assert "DRAIN" in slurm.node_state()
    assert slurm.run("sinfo", "-R", "-h", "-o", "%E").stdout.strip() == REASON

    code, out, err = _fleet("resume", slurm.node, *where, "--yes")
    assert code == 0, err
    assert "DRAIN" not in slurm.node_state()
    assert out.strip().startswith(f"{slurm.node}: ") and "DRAIN ->" in out

    document = _audit(db)
    rows = document["actions"]
    assert isinstance(rows, list)
    assert [(r["target"], r["action"], r["commands"]) for r in rows] == [
        (slurm.node, "slurm.drain", [f"scontrol update NodeName={slurm.node} State=DRAIN 'Reason={REASON}'"]),
        (slurm.node, "slurm.resume", [f"scontrol update NodeName={slurm.node} State=RESUME"]),
    ]
    assert "DRAIN" not in rows[0]["before"]["state"] and "DRAIN" in rows[0]["after"]["state"]
    assert _fleet("audit", "verify", "--db", str(db))[0] == 0


def test_not_confirmed_changes_nothing(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path) -> None:
    slurm, sshd = slurm_head
    where = ("--inventory", str(sshd.inventory(tmp_path, head=True)), "--db", str(tmp_path / "fleet.db"))
    code, _, err = _fleet("drain", slurm.node, "--reason", REASON, *where, input_text="n\n")
    assert code == 1 and f"{slurm.node} not drained: not confirmed" in err
    assert "DRAIN" not in slurm.node_state()


def test_read_only_refuses_before_connecting(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path) -> None:
    slurm, sshd = slurm_head
    where = ("--inventory", str(sshd.inventory(tmp_path, head=True)), "--db", str(tmp_path / "fleet.db"))
    logins = sshd.log().count("Accepted publickey")
    code, _, err = _fleet("drain", slurm.node, "--reason", REASON, *where, "--yes", "--read-only")
    assert code == 2 and "refused: read-only mode" in err and f"drains {slurm.node} in Slurm" in err
    assert "DRAIN" not in slurm.node_state() and sshd.log().count("Accepted publickey") == logins


def test_what_slurm_refuses_is_said_and_audited(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path) -> None:
    slurm, sshd = slurm_head
    db = tmp_path / "fleet.db"
    where = ("--inventory", str(sshd.inventory(tmp_path, head=True)), "--db", str(db))
    code, out, err = _fleet("resume", slurm.node, *where, "--yes")  # it is not drained: Slurm refuses
    assert code == 1, err
    assert out.strip() == f"{slurm.node}: not resumed: exit status 1: slurm_update error: Invalid node state specified"
    code, out, _ = _fleet("drain", "node999", "--reason", REASON, *where, "--yes")
    assert code == 1 and "Invalid node name specified" in out
    rows = _audit(db)["actions"]
    assert isinstance(rows, list) and [r["action"] for r in rows] == ["slurm.resume", "slurm.drain"]


def test_no_reason_or_no_head_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _fleet("drain", "gpu017", "--reason", "  ", "--yes")
    assert code == 2 and "a drain needs a reason" in err
    inventory = tmp_path / "inventory.toml"
    inventory.write_text('[[nodes]]\nnames = "gpu017"\n', encoding="utf-8")
    code, _, err = _fleet("drain", "gpu017", "--reason", REASON, "--inventory", str(inventory), "--yes")
    assert code == 2 and "the inventory names no Slurm head" in err
