"""GPUs and queue pairs: gpu_xid, gpu_thermal, qp_errors.

XIDs are the driver's own error reports (docs/domain.md, "GPUs: NVML and XID":
48, 63, 64, 74, 79, 92, 94, 95 mean lost data or a lost GPU); a GPU too hot
throttles its clocks and the whole job steps at its pace. QP trouble (latency
jitter from too few QP resources is a fault operators report often;
docs/domain.md, "What operators report"): too few QP resources or leaked QPs
show as error completions, RNR retries and receive queues running dry.
"""

from __future__ import annotations

from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import Context

QP_ERROR_COUNTERS = ("req_cqe_error", "resp_cqe_error", "rnr_nak_retry_err")


def rules(ctx: Context) -> list[Finding]:
    return _xid(ctx) + _thermal(ctx) + _qp(ctx)


def _gpu_finding(ctx: Context, kind: str, severity: Severity, node: str, gpu: str, evidence: dict[str, object],
                 next_step: str) -> Finding:
    return Finding(kind, severity, node=node, job=ctx.job_of.get(node, ""),
                   evidence={"gpu": gpu, **evidence}, next_step=next_step)


def _xid(ctx: Context) -> list[Finding]:
    found = []
    for (node, gpu, _), reading in sorted(ctx.each("gpu_xid_count").items()):
        last = int(ctx.value(node, "gpu_xid_last", gpu) or 0)
        new = ctx.delta(node, "gpu_xid_count", gpu) or 0.0
        critical = last in ctx.t.critical_xids
        if not new and not critical:
            continue
        found.append(_gpu_finding(
            ctx, "gpu_xid", Severity.CRITICAL if critical else Severity.WARNING, node, gpu,
            {"xid_last": last, "xid_count": reading.value, "xid_count_in_window": new},
            "Read the XID in `dmesg`/`nvidia-smi -q`; a critical XID (ECC, fallen off the bus) needs the "
            "node drained and the GPU reset or replaced before the next job lands on it."))
    return found


def _thermal(ctx: Context) -> list[Finding]:
    found = []
    for (node, gpu, _), reading in sorted(ctx.each("gpu_temp_c").items()):
        reasons = int(ctx.value(node, "gpu_throttle_reasons", gpu) or 0)
        heat = reasons & ctx.t.gpu_thermal_throttle_mask
        if reading.value < ctx.t.gpu_temp_warn_c and not heat:
            continue
        found.append(_gpu_finding(
            ctx, "gpu_thermal", Severity.CRITICAL if heat else Severity.WARNING, node, gpu,
            {"gpu_temp_c": reading.value, "gpu_temp_warn_c": ctx.t.gpu_temp_warn_c,
             "throttle_reasons_hex": hex(reasons), "sm_clock_mhz": ctx.value(node, "gpu_sm_clock_mhz", gpu)},
            "Check the node's fans, inlet temperature and airflow (blanking panels, a failed PSU fan); "
            "the job runs at this GPU's throttled pace until it cools."))
    return found


def _qp(ctx: Context) -> list[Finding]:
    found = []
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in ctx.flagged_nics:
            continue
        qps = ctx.value(node, "qp_count", nic, "")
        errors = sum(ctx.delta(node, m, nic, port) or 0.0 for m in QP_ERROR_COUNTERS)
        if (qps is None or qps < ctx.t.qp_count_warn) and errors < ctx.t.qp_error_events_in_window:
            continue
        found.append(ctx.nic_finding(
            "qp_errors", Severity.WARNING, node, nic,
            {"qp_count": qps, "qp_count_warn": ctx.t.qp_count_warn, "qp_error_completions_in_window": errors,
             "out_of_buffer_in_window": ctx.delta(node, "out_of_buffer", nic, port)},
            "List the QPs (`rdma res show qp`) and their owners: leaked QPs of dead ranks hold resources "
            "until the process exits; for jitter at small sizes raise max_qp_wr and pre-register buffers."))
    return found
