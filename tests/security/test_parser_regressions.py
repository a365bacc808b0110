"""One test per hostile input that broke a parser: each keeps its case fixed.

Every case made a parser raise something other than its ParseError, return a value
its field cannot hold, or run for minutes (cases measured on the parsers before
they were hardened: 16 s for nvidia-smi's CSV header line, over 120 s for a 10 MB
iblinkinfo line). The slow cases carry a generous pytest timeout so that a
regression fails instead of hanging; their figures are benchmarks/parsers.py's.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fleet.collectors.parsers.base import ParseError, ParserBug
from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats
from fleet.collectors.parsers.iblinkinfo import parse_iblinkinfo
from fleet.collectors.parsers.ibstat import parse_ibstat, parse_ibstatus
from fleet.collectors.parsers.ibv_devinfo import parse_ibv_devinfo
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.parsers.nccl import parse_nccl
from fleet.collectors.parsers.nvidia_smi import parse_nvidia_smi_query
from fleet.collectors.parsers.nvidia_smi_nvlink import parse_nvidia_smi_nvlink
from fleet.collectors.parsers.perfquery import parse_perfquery
from fleet.collectors.parsers.rdma_qp import parse_rdma_qp
from fleet.collectors.parsers.registry import KINDS, to_jsonable
from fleet.collectors.parsers.slurm import parse_squeue_json
from fleet.collectors.parsers.switch_nvue import parse_nvue_counters
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.console.cli import main

DIGITS = "9" * 5000  # past CPython's 4,300-digit limit for int(str)


def _reasons(result: object) -> str:
    return " | ".join(p.reason for p in getattr(result, "problems", ()))


# ---------------------------------------------------------------- deep JSON


def test_deep_lldp_json_is_refused_with_its_one_error() -> None:
    """100,000 nested arrays from lldpctl -f json raised RecursionError through the collector."""
    with pytest.raises(ParseError) as refused:
        parse_lldp('{"lldp": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert not isinstance(refused.value, ParserBug)
    assert "nested deeper" in refused.value.reason


@pytest.mark.parametrize("kind", ["lldp", "rdma-qp", "rdma-statistic", "squeue-json", "nvue-counters"])
@pytest.mark.parametrize("depth", [65, 1_500, 100_000])
def test_deep_json_of_every_json_kind(kind: str, depth: int) -> None:
    text = '{"a": ' * depth + "1" + "}" * depth
    with pytest.raises(ParseError) as refused:
        KINDS[kind].load()(text)
    assert not isinstance(refused.value, ParserBug)


# ---------------------------------------------------------------- a one-column NVUE table


def test_nvue_one_column_table_is_not_an_index_error() -> None:
    text = "Detailed Counters\n=================\nCounter\n-------\ncarrier-transitions\n"
    result = parse_nvue_counters(text)
    assert result.counters == () and result.unknown_lines >= 1
    assert "fewer than two columns" in _reasons(result)


# ---------------------------------------------------------------- Unicode and huge numbers


def test_rdma_qp_unicode_digits_are_not_numbers() -> None:
    """'²' passes str.isdigit() and int() refuses it; '٣' int() reads as 3. Neither is a number."""
    result = parse_rdma_qp("link mlx5_0/1 lqpn \u00b2 type RC state RTS pid \u0663 comm x\n")
    (qp,) = result.qps
    assert (qp.lqpn, qp.pid) == (None, None)
    assert "not an integer" in _reasons(result)


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_ibstatus, f"Infiniband device 'mlx5_0' port 1 status:\n\tstate: {DIGITS}: ACTIVE\n"),
        (parse_sysfs, f"/sys/class/infiniband/mlx5_0/ports/1/state:{DIGITS}: ACTIVE\n"),
        (parse_ibv_devinfo, f"hca_id:\tmlx5_0\n\tport:\t1\n\t\tstate:\t\tPORT_ACTIVE ({DIGITS})\n"),
        (parse_ethtool_module, f"Identifier : 0x11 (QSFP28)\nLaser tx bias current (Channel {DIGITS}) : 1.0 mA\n"),
        (parse_iblinkinfo, f'{DIGITS}  1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  2 1[  ] "peer" ( )\n'),
        (parse_perfquery, f"# Port counters: Lid {DIGITS} port 1 (CapMask: 0x5A00)\nSymbolErrorCounter:..........0\n"),
        (parse_nccl, f"#  Rank {DIGITS} Group  0 Pid  1 on host device  0 [0x00] NVIDIA H100\n"),
        (parse_nvidia_smi_nvlink, f"GPU {DIGITS}: NVIDIA H100 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n"),
    ],
    ids=["ibstatus", "sysfs", "ibv_devinfo", "ethtool-module", "iblinkinfo", "perfquery", "nccl", "nvlink"],
)
def test_five_thousand_digit_numbers(parse: object, text: str) -> None:
    result = parse(text)  # type: ignore[operator]
    repr(result)  # every int in it prints (str() of a 5,000-digit int raises)
    json.dumps(to_jsonable(result))


def test_a_4000_digit_capability_mask_is_refused_not_printed() -> None:
    text = "CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tCapability mask: 0x" + "f" * 4000 + "\n"
    (port,) = parse_ibstat(text).devices[0].ports
    assert port.capability_mask is None
    code, out, err = _cli(["parse", "ibstat", "-"], text)
    assert code == 0 and "Traceback" not in out + err


# ---------------------------------------------------------------- linear time


@pytest.mark.timeout(60)
def test_nvidia_smi_csv_header_of_spaces() -> None:
    """':' + spaces + ':' took 16 s with 2,000 spaces in _header_name (roughly cubic)."""
    line = ":" + " " * 20_000 + ":"
    result = parse_nvidia_smi_query(f"{line}\n{line}\n")
    assert result.gpus == ()


@pytest.mark.timeout(60)
def test_iblinkinfo_ten_megabyte_line() -> None:
    """A 10 MB line took iblinkinfo's link pattern over 120 s."""
    line = "1 1[ ] ==(" + " " * 10_000_000 + "x"
    result = parse_iblinkinfo(line + "\n")
    assert result.ports == () and result.unknown_lines == 1


# ---------------------------------------------------------------- values no field can hold


def test_negative_and_overwide_counters_are_problems_not_facts() -> None:
    stats = parse_ethtool_stats(f"NIC statistics:\n     rx_bytes: -5\n     tx_bytes: {2**64}\n     rx_packets: 7\n")
    assert stats.counters == {"rx_packets": 7}
    assert "outside" in _reasons(stats)
    sysfs = parse_sysfs(
        "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error:70000\n"
        f"/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data:{2**64}\n"
        "/sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer:-1\n"
        "/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed:3\n"
    )
    (port,) = sysfs.ports
    assert port.counters == {"link_downed": 3} and port.hw_counters == {}
    perfquery = parse_perfquery(
        "# Port counters: Lid 1 port 1 (CapMask: 0x5A00)\nSymbolErrorCounter:..........65536\nLinkDownedCounter:...........2\n"
    )
    assert perfquery.blocks[0].counters == {"LinkDownedCounter": 2}


@pytest.mark.parametrize("rate", ["nan", "inf", "-100", "1e309", "99999"])
def test_impossible_link_rates_are_problems(rate: str) -> None:
    result = parse_ibstat(f"CA 'mlx5_0'\n\tPort 1:\n\t\tRate: {rate}\n")
    assert result.devices[0].ports[0].rate_gbps is None
    assert result.problems
    status = parse_ibstatus(f"Infiniband device 'mlx5_0' port 1 status:\n\trate:\t{rate} Gb/sec (4X NDR)\n")
    assert status.ports[0].rate_gbps is None and status.problems


def test_impossible_gpu_readings_are_problems() -> None:
    text = (
        "index, temperature.gpu, utilization.gpu [%], power.draw [W]\n"
        "0, -40, 250, nan\n"
        "1, 35, 50, 300.5\n"
    )
    result = parse_nvidia_smi_query(text)
    first, second = result.gpus
    assert (first.temperature_gpu_c, first.utilization_gpu_pct, first.power_w) == (None, None, None)
    assert (second.temperature_gpu_c, second.utilization_gpu_pct, second.power_w) == (35.0, 50.0, 300.5)
    assert len(result.problems) == 3


def test_impossible_optics_are_problems() -> None:
    text = (
        "Identifier : 0x11 (QSFP28)\n"
        "Module temperature : 300.00 degrees C / 572.00 degrees F\n"
        "Module voltage : -3.3 V\n"
        "Rcvr signal avg optical power(Channel 1) : 1e0 mW / Infinity dBm\n"
        "Rcvr signal avg optical power(Channel 2) : 0.0000 mW / -inf dBm\n"
    )
    module = parse_ethtool_module(text)
    assert (module.temp_c, module.voltage_v) == (None, None)
    dark = next(lane for lane in module.lanes if lane.lane == 2)
    assert dark.rx_power_dbm == -math.inf  # a dark lane is a reading ethtool prints
    assert all(lane.rx_power_dbm != math.inf for lane in module.lanes)


def test_squeue_json_numbers_past_their_width() -> None:
    doc = {"jobs": [{"job_id": 2**70, "cpus": -4, "start_time": {"set": True, "number": -1}, "nodes": "n[1-2]"}]}
    (job,) = parse_squeue_json(json.dumps(doc)).jobs
    assert (job.job_id, job.cpus, job.start_time_s, job.nodes) == (None, None, None, ("n1", "n2"))


def test_a_hostlist_naming_billions_of_hosts_is_bounded() -> None:
    jobs = [{"job_id": i, "nodes": "n[0-99999]"} for i in range(20)]
    result = parse_squeue_json(json.dumps({"jobs": jobs}))
    assert sum(len(job.nodes) for job in result.jobs) <= 500_000
    assert "not expanded" in _reasons(result)


# ---------------------------------------------------------------- fleet parse on hostile files


def _cli(args: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, args, input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_fleet_parse_refuses_deep_json_in_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "lldp.json"
    deep.write_text('{"lldp": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for args in (["parse", "lldp", str(deep)], ["parse", str(deep), "--json"]):
        code, out, err = _cli(args)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith("fleet parse: ") and "nested deeper" in err


def test_fleet_parse_on_files_that_are_not_captures(tmp_path: Path) -> None:
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4096 + b"\xff\xfe\xc3\x28")
    code, out, err = _cli(["parse", "ibstat", str(binary), "--json"])
    assert code == 0 and json.loads(out)["result"]["devices"] == [] and err == ""
    code, out, err = _cli(["parse", str(binary)])
    assert code == 2 and err.count("\n") == 1 and "cannot tell what tool printed" in err
    for path, why in ((tmp_path, "Is a directory"), (tmp_path / "missing", "No such file")):
        code, out, err = _cli(["parse", "ibstat", str(path)])
        assert code == 2 and out == "" and err.count("\n") == 1 and why in err
    code, out, err = _cli(["parse", "no-such-kind", str(binary)])
    assert code == 2 and err.count("\n") == 1


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fleet_parse_prints_every_kind_of_hostile_text(kind: str) -> None:
    hostile = (
        f"{DIGITS}\n\x1b[2J\x1b]8;;http://x/\x07a\x1b]8;;\x07 {'[' * 2000}\n"
        f"0x{'f' * 4000}\n-1 nan inf \u00b2 \u0663\n" + ":" + " " * 3000 + ":\n"
    )
    for args in (["parse", kind, "-"], ["parse", kind, "-", "--json"]):
        code, out, err = _cli(args, hostile)
        assert code in (0, 2) and "Traceback" not in out + err and "\x1b" not in out + err
        assert code == 0 or err.count("\n") == 1


def test_fleet_parse_subprocess_never_prints_a_traceback(tmp_path: Path) -> None:
    fleet = Path(sys.executable).with_name("fleet")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    completed = subprocess.run(
        [str(fleet), "parse", "rdma-qp", str(deep)], capture_output=True, timeout=120, check=False
    )
    assert completed.returncode == 2 and completed.stdout == b""
    assert completed.stderr.count(b"\n") == 1 and b"Traceback" not in completed.stderr
