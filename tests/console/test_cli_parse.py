"""`fleet parse`: kinds listed, explicit and detected kinds, stdin, JSON, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from fleet.collectors.parsers.registry import KINDS
from fleet.console.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
NCCL = FIXTURES / "nccl" / "autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt"
TOPO = FIXTURES / "nvidia-smi" / "aiconfigurator-gb200-nvl72-topo-m-ansi-sgr-6nic.txt"


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["parse", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_list() -> None:
    code, out, _ = _run("--list")
    assert code == 0
    kinds = [line.split()[0] for line in out.splitlines()]
    assert len(kinds) == len(KINDS) and "perftest" in kinds and "sonic-pfc" in kinds and "ep-bench" in kinds
    code, out, _ = _run("--list", "--json")
    assert code == 0 and {
        "kind": "nccl",
        "command": "all_reduce_perf and the other nccl-tests",
    } in json.loads(out)


def test_kind_and_file_as_json() -> None:
    code, out, err = _run("nccl", str(NCCL), "--json")
    assert code == 0 and err == ""
    payload = json.loads(out)
    assert (payload["kind"], payload["detected"]) == ("nccl", False)
    assert payload["result"]["avg_busbw_gbytes_s"] == 2.05774
    assert len(payload["result"]["rows"]) == 28
    assert payload["result"]["rows"][-1]["ip_time_usec"] == 268461.0


def test_detected_from_stdin() -> None:
    code, out, _ = _run("-", "--json", stdin=NCCL.read_text())
    assert code == 0
    assert json.loads(out)["kind"] == "nccl" and json.loads(out)["detected"] is True


def test_readable_summary_escapes_control_characters() -> None:
    code, out, _ = _run(str(TOPO))
    assert code == 0
    assert out.startswith("kind: nvidia-smi-topo (detected)\n")
    assert "devices: 10" in out and "problems: 0" in out
    assert "\x1b" not in out
    bad = "\tGPU0\tGPU1\n\x1b[31mGPU0\t X \tNV4\nGPU1\tNV4\t X \n\x1b]0;title\x07junk\n"
    code, out, _ = _run("nvidia-smi-topo", "-", stdin=bad)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\\x07" in out


def test_errors_are_one_line_and_non_zero(tmp_path: Path) -> None:
    code, out, err = _run("no-such-kind", str(NCCL))
    assert code == 2 and out == ""
    assert err == "fleet parse: unknown kind 'no-such-kind' (fleet parse --list shows the kinds)\n"
    code, _, err = _run("nccl", str(tmp_path / "missing.txt"))
    assert code == 2 and err.count("\n") == 1 and "cannot read" in err
    unknown = tmp_path / "notes.txt"
    unknown.write_text("just some words\n")
    code, _, err = _run(str(unknown))
    assert (
        code == 2
        and err.startswith("fleet parse: cannot tell what tool printed")
        and err.count("\n") == 1
    )
    code, _, err = _run()
    assert code == 2 and err == "fleet parse: expected [KIND] FILE (see fleet parse --help)\n"
    code, _, err = _run("a", "b", "c")
    assert code == 2


def test_binary_file_is_read_not_crashed_on(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    code, out, _ = _run("sonic-queue", str(blob), "--json")
    assert code == 0
    result = json.loads(out)["result"]
    assert result["rows"] == [] and result["unknown_lines"] > 0


def test_real_subprocess() -> None:
    fleet = Path(sys.executable).with_name("fleet")  # the installed entry point
    assert fleet.exists()
    completed = subprocess.run(
        [str(fleet), "parse", "perftest", "-", "--json"],
        input=(
            FIXTURES / "perftest" / "k8s-pod-ib_write_bw-server-side-unit-mismatch.txt"
        ).read_bytes(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)["result"]
    assert (result["role"], result["bw_unit"], result["bw_unit_inferred"]) == (
        "server",
        "MB/sec",
        "Gb/sec",
    )
    assert result["bw_rows"][0]["bw_avg_gbps"] == 196.07
