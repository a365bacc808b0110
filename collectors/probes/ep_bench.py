"""The expert-parallel benchmark (UCCL-EP's or DeepEP's ``test_internode.py``) across nodes, when they have it.

Why: nccl-tests' all-to-all is not what a mixture-of-experts job runs; its
dispatch and combine kernels are, with their own chunking over RDMA and
NVLink. Where the nodes have the benchmark, its best dispatch (FP8 and BF16)
and combine figures are kept beside the all-to-all: RDMA and NVLink
bandwidth (GB/s) and transmit and notify time (usec) as the tool prints them
(``fleet.collectors.parsers.ep_bench``).

How: every node runs PyTorch's launcher, the way both projects document it
(UCCL ``ep/README.md``: ``torchrun --nnodes=2 --nproc_per_node=8 --node_rank=K
--master_addr=... --master_port=... test_internode.py``), the first node as
rank 0 and master; its output holds the tuning lines. First ``command -v
torchrun`` on every node: where it is missing, or where the launcher cannot
open the script, the benchmark is not installed. That is an answer, not a
failure: ``EpOutcome.missing`` says where and why, and nothing is stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import hostlist

from fleet.collectors.commands import Command, command
from fleet.collectors.parsers.ep_bench import EpBench, EpTuning, parse_ep_bench
from fleet.collectors.sshpool import RunResult, SshPool
from fleet.fabric.records import ProbeRecord

DEFAULT_SCRIPT = "/opt/uccl/ep/bench/test_internode.py"
"""Where UCCL's repository puts the benchmark (``ep/bench``) under a checkout in /opt; sites pass their own."""

_MISSING = ("not found", "can't open file", "No such file or directory")
"""What a shell or the launcher prints when the launcher or the script is not there."""


@dataclass(frozen=True, slots=True)
class EpBenchSpec:
    nodes: tuple[str, ...]
    gpus_per_node: int = 8
    script: str = DEFAULT_SCRIPT
    master_port: int = 29511
    num_tokens: int = 4096
    hidden: int = 7168
    num_topk: int = 8
    num_experts: int = 256
    timeout_s: float = 900.0
    run_id: str = ""

    def __post_init__(self) -> None:
        if len(dict.fromkeys(self.nodes)) < 2:
            raise ValueError("the internode expert-parallel benchmark needs at least two nodes")


@dataclass(frozen=True, slots=True)
class EpOutcome:
    """The stored record, or (``record`` None) why the benchmark did not run: ``missing`` in one line."""

    record: ProbeRecord | None
    missing: str = ""


def launch_command(spec: EpBenchSpec, rank: int) -> Command:
    """Node ``rank``'s launcher command (the first node is rank 0 and the master)."""
    nodes = list(dict.fromkeys(spec.nodes))
    return command("torchrun", f"--nnodes={len(nodes)}", f"--nproc_per_node={spec.gpus_per_node}",
                   f"--node_rank={rank}", f"--master_addr={nodes[0]}", f"--master_port={spec.master_port}",
                   spec.script, f"--num-tokens={spec.num_tokens}", f"--hidden={spec.hidden}",
                   f"--num-topk={spec.num_topk}", f"--num-experts={spec.num_experts}")


def _missing(result: RunResult) -> bool:
    text = result.stdout + result.stderr
    return result.exit_status == 127 or (not result.ok and any(marker in text for marker in _MISSING))


def tuning_json(tuning: EpTuning) -> dict[str, Any]:
    return {"op": tuning.op, "dtype": tuning.dtype, "layout": tuning.layout, "sms": tuning.sms,
            "nvl_chunk": tuning.nvl_chunk, "rdma_chunk": tuning.rdma_chunk, "transmit_usec": tuning.transmit_usec,
            "notify_usec": tuning.notify_usec, "rdma_gbytes_s": tuning.rdma_gbytes_s,
            "nvl_gbytes_s": tuning.nvl_gbytes_s}


KERNELS = (("dispatch", "FP8", "dispatch_fp8"), ("dispatch", "BF16", "dispatch_bf16"), ("combine", None, "combine"))
"""(op, dtype, name) of the three best lines, as the result names them."""


def summarize(parsed: EpBench) -> dict[str, Any]:
    """Each kernel's best line, and its RDMA and NVLink bandwidth (GB/s) as flat numbers for the baseline."""
    summary: dict[str, Any] = {"config": dict(parsed.config), "trials": parsed.trials,
                               "tests_passed": parsed.tests_passed, "layout": "", "errors": list(parsed.errors[:5])}
    for op, dtype, name in KERNELS:
        best = next((b for b in parsed.best if b.op == op and (dtype is None or b.dtype == dtype)), None)
        summary[name] = tuning_json(best) if best is not None else None
        summary[f"{name}_rdma_gbytes_s"] = best.rdma_gbytes_s if best is not None else None
        summary[f"{name}_nvl_gbytes_s"] = best.nvl_gbytes_s if best is not None else None
        if best is not None:
            summary["layout"] = best.layout
    return summary


async def run_ep_bench(pool: SshPool, spec: EpBenchSpec, *, clock: Callable[[], float] = time.time) -> EpOutcome:
    """Run the benchmark on every node (see the module doc); never raises for a node's fault."""
    nodes = tuple(dict.fromkeys(spec.nodes))
    checks = await asyncio.gather(*(pool.run(node, command("command", "-v", "torchrun"), 30.0) for node in nodes))
    absent = [c.host for c in checks if c.exit_status is not None and (c.exit_status != 0 or not c.stdout.strip())]
    if absent:
        return EpOutcome(None, f"the expert-parallel benchmark is not installed: no torchrun on "
                               f"{hostlist.collect_hostlist(absent)}")
    ts = clock()
    runs = await asyncio.gather(*(pool.run(node, launch_command(spec, rank), spec.timeout_s)
                                  for rank, node in enumerate(nodes)))
    raw = "".join(f"# {r.host}: {launch_command(spec, k).text}\n{r.stdout}{r.stderr}" for k, r in enumerate(runs))
    missing = [r.host for r in runs if _missing(r)]
    if missing:
        return EpOutcome(None, f"the expert-parallel benchmark is not installed: {spec.script} does not run on "
                               f"{hostlist.collect_hostlist(missing)}")
    params = {"nodes": list(nodes), "gpus_per_node": spec.gpus_per_node, "script": spec.script,
              "num_tokens": spec.num_tokens, "hidden": spec.hidden, "num_topk": spec.num_topk,
              "num_experts": spec.num_experts}
    parsed = parse_ep_bench(runs[0].stdout)
    result = summarize(parsed)

    def record(ok: bool, extra: dict[str, Any]) -> EpOutcome:
        return EpOutcome(ProbeRecord(ts=ts, kind="ep", src=nodes[0], dst=hostlist.collect_hostlist(list(nodes[1:])),
                                     ok=ok, params=params, result={**result, **extra}, raw=raw, run_id=spec.run_id))

    failed = [r for r in runs if not r.ok]
    if failed:
        first = failed[0]
        why = (first.stderr.strip().splitlines() or [first.reason or first.state.value])[-1]
        return record(False, {"error": f"{first.host}: test_internode.py failed: {why}"})
    if not parsed.best:
        return record(False, {"error": f"{nodes[0]}: no [tuning] Best line in the benchmark's output"})
    return record(True, {})


__all__ = ["DEFAULT_SCRIPT", "KERNELS", "EpBenchSpec", "EpOutcome", "launch_command", "run_ep_bench", "summarize",
           "tuning_json"]
