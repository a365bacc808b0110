"""GPUs and queue pairs: gpu_xid, gpu_thermal, qp_errors, rnr_backpressure.

XIDs are the driver's own error reports, judged by NVIDIA's XID catalog
(``fleet.fabric.xid``): an XID that asks for a GPU reset or a reboot is a state
that holds until someone acts; the others are events of the window. A GPU too
hot throttles its clocks and the whole job steps at its pace. Queue pairs
(latency jitter from too few QP resources is a fault operators report often;
docs/domain.md, "What operators report"): leaked QPs of dead ranks and error
completions are ``qp_errors``; RNR NAKs (the responder had no receive buffer posted, retries
remain) are back-pressure, not errors: ``rnr_backpressure``. ``out_of_buffer``
(a receive queue ran dry) is kept as evidence only: it rises on a healthy node
whenever an application posts receives late, and alone names no fault.
"""

from __future__ import annotations

from fleet.fabric.events import Finding, Severity
from fleet.fabric.rules.context import Context, rounded
from fleet.fabric.xid import CATALOG_URL, describe

QP_ERROR_COUNTERS = ("req_cqe_error", "resp_cqe_error")
"""Error completions: a work request failed (the retries-exceeded errors among them)."""


def rules(ctx: Context) -> list[Finding]:
    qp = _qp(ctx)
    ctx.flagged_nics |= {(f.node, f.nic) for f in qp}  # leaked QPs explain the RNR NAKs their NIC sees
    return _xid(ctx) + _thermal(ctx) + qp + _rnr(ctx)


def _gpu_finding(ctx: Context, kind: str, severity: Severity, node: str, gpu: str, evidence: dict[str, object],
                 next_step: str, basis: str = "window") -> Finding:
    return Finding(kind, severity, node=node, job=ctx.job_of.get(node, ""),
                   evidence={"gpu": gpu, **evidence}, next_step=next_step, basis=basis)


_STEPS = {
    "RESTART_APP": "Restart the application that hit it; if it recurs on this GPU with other jobs, run `dcgmi diag`.",
    "IGNORE": "No action now; trend it (`nvidia-smi -q -d ROW_REMAPPER,ECC`) and reset the GPU at the next drain.",
    "RESET_GPU": "Drain the node, then reset the GPU (`nvidia-smi -r -i <gpu>`); if it recurs, run `dcgmi diag -r 3` "
                 "and replace the GPU.",
    "RESTART_BM": "Drain the node and reboot it; if the GPU does not come back on the bus, replace it.",
    "RECOVERY_ACTION": "Do what the driver asks (`nvidia-smi -q`, GPU Recovery Action): reset the GPU or reboot "
                       "the node after draining it.",
    "CONTACT_SUPPORT": "Look the XID up in NVIDIA's catalog and collect `nvidia-bug-report.sh` before resetting.",
}


def _xid(ctx: Context) -> list[Finding]:
    found = []
    for (node, gpu, _), reading in sorted(ctx.each("gpu_xid_count").items()):
        last = int(ctx.value(node, "gpu_xid_last", gpu) or 0)
        new = ctx.delta(node, "gpu_xid_count", gpu) or 0.0
        xid = describe(last)
        standing = last != 0 and xid.needs_reset
        if not new and not standing:
            continue
        severity = Severity.CRITICAL if (xid.data_loss or xid.needs_reset) else Severity.WARNING
        found.append(_gpu_finding(
            ctx, "gpu_xid", severity, node, gpu,
            {"xid_last": last, "xid_meaning": xid.meaning, "xid_action": xid.action.value,
             "xid_data_loss": xid.data_loss, "xid_count": reading.value, "xid_count_in_window": new,
             "xid_catalog": CATALOG_URL},
            _STEPS[xid.action.value], basis="state" if standing else "window"))
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
            "the job runs at this GPU's throttled pace until it cools.", basis="state"))
    return found


def qp_alarm(ctx: Context, node: str) -> tuple[float, int]:
    """(QPs per device above which a node holds more than its jobs need, the size of its largest job).

    An all-to-all (expert-parallel) job connects every rank to every remote rank; each connection has a
    send and a receive side, ``NCCL_NCHANNELS_PER_NET_PEER`` channels and ``NCCL_IB_QPS_PER_CONNECTION``
    QPs. With one GPU per NIC (the rail layout) that is ``2 x (nodes - 1) x channels x QPs`` per NIC.
    """
    t = ctx.t
    nodes = max((len(job.nodes) for job in ctx.data.jobs if node in job.nodes), default=0)
    need = 2.0 * max(0, nodes - 1) * t.nccl_channels_per_net_peer * t.nccl_ib_qps_per_connection
    return t.qp_floor_per_device + t.qp_headroom * need, nodes


def _qp(ctx: Context) -> list[Finding]:
    found = []
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in ctx.flagged_nics:
            continue
        qps = ctx.value(node, "qp_count", nic, "")
        alarm, job_nodes = qp_alarm(ctx, node)
        errors = sum(ctx.delta(node, m, nic, port) or 0.0 for m in QP_ERROR_COUNTERS)
        if (qps is None or qps < alarm) and errors < ctx.t.qp_error_events_in_window:
            continue
        found.append(ctx.nic_finding(
            "qp_errors", Severity.WARNING, node, nic,
            {"qp_count": qps, "qp_alarm": alarm, "largest_job_nodes": job_nodes,
             "nccl_ib_qps_per_connection": ctx.t.nccl_ib_qps_per_connection,
             "error_completions_in_window": errors,
             "rnr_naks_in_window": ctx.delta(node, "rnr_nak_retry_err", nic, port),
             "out_of_buffer_in_window": ctx.delta(node, "out_of_buffer", nic, port)},
            "List the QPs (`rdma res show qp`) and their owners: leaked QPs of dead ranks hold resources "
            "until the process exits; error completions name the failing peer in the job's NCCL log.",
            basis="state" if errors < ctx.t.qp_error_events_in_window else "window"))
    return found


def _rnr(ctx: Context) -> list[Finding]:
    """RNR NAKs received per second, over the window or its newest part."""
    found = []
    for node, nic, port in ctx.nic_ports():
        if (node, nic) in ctx.flagged_nics:
            continue
        rates = [ctx.rate(node, "rnr_nak_retry_err", nic, port, recent=r) for r in ctx.spans]
        per_s = max((r for r in rates if r is not None), default=None)
        if per_s is None or per_s < ctx.t.rnr_naks_per_s:
            continue
        found.append(ctx.nic_finding(
            "rnr_backpressure", Severity.WARNING, node, nic,
            {"rnr_naks_per_s": rounded(per_s), "rnr_naks_per_s_warn": ctx.t.rnr_naks_per_s,
             "rnr_naks_in_window": ctx.delta(node, "rnr_nak_retry_err", nic, port),
             "out_of_buffer_in_window": ctx.delta(node, "out_of_buffer", nic, port),
             "qp_count": ctx.value(node, "qp_count", nic, "")},
            "Receivers run out of posted buffers (RNR NAKs): the senders stall for the RNR timer, the latency "
            "jitter of too few QP resources. Raise the receive queue depth (`max_qp_wr`), pre-post and "
            "pre-register communication buffers, and check the QPs for leaks (`rdma res show qp`)."))
    return found
