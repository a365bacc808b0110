"""nvidia-smi renderer against the real captures' layout."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from builders_gpu import fixture, make_gpu, make_node, node_ctx

from fleet.simulator.state import QpView
from fleet.simulator.tools.nvidia_smi import nvidia_smi

FIELDS = (
    "timestamp,name,pci.bus_id,driver_version,pstate,pcie.link.gen.max,pcie.link.gen.current,"
    "temperature.gpu,utilization.gpu,utilization.memory,memory.total,memory.free,memory.used"
)


def run(*args: str, node: object = None) -> tuple[str, str, int]:
    out = nvidia_smi(node_ctx(node or make_node()), ["nvidia-smi", *args])  # type: ignore[arg-type]
    return out.stdout, out.stderr, out.exit_status


def test_query_gpu_header_matches_the_real_capture_field_for_field() -> None:
    real = fixture("nvidia-smi", "virtualclient-query-gpu-csv-4xT4-nounits.txt").splitlines()
    out, _, rc = run(f"--query-gpu={FIELDS}", "--format=csv,nounits")
    lines = out.splitlines()
    assert rc == 0
    assert lines[0] == real[0]
    assert len(lines) == 1 + 8
    real_cells, our_cells = real[1].split(", "), lines[1].split(", ")
    assert len(our_cells) == len(real_cells)
    # same shapes: timestamp, bus id, driver version, P-state, integers
    assert re.fullmatch(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}", our_cells[0])
    assert re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:00\.0", our_cells[2])
    assert re.fullmatch(r"\d+\.\d+\.\d+", our_cells[3])
    assert re.fullmatch(r"P\d", our_cells[4])
    assert all(c.isdigit() for c in our_cells[5:])
    assert our_cells[0] == "2026/05/28 20:26:40.250"


def test_units_in_every_value_without_nounits_and_none_with_noheader() -> None:
    out, _, _ = run(
        "--query-gpu=index,utilization.gpu,memory.used,power.draw,clocks.sm,temperature.gpu",
        "--format=csv,noheader",
    )
    assert out.splitlines()[0] == "0, 97 %, 70123 MiB, 612.35 W, 1980 MHz, 61"
    out, _, _ = run("--query-gpu=utilization.gpu,power.draw", "--format=csv")
    assert out.splitlines()[0] == "utilization.gpu [%], power.draw [W]"


def test_error_and_reason_fields_and_id_selection() -> None:
    node = make_node(
        gpus=(make_gpu(0), make_gpu(1, throttle_reasons=0x4, ecc_volatile_uncorrected=3))
    )
    out, _, _ = run(
        "--query-gpu=index,clocks_event_reasons.active,clocks_throttle_reasons.active,"
        "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total",
        "--format=csv,noheader,nounits",
        "-i",
        "1",
        node=node,
    )
    assert out == "1, 0x0000000000000004, 0x0000000000000004, 3, 2\n"


def test_unknown_field_is_the_real_error_and_exit_2() -> None:
    out, _, rc = run("--query-gpu=index,bogus.field", "--format=csv")
    assert (out, rc) == ('Field "bogus.field" is not a valid field to query.\n\n', 2)


@pytest.mark.parametrize(
    "args",
    [("--query-gpu=index",), ("--query-gpu=index", "--format=xml"), ("--bogus",), ("topo", "-x")],
)
def test_bad_options_exit_2(args: tuple[str, ...]) -> None:
    _, _, rc = run(*args)
    assert rc == 2


def test_gpu_id_out_of_range() -> None:
    out, _, rc = run("--query-gpu=index", "--format=csv", "-i", "9")
    assert (out, rc) == ("No devices were found\n", 6)


def test_no_gpus_means_no_driver() -> None:
    out, _, rc = run("--query-gpu=index", "--format=csv", node=make_node(n_gpus=0))
    assert rc == 9 and "couldn't communicate with the NVIDIA driver" in out


def _cells(line: str) -> list[str]:
    return line.split("\t")


def test_topo_matches_the_exact_bytes_capture_shape() -> None:
    real = fixture("nvidia-smi", "aiconfigurator-gb200-nvl72-topo-m-ansi-sgr-6nic.txt")
    out, _, rc = run("topo", "-m", node=make_node(n_gpus=4, n_nics=6))
    assert rc == 0
    real_lines, our_lines = real.splitlines(), out.splitlines()
    assert len(our_lines) == len(real_lines)
    assert our_lines[0] == real_lines[0]  # header, ANSI underline included
    for ours, theirs in zip(our_lines[1:], real_lines[1:], strict=True):
        if theirs.startswith(("GPU", "NIC")) and "\t" in theirs:
            assert len(_cells(ours)) == len(_cells(theirs))
            assert _cells(ours)[0] == _cells(theirs)[0]
            assert _cells(ours).index(" X ") == _cells(theirs).index(" X ")
            if theirs.startswith("NIC"):
                assert _cells(ours)[-4:] == ["", "", "", ""]
            else:
                assert _cells(ours)[-2:] == ["", "N/A"]
        else:
            assert ours == theirs  # legend, NIC legend, blank lines
    assert out.endswith("  NIC5: mlx5_5\n\n")


def test_topo_eight_gpus_eight_nics_like_an_hgx_node() -> None:
    out, _, _ = run("topo", "-m")
    lines = out.splitlines()
    b200 = fixture("nvidia-smi", "nccl-tests-issue333-b200-topo-m-16nic-mangled.txt").splitlines()
    gpu0 = _cells(lines[1])
    assert gpu0[:9] == ["GPU0", " X ", *["NV18"] * 7]
    assert gpu0[9:17] == ["PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]
    assert gpu0[17:] == ["0-55,112-167", "0", "", "N/A"]
    assert _cells(b200[1])[-4:] == gpu0[-4:]  # same affinity cells as the B200 capture
    assert _cells(lines[5])[17:] == ["56-111,168-223", "1", "", "N/A"]
    assert "NIC Legend:" in lines and "  NIC7: mlx5_7" in lines


def test_nvlink_errors_per_gpu_per_link() -> None:
    node = make_node(gpus=(make_gpu(0), make_gpu(1)))
    out, _, rc = run("nvlink", "-e", node=node)
    lines = out.splitlines()
    assert rc == 0
    assert (
        lines[0] == "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-1111-2222-3333-444455556666)"
    )
    assert lines[1:5] == [
        "\t Link 0: Replay Errors: 0",
        "\t Link 0: Recovery Errors: 0",
        "\t Link 0: CRC Errors: 0",
        "",
    ]
    assert lines[5:8] == [
        "\t Link 1: Replay Errors: 2",
        "\t Link 1: Recovery Errors: 0",
        "\t Link 1: CRC Errors: 1",
    ]
    assert len(lines) == 2 * (1 + 18 * 3 + 17)
    # the indent is the one `nvidia-smi nvlink -s` prints (tab expanded to 9 columns there)
    status = fixture("nvidia-smi", "hpe-dl380a-h100pcie-nvlink-s-bridge-inactive.txt").splitlines()
    assert status[1].index("Link") == lines[1].expandtabs().index("Link")


# An idle HGX H100 under driver 535.161.08, as a Nebius ray-cluster README published it
# (GPU 0 block of an 8-GPU `nvidia-smi`).
H100_535_SUMMARY = """\
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA H100 80GB HBM3          On  | 00000000:8D:00.0 Off |                    0 |
| N/A   32C    P0              69W / 700W |      0MiB / 81559MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
~
+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|  No running processes found                                                           |
+---------------------------------------------------------------------------------------+
""".replace("~\n", " " * 89 + "\n")  # that line is 89 blanks in the capture


def test_summary_table_matches_an_h100_535_capture() -> None:
    gpu = make_gpu(
        0,
        pci_bus_id="00000000:8D:00.0",
        temp_c=32,
        power_w=69.2,
        util_pct=0,
        mem_used_mib=0,
        ecc_volatile_uncorrected=0,
    )
    out, _, rc = run(node=make_node(gpus=(gpu,)))
    assert rc == 0
    date, _, table = out.partition("\n")
    assert date == "Thu May 28 20:26:40 2026       "
    assert table == H100_535_SUMMARY


def test_summary_lists_training_processes_by_their_qp_owner() -> None:
    node = make_node(n_gpus=2)
    nic = replace(
        node.nics[0],
        qps=(QpView(lqpn=0x123, rqpn=0x456, type="RC", state="RTS", pid=280080, comm="python3"),),
    )
    out, _, _ = run(node=replace(node, nics=(nic, *node.nics[1:])))
    rows = [ln for ln in out.splitlines() if "python3" in ln]
    assert rows == [
        "|    0   N/A  N/A    280080      C   python3                                   70123MiB |",
        "|    1   N/A  N/A    280080      C   python3                                   70123MiB |",
    ]


def test_list_gpus() -> None:
    out, _, _ = run("-L", node=make_node(n_gpus=1))
    assert out == "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-1111-2222-3333-444455556666)\n"
