"""The node agent's test harness: a sysfs tree from real captures, fake tools, the agent as a subprocess.

Tree contents come from tests/fixtures/sysfs (SOURCES.md): mlx5_0 from the
prometheus/procfs ConnectX-4 Lx capture (every file, quirks kept), mlx5_1's
counters from the gpud H100 capture with saturated counters, mlx5_bond_0's
hw_counters from the show_counters notes. Directory layout (device/net/<netdev>)
is the kernel's. ``ethtool`` and ``rdma`` are small fake programs on PATH that
print the real captures in tests/fixtures/ethtool and log their arguments.
GPUs come from tests/collectors/fake_nvml (the real pynvml, driver calls replaced).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvml as real_pynvml
import pytest

from fleet.collectors.agent_reader import agent_source

FIXTURES = Path(__file__).parent.parent / "fixtures"
FAKE_NVML = Path(__file__).parent / "fake_nvml"
RDMA_RES_SHOW = (
    '[{"ifindex":0,"ifname":"mlx5_0","pd":4,"cq":5,"qp":12,"cm_id":0,"mr":2,"ctx":1,"srq":2},'
    '{"ifindex":1,"ifname":"mlx5_bond_0","pd":2,"cq":3,"qp":7,"cm_id":0,"mr":0,"ctx":0,"srq":0}]'
)
"""``rdma -j res show`` in iproute2's layout (res_print_summary: ifindex, ifname, then each resource)."""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build_sysfs(root: Path, extra_netdevs: tuple[str, ...] = ()) -> Path:
    ib = root / "class" / "infiniband"
    # mlx5_0: the procfs ttar archive, Path:/Lines:/<value>/Mode: records
    records = (FIXTURES / "sysfs" / "procfs-ttar-mlx5_0-cx4lx.ttar.txt").read_text().splitlines()
    for index, line in enumerate(records):
        if line.startswith("Path: "):
            count = int(records[index + 1].removeprefix("Lines: "))
            write(root / line.removeprefix("Path: "), "\n".join(records[index + 2:index + 2 + count]) + "\n")
    # mlx5_1: the gpud `=== ./name ===` dump of ports/1/counters
    dump = (FIXTURES / "sysfs" / "gpud-pr943-mlx5_1-counters-saturated.txt").read_text()
    for block in dump.split("=== ./")[1:]:
        name, _, value = block.partition(" ===\n")
        write(ib / "mlx5_1" / "ports" / "1" / "counters" / name, value.strip() + "\n")
    # mlx5_bond_0: `name: value` lines of hw_counters, a RoCE bond with its netdev
    notes = (FIXTURES / "sysfs" / "cn-notes-show_counters-mlx5_bond_0-hw_counters-ecn.txt").read_text()
    for line in notes.splitlines()[1:]:
        name, _, value = line.partition(": ")
        write(ib / "mlx5_bond_0" / "ports" / "1" / "hw_counters" / name, value + "\n")
    port = ib / "mlx5_bond_0" / "ports" / "1"
    write(port / "state", "4: ACTIVE\n")
    write(port / "phys_state", "5: LinkUp\n")
    write(port / "rate", "200 Gb/sec (2X NDR)\n")
    write(port / "link_layer", "Ethernet\n")
    (ib / "mlx5_bond_0" / "device" / "net" / "bond0").mkdir(parents=True)
    for name in extra_netdevs:
        (ib / "mlx5_1" / "device" / "net" / name).mkdir(parents=True)
    # the loaded nvidia kernel module (its version, as the 535.183.01 capture's nvidia-smi -q names it)
    write(root / "module" / "nvidia" / "version", "535.183.01\n")
    return root


def fake_tools(bin_dir: Path, log: Path, with_rdma: bool = True) -> Path:
    bin_dir.mkdir()
    stats = (FIXTURES / "ethtool" / "ethq-mlx5-cx4-ethtool-S-kernel4.15.txt").read_text()
    module = (FIXTURES / "ethtool" / "cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt").read_text()
    # real ethtool indents under a header; the stored capture has neither (SOURCES.md)
    stats_out = "NIC statistics:\n" + "".join(f"     {line}\n" for line in stats.splitlines())
    ethtool = bin_dir / "ethtool"
    ethtool.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"open({str(log)!r}, 'a').write(repr(sys.argv[1:]) + '\\n')\n"
        f"if sys.argv[1:] == ['-S', 'bond0']:\n    sys.stdout.write({stats_out!r})\n"
        f"elif sys.argv[1:] == ['-m', 'bond0']:\n    sys.stdout.write({module!r})\n"
        "else:\n    sys.stderr.write('netlink error: no device matches name\\n'); sys.exit(1)\n"
    )
    ethtool.chmod(0o755)
    if with_rdma:
        rdma = bin_dir / "rdma"
        rdma.write_text(f"#!{sys.executable}\nimport sys\nassert sys.argv[1:] == ['-j', 'res', 'show']\n"
                        f"print({RDMA_RES_SHOW!r})\n")
        rdma.chmod(0o755)
    return bin_dir


def run_agent(tmp_path: Path, *args: str, lines: int = 1, env: dict[str, str] | None = None,
              python_flags: tuple[str, ...] = (), sysfs: Path | None = None) -> list[dict[str, Any]]:
    """Start the agent as ``python3 -u -c <source>``, read ``lines`` lines, close stdin, expect exit 0."""
    if sysfs is None:
        sysfs = build_sysfs(tmp_path / "sys")
    proc = subprocess.Popen(
        [sys.executable, *python_flags, "-u", "-c", agent_source(), "--sysfs", str(sysfs), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env if env is not None else agent_env(tmp_path, "h100"),
    )
    assert proc.stdout is not None and proc.stdin is not None
    out = []
    for _ in range(lines):
        text = proc.stdout.readline()
        if not text:
            proc.kill()
            pytest.fail(f"the agent printed no line: {proc.stderr.read() if proc.stderr else ''}")
        out.append(json.loads(text))
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0, proc.stderr.read() if proc.stderr else ""
    return out


def agent_env(tmp_path: Path, scenario: str, with_rdma: bool = True) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        fake_tools(bin_dir, tmp_path / "tools.log", with_rdma)
    return {"PATH": str(bin_dir), "PYTHONPATH": str(FAKE_NVML), "FLEET_REAL_PYNVML": real_pynvml.__file__,
            "FAKE_NVML_SCENARIO": scenario}
